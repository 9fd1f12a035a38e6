package fastresponse

import (
	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Answer at once with a fixed assistant message; no backend is called.",
	Operations: []sdk.Operation{
		{Name: "respond", Kind: "mutation", Description: "answer the request (chat.completion or chunk events)"},
		{Name: "preview", Kind: "preview", Description: "show the answer for a candidate configuration"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// OnRequest answers the request.
func (c *Config) OnRequest(_ *sdk.Request, res *sdk.Result) error {
	res.Respond(200, c.Message)
	res.Detail(Detail)
	return nil
}
