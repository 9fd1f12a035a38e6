// Command piiredact is a third-party Junction plugin: when the router's
// personal-data signal matched, it masks the spans the router detected in the
// messages before they go upstream ("mail me at [EMAIL]"). The report counts
// the spans masked per type, never their text.
//
// It does no detection of its own: the router's pii signals found the spans
// (validated patterns, phone numbering plans, checksums) and the plugin reads
// them with sdk.Request.PIISpans (the pii_spans host function, ABI revision
// 1). What the router did not detect is not masked. It runs only when the
// router found personal data, so it costs nothing on clean traffic.
package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/junction-router/junction/sdk"
)

//go:embed schema.json
var schema []byte

type config struct {
	// Signals are the pii signal names that trigger masking; empty: any.
	Signals []string `json:"signals"`
	// Types are the entity types masked; empty: every type the router
	// reports.
	Types []string `json:"types"`
	// MinScore leaves spans the router scored lower unmasked.
	MinScore float32 `json:"min_score"`
	// Mask replaces a span; {type} becomes its type. Default "[{type}]".
	Mask string `json:"mask"`
	// OnIncomplete is what to do when the router says its spans are not
	// everything (part of the text unscanned, or more spans than it sends):
	// "fail" (default; the reference's on_error decides) or "mask" (mask
	// what was given and send the rest).
	OnIncomplete string `json:"on_incomplete"`
}

var knownTypes = []string{"EMAIL", "PHONE", "CREDIT_CARD", "SSN", "IP_ADDRESS", "IBAN", "PERSON", "LOCATION"}

type plugin struct{ cfg config }

func (p *plugin) triggered(req *sdk.Request) bool {
	for _, s := range req.Signals() {
		if s.Kind == "pii" && (len(p.cfg.Signals) == 0 || slices.Contains(p.cfg.Signals, s.Name)) {
			return true
		}
	}
	return false
}

// OnRequest masks the spans the router detected.
func (p *plugin) OnRequest(req *sdk.Request, res *sdk.Result) error {
	if !p.triggered(req) {
		res.Skip("the router detected no personal data")
		return nil
	}
	spans, err := req.PIISpans()
	switch {
	case errors.Is(err, sdk.ErrNotScanned):
		return errors.New("a pii signal matched but the router gave no personal-data spans, so nothing can be masked")
	case errors.Is(err, sdk.ErrPIIIncomplete):
		if p.cfg.OnIncomplete != "mask" {
			return fmt.Errorf("%v: refusing to send the request (on_incomplete: fail)", err)
		}
		res.Value("incomplete", "true")
	case err != nil:
		return err
	}
	byMessage := map[int][]sdk.PIISpan{}
	for _, s := range spans {
		if s.Score < p.cfg.MinScore || (len(p.cfg.Types) > 0 && !slices.Contains(p.cfg.Types, s.Type)) {
			continue
		}
		byMessage[s.Message] = append(byMessage[s.Message], s)
	}
	counts := map[string]int{}
	indexes := make([]int, 0, len(byMessage))
	for i := range byMessage {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	for _, i := range indexes {
		raw, ok := req.MessageJSON(i)
		if !ok {
			return fmt.Errorf("the router reported personal data in messages[%d], which the request does not have", i)
		}
		masked, err := p.maskMessage(raw, byMessage[i], counts)
		if err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
		res.ReplaceMessage(i, masked)
	}
	if len(counts) == 0 {
		res.Skip("the router detected personal data, but none of the configured types")
		return nil
	}
	types := make([]string, 0, len(counts))
	for t, n := range counts {
		types = append(types, fmt.Sprintf("%s=%d", t, n))
		res.Value("masked."+t, fmt.Sprint(n))
	}
	sort.Strings(types)
	res.Detail("masked " + strings.Join(types, ", "))
	return nil
}

// maskMessage masks the spans of one message in its string content or in
// its text parts, keeping every other member as it was.
func (p *plugin) maskMessage(raw []byte, spans []sdk.PIISpan, counts map[string]int) ([]byte, error) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msg); err != nil {
		return nil, err
	}
	var text string
	if json.Unmarshal(msg["content"], &text) == nil {
		out, err := p.mask(text, spans, -1, counts)
		if err != nil {
			return nil, err
		}
		msg["content"] = marshal(out)
		return marshal(msg), nil
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(msg["content"], &parts); err != nil {
		return nil, errors.New("the content is neither a string nor an array of parts")
	}
	for k, part := range parts {
		var s string
		if json.Unmarshal(part["text"], &s) != nil {
			continue
		}
		out, err := p.mask(s, spans, k, counts)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", k, err)
		}
		part["text"] = marshal(out)
	}
	msg["content"] = marshal(parts)
	return marshal(msg), nil
}

// mask replaces the spans of part (-1: string content) in s, last first so
// that earlier offsets stay valid.
func (p *plugin) mask(s string, spans []sdk.PIISpan, part int, counts map[string]int) (string, error) {
	for k := len(spans) - 1; k >= 0; k-- {
		sp := spans[k]
		if sp.Part != part {
			continue
		}
		if sp.Start < 0 || sp.Start >= sp.End || sp.End > len(s) || !boundary(s, sp.Start) || !boundary(s, sp.End) {
			return "", fmt.Errorf("the router's span [%d,%d) does not fit the text (%d bytes)", sp.Start, sp.End, len(s))
		}
		s = s[:sp.Start] + strings.ReplaceAll(p.cfg.Mask, "{type}", sp.Type) + s[sp.End:]
		counts[sp.Type]++
	}
	return s, nil
}

func boundary(s string, i int) bool { return i == len(s) || utf8.RuneStart(s[i]) }

// marshal encodes v (maps with their keys sorted).
func marshal(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func init() {
	// A Go guest starts with a 4 MiB heap target and collects often, which
	// costs a wasm guest far more than a native process; the plugin keeps
	// nothing alive between calls, so a larger target costs little memory.
	debug.SetGCPercent(400)
	sdk.Register(sdk.Descriptor{
		Type:        "pii_redact",
		Version:     "0.2.0",
		Description: "Mask the personal data the router detected before the request goes upstream.",
		Schema:      schema,
		Operations: []sdk.Operation{
			{Name: "mask", Kind: "mutation", Description: "replace the spans the router's pii signals detected with a mask"},
			{Name: "preview", Kind: "preview", Description: "show the masked messages; no backend involved"},
		},
	}, func(raw []byte) (sdk.Plugin, error) {
		c := config{Mask: "[{type}]", OnIncomplete: "fail"}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, err
		}
		for _, t := range c.Types {
			if !slices.Contains(knownTypes, t) {
				return nil, fmt.Errorf("types: %q is not one of %s", t, strings.Join(knownTypes, ", "))
			}
		}
		if c.Mask == "" {
			return nil, errors.New("mask must not be empty")
		}
		if c.OnIncomplete != "fail" && c.OnIncomplete != "mask" {
			return nil, fmt.Errorf("on_incomplete: %q is not fail or mask", c.OnIncomplete)
		}
		return &plugin{cfg: c}, nil
	})
}

// A reactor's main never runs; the host calls the exported handlers.
func main() {}
