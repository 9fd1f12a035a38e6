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

// Register declares a built-in plugin to the SDK: its descriptor and the
// parser of its configuration (which returns the plugin).
func Register[P sdk.Plugin](d sdk.Descriptor, parse func(config []byte) (P, error)) {
	sdk.Register(d, func(config []byte) (sdk.Plugin, error) {
		p, err := parse(config)
		if err != nil {
			return nil, err // not a typed nil inside a non-nil interface
		}
		return p, nil
	})
}

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

// TuneGC makes the guest's garbage collector run less often: a Go guest
// starts with a 4 MiB heap target and collects often, and a collection costs
// a wasm guest far more than a native process. Plugins keep little alive
// between calls, so a larger target (percent, as GOGC) costs memory only up
// to about 4 MiB × percent/100, within the host's default 32 MiB instance
// limit at the default. Call it from the guest's init.
func TuneGC(percent int) { debug.SetGCPercent(percent) }

// DefaultGCPercent is the built-in guests' GOGC.
const DefaultGCPercent = 400
