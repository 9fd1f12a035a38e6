package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/dataplane"
)

// piiFixture is the personal data routing detected in a plugin case's
// request (the "pii" member of a fixture, or --pii): spans given as routing
// finds them (message index, byte offsets into the message's text with text
// parts joined by newlines), or "detect": true to run the router's detector
// over the user messages (every type, threshold 0.5).
type piiFixture struct {
	Detect    bool       `json:"detect"`
	Spans     []piiSpanJ `json:"spans"`
	Unscanned bool       `json:"unscanned"`
	Truncated bool       `json:"truncated"`
}

type piiSpanJ struct {
	Message int     `json:"message"`
	Start   int     `json:"start"`
	End     int     `json:"end"`
	Type    string  `json:"type"`
	Score   float64 `json:"score"`
}

// parsePIIFlag reads --pii: "detect", JSON, or @FILE holding JSON.
func parsePIIFlag(v string) (*piiFixture, error) {
	if v == "" {
		return nil, nil
	}
	if v == "detect" {
		return &piiFixture{Detect: true}, nil
	}
	raw, err := jsonArg("pii", v)
	if err != nil {
		return nil, err
	}
	var f piiFixture
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf(`--pii: %w (want "detect" or {"spans":[{"message","start","end","type","score"}]})`, err)
	}
	return &f, nil
}

// locate places the fixture's spans in c the way the router does.
func (f *piiFixture) locate(ctx context.Context, c *chat.Request) (*abi.PIISpans, error) {
	if f == nil {
		return nil, nil
	}
	if f.Detect && len(f.Spans) > 0 {
		return nil, errors.New(`pii: give "spans" or "detect", not both`)
	}
	spans := make([]signal.PIISpan, len(f.Spans))
	for i, s := range f.Spans {
		t, err := signal.NormalizePIIType(s.Type)
		if err != nil || t == "ALL" {
			return nil, fmt.Errorf("pii: spans[%d].type %q: want one of %s", i, s.Type, strings.Join(signal.PIITypes(), ", "))
		}
		spans[i] = signal.PIISpan{Message: s.Message, Start: s.Start, End: s.End, Type: t, Score: s.Score}
	}
	pii, err := dataplane.StandInPII(ctx, c, spans, f.Detect, f.Unscanned, f.Truncated)
	if err != nil {
		return nil, fmt.Errorf("pii: %w", err)
	}
	return pii, nil
}
