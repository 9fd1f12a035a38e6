package headermutation

import (
	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Add, update or delete upstream request headers.",
	Operations: []sdk.Operation{
		{Name: "edit_headers", Kind: "mutation", Description: "add, set and remove upstream request headers"},
		{Name: "preview", Kind: "preview", Description: "show the header changes for a candidate configuration (values need secret_view)"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// OnRequest edits the headers.
func (c *Config) OnRequest(_ *sdk.Request, res *sdk.Result) error {
	for _, op := range c.ops {
		switch op.Kind {
		case Add:
			res.AddHeader(op.Name, op.Value)
		case Set:
			res.SetHeader(op.Name, op.Value)
		case Remove:
			res.RemoveHeader(op.Name)
		}
	}
	res.Detail(c.detail)
	return nil
}
