package rag

import (
	"encoding/json"
	"strconv"

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
	Description: "Retrieve passages from a vector store and inject them as a system message or a tool result.",
	Operations: []sdk.Operation{
		{Name: "inject_supplied_context", Kind: "preview", Description: "inject the preview's supplied_context; nothing is searched"},
		{Name: "retrieve", Kind: "probe", Description: "embed the last user message and search the configured store (no result cache)"},
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
	var passages []Passage
	var retrievalErr error
	if req.Mode() == sdk.ModePreview {
		if !hasSupplied {
			res.Skip("preview: no supplied_context was given, and a preview searches nothing; in probe or live mode the plugin would search " + strconv.Quote(c.Store))
			return nil
		}
		if passages, err = ParseSupplied(supplied); err != nil {
			return err
		}
	} else {
		query := Query(msgs)
		if query == "" {
			res.Skip("no user message to retrieve context for")
			return nil
		}
		passages, retrievalErr = c.retrieve(query)
	}
	r := c.Inject(msgs, passages, retrievalErr)
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
	res.Detail(r.Detail)
	return nil
}

func (c *Config) retrieve(query string) ([]Passage, error) {
	vec, err := sdk.Embed(query)
	if err != nil {
		return nil, err
	}
	hits, err := sdk.VectorSearch(c.Store, vec, c.TopK)
	if err != nil {
		return nil, err
	}
	out := make([]Passage, 0, len(hits))
	for _, h := range hits {
		p := Passage{Text: string(h.Payload), Source: h.ID, Score: float64(h.Score)}
		// A payload may be a stored document {text, source}; otherwise it is the text.
		var doc Passage
		if len(h.Payload) > 0 && h.Payload[0] == '{' && json.Unmarshal(h.Payload, &doc) == nil && doc.Text != "" {
			p.Text = doc.Text
			if doc.Source != "" {
				p.Source = doc.Source
			}
		}
		out = append(out, p)
	}
	return out, nil
}
