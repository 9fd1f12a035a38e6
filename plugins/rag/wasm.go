package rag

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// SuppliedField is the top-level request field a preview puts its
// supplied_context in. The plugin reads it only in preview mode, and removes
// it from the body in every mode so that it never reaches a backend.
const SuppliedField = "supplied_context"

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Retrieve passages from a vector store or knowledge base and inject them as a system message or a tool result.",
	Operations: []sdk.Operation{
		{Name: "inject_supplied_context", Kind: "preview", Description: "inject the preview's supplied_context; nothing is retrieved"},
		{Name: "retrieve", Kind: "probe", Description: "retrieve passages for the last user message from the configured store or knowledge base (no result cache)"},
		{Name: "inject_context", Kind: "mutation", Description: "insert the passages as a system message or a tool call and result"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// OnRequest retrieves and injects context.
func (c *Config) OnRequest(req *sdk.Request, res *sdk.Result) error {
	msgs, err := guest.Messages(req)
	if err != nil {
		return err
	}
	supplied, hasSupplied := req.Field(SuppliedField)
	if hasSupplied {
		res.RemoveField(SuppliedField)
	}
	if req.Mode() == sdk.ModePreview {
		if !hasSupplied {
			res.Skip("preview: no supplied_context was given, and a preview retrieves nothing; in probe or live mode the plugin would retrieve from " + strconv.Quote(c.Store))
			return nil
		}
		passages, err := ParseSupplied(supplied)
		if err != nil {
			return err
		}
		return c.report(res, c.InjectSupplied(msgs, passages))
	}
	query := Query(msgs)
	if query == "" {
		res.Skip("no user message to retrieve context for")
		return nil
	}
	passages, retrievalErr := c.retrieve(query)
	return c.report(res, c.Inject(msgs, passages, retrievalErr))
}

// report turns the logic's result into the SDK's.
func (c *Config) report(res *sdk.Result, r *Result) error {
	switch {
	case r.Block != "":
		res.Respond(503, r.Block)
		res.Detail(r.Detail)
		return nil
	case r.Skipped:
		res.Skip(r.Detail)
		return nil
	case r.Warning != "":
		sdk.Log(sdk.LevelWarn, "rag: "+r.Warning)
		res.Value("warning", r.Warning)
	}
	guest.Emit(res, r.Edits)
	res.Value("passages", strconv.Itoa(r.Injected))
	res.Value("context_chars", strconv.Itoa(r.Chars))
	if r.Injected > 0 {
		sources, _ := json.Marshal(r.Sources) // strings always encode
		res.Value("sources", string(sources))
		scores := make([]string, len(r.Scores))
		for i, s := range r.Scores {
			scores[i] = strconv.FormatFloat(s, 'f', 3, 64)
		}
		res.Value("scores", "["+strings.Join(scores, ",")+"]")
	}
	res.Detail(r.Detail)
	return nil
}

func (c *Config) retrieve(query string) ([]Passage, error) {
	hits, err := sdk.Retrieve(c.RetrieveArgs(query))
	switch {
	case errors.Is(err, sdk.ErrUnavailable):
		return nil, errors.New("no vector store or knowledge base of that name or id, or the router keeps no stored data (" + err.Error() + ")")
	case errors.Is(err, sdk.ErrInvalid):
		return nil, errors.New("the store refused the query's filters or top_k (" + err.Error() + ")")
	case err != nil:
		return nil, err
	}
	return Passages(hits), nil
}
