package requestparams

import (
	"encoding/json"
	"fmt"

	"github.com/junction-router/junction/plugins/internal/guest"

	"github.com/junction-router/junction/sdk"
	"github.com/junction-router/junction/sdk/jsonscan"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Remove blocked parameters, cap max_tokens and n, strip non-OpenAI fields.",
	Operations: []sdk.Operation{
		{Name: "police_params", Kind: "mutation", Description: "remove, lower and strip top-level request parameters"},
		{Name: "preview", Kind: "preview", Description: "show the parameter changes for a candidate configuration"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// OnRequest polices the body's parameters.
func (c *Config) OnRequest(req *sdk.Request, res *sdk.Result) error {
	ms, err := jsonscan.Members(req.Body())
	if err != nil {
		return fmt.Errorf("the request body is not a JSON object: %v", err)
	}
	fields := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		fields[m.Name] = m.Value
	}
	r, err := c.Run(fields)
	if err != nil {
		return err
	}
	for _, name := range r.Remove {
		res.RemoveField(name)
	}
	for _, s := range r.Set {
		res.SetField(s.Name, s.Value)
	}
	res.Detail(r.Detail)
	return nil
}
