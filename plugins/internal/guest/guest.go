// Package guest joins the built-in plugins' logic to the SDK: it reads the
// request's messages in the shape the logic works on, and turns the logic's
// message edits and report figures into SDK mutations. It holds no plugin
// behaviour of its own.
package guest

import (
	"runtime/debug"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/sdk"
)

// Messages parses the body's messages array.
func Messages(req *sdk.Request) ([]chatmsg.Message, error) {
	raw, _ := req.Field("messages")
	return chatmsg.Parse(raw)
}

// Emit adds edits to res, in order.
func Emit(res *sdk.Result, edits []chatmsg.Edit) {
	for _, e := range edits {
		switch e.Kind {
		case chatmsg.Insert:
			res.InsertMessageJSON(e.Index, e.Raw)
		case chatmsg.Replace:
			res.ReplaceMessage(e.Index, e.Raw)
		case chatmsg.Remove:
			res.RemoveMessage(e.Index)
		}
	}
}

// ModeName is "live", "probe" or "preview".
func ModeName(m sdk.Mode) string { return m.String() }

// TuneGC sets the guest's garbage collector for short handler calls: no
// proportional collection, only when the heap nears limit bytes. A Go guest
// collects often with its small default heap target, and a collection costs
// a wasm guest hundreds of microseconds; plugins allocate little that
// outlives a call, so a bounded heap collected rarely is both faster and
// safe. Call it from the guest's init.
func TuneGC(limit int64) {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(limit)
}

// DefaultHeapLimit is the heap a built-in guest lets grow before it
// collects; well under the host's default instance memory (32 MiB).
const DefaultHeapLimit = 12 << 20
