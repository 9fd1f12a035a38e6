package contextcompression

import (
	"errors"

	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Keep the messages within a token budget: shorten older tool outputs, drop the oldest turns; system messages and the newest turns stay.",
	Operations: []sdk.Operation{
		{Name: "plan_budget", Kind: "preview", Description: "report retained messages, tokens and budget without a backend"},
		{Name: "compress", Kind: "mutation", Description: "shorten older tool outputs and remove older turns"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// count uses the host's tokenizer, and the estimate when the host has none.
func count(s string) (int, error) {
	n, err := sdk.TokenCount(s)
	if errors.Is(err, sdk.ErrUnavailable) {
		return EstimateTokens(s)
	}
	return n, err
}

// OnRequest compresses the conversation.
func (c *Config) OnRequest(req *sdk.Request, res *sdk.Result) error {
	msgs, err := guest.Messages(req)
	if err != nil {
		return err
	}
	edits, rep, err := c.Compress(msgs, count)
	if err != nil {
		return err
	}
	for _, kv := range rep.Values() {
		res.Value(kv[0], kv[1])
	}
	if len(edits) == 0 {
		res.Skip(rep.Detail())
		return nil
	}
	guest.Emit(res, edits)
	res.Detail(rep.Detail())
	return nil
}
