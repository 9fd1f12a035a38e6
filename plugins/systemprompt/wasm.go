package systemprompt

import (
	"errors"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Give the request a system prompt (insert before the existing system text, or replace it).",
	Operations: []sdk.Operation{
		{Name: "set_system_prompt", Kind: "mutation", Description: "insert or replace the first system message's content"},
		{Name: "preview", Kind: "preview", Description: "show the message change for a candidate configuration; no backend involved"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// OnRequest runs the plugin on one request.
func (c *Config) OnRequest(req *sdk.Request, res *sdk.Result) error {
	// Only the first message matters: take its role and text from the
	// request record and its JSON from the body, without parsing the rest.
	var first []chatmsg.Message
	if msgs := req.Messages(); len(msgs) > 0 {
		raw, ok := req.MessageJSON(0)
		if !ok {
			return errors.New("messages[0] is missing from the body")
		}
		first = []chatmsg.Message{{Raw: raw, Role: msgs[0].Role, Text: msgs[0].Content}}
	}
	r, err := c.Run(first)
	if err != nil {
		return err
	}
	if r.Skipped {
		res.Skip(r.Detail)
		return nil
	}
	guest.Emit(res, r.Edits)
	res.Detail(r.Detail)
	return nil
}
