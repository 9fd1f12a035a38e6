// Command piiredact is a third-party Junction plugin: when the router's
// personal-data signal matched, it masks the personal data in the messages
// before they go upstream ("mail me at [EMAIL]"). The report counts the spans
// masked per type, never their text.
//
// The plugin ABI tells a plugin which signals matched, not where their spans
// are, so the plugin finds the spans again with the same kinds of patterns the
// router's regex detector uses (e-mail addresses, phone numbers, card numbers
// that pass the Luhn check, US social security numbers). It runs only when
// the router found personal data, so it costs nothing on clean traffic.
package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/junction-router/junction/sdk"
)

//go:embed schema.json
var schema []byte

type config struct {
	// Signals are the pii signal names that trigger masking; empty: any.
	Signals []string `json:"signals"`
	// Types are the kinds of data masked (default all four).
	Types []string `json:"types"`
	// Mask replaces a span; {type} becomes its type. Default "[{type}]".
	Mask string `json:"mask"`
	// Roles are the message roles masked (default user).
	Roles []string `json:"roles"`
}

var patterns = map[string]*regexp.Regexp{
	"EMAIL":       regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`),
	"PHONE":       regexp.MustCompile(`(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)|\d{2,4})[ .-]?\d{3,4}[ .-]?\d{3,4}`),
	"CREDIT_CARD": regexp.MustCompile(`\b(?:\d[ -]?){12,18}\d\b`),
	"SSN":         regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`),
}

// order masks the most specific kinds first, so a card number is not taken
// for a phone number.
var order = []string{"EMAIL", "CREDIT_CARD", "SSN", "PHONE"}

type plugin struct{ cfg config }

func (p *plugin) triggered(req *sdk.Request) bool {
	for _, s := range req.Signals() {
		if s.Kind == "pii" && (len(p.cfg.Signals) == 0 || slices.Contains(p.cfg.Signals, s.Name)) {
			return true
		}
	}
	return false
}

// OnRequest masks the messages when the router detected personal data.
func (p *plugin) OnRequest(req *sdk.Request, res *sdk.Result) error {
	if !p.triggered(req) {
		res.Skip("the router detected no personal data")
		return nil
	}
	counts := map[string]int{}
	for i, m := range req.Messages() {
		if !slices.Contains(p.cfg.Roles, m.Role) {
			continue
		}
		raw, ok := req.MessageJSON(i)
		if !ok {
			return fmt.Errorf("messages[%d] is missing from the body", i)
		}
		masked, changed, err := p.maskMessage(raw, counts)
		if err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
		if changed {
			res.ReplaceMessage(i, masked)
		}
	}
	if len(counts) == 0 {
		res.Skip("the router detected personal data, but none of the configured types was found in the messages")
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

// maskMessage masks a message's string content or its text parts.
func (p *plugin) maskMessage(raw []byte, counts map[string]int) ([]byte, bool, error) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msg); err != nil {
		return nil, false, err
	}
	var text string
	if json.Unmarshal(msg["content"], &text) == nil {
		out := p.mask(text, counts)
		if out == text {
			return nil, false, nil
		}
		msg["content"], _ = json.Marshal(out)
		b, err := json.Marshal(msg)
		return b, true, err
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(msg["content"], &parts); err != nil {
		return nil, false, nil // no text to mask
	}
	changed := false
	for _, part := range parts {
		var s string
		if json.Unmarshal(part["text"], &s) != nil {
			continue
		}
		if out := p.mask(s, counts); out != s {
			part["text"], _ = json.Marshal(out)
			changed = true
		}
	}
	if !changed {
		return nil, false, nil
	}
	msg["content"], _ = json.Marshal(parts)
	b, err := json.Marshal(msg)
	return b, true, err
}

func (p *plugin) mask(s string, counts map[string]int) string {
	for _, typ := range order {
		if !slices.Contains(p.cfg.Types, typ) {
			continue
		}
		s = patterns[typ].ReplaceAllStringFunc(s, func(span string) string {
			if typ == "CREDIT_CARD" && !luhn(span) {
				return span
			}
			counts[typ]++
			return strings.ReplaceAll(p.cfg.Mask, "{type}", typ)
		})
	}
	return s
}

// luhn reports whether the digits of s pass the Luhn checksum.
func luhn(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if n%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n >= 13 && sum%10 == 0
}

func init() {
	sdk.Register(sdk.Descriptor{
		Type:        "pii_redact",
		Version:     "0.1.0",
		Description: "Mask the personal data the router detected before the request goes upstream.",
		Schema:      schema,
		Operations: []sdk.Operation{
			{Name: "mask", Kind: "mutation", Description: "replace e-mail addresses, phone, card and social security numbers with a mask"},
			{Name: "preview", Kind: "preview", Description: "show the masked messages; no backend involved"},
		},
	}, func(raw []byte) (sdk.Plugin, error) {
		c := config{Mask: "[{type}]", Roles: []string{"user"}, Types: order}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, err
		}
		for _, t := range c.Types {
			if patterns[t] == nil {
				return nil, fmt.Errorf("types: %q is not one of EMAIL, PHONE, CREDIT_CARD, SSN", t)
			}
		}
		if c.Mask == "" {
			return nil, errors.New("mask must not be empty")
		}
		return &plugin{cfg: c}, nil
	})
}

// A reactor's main never runs; the host calls the exported handlers.
func main() {}
