// Package guest joins the built-in plugins' logic to the SDK: it reads the
// request's messages in the shape the logic works on, and turns the logic's
// message edits and report figures into SDK mutations. It holds no plugin
// behaviour of its own.
package guest

import (
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
