package plugintest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/internal/plugin"
)

// PII is the personal data routing detected in a fixture's request, which the
// plugin reads with sdk.Request.PIISpans (the pii_spans host function). A
// fixture without one is a request no pii signal scanned.
type PII struct {
	// Spans are given the way routing finds them: Message indexes the
	// body's messages, Start and End are byte offsets into that message's
	// text as routing flattens it (text parts joined by newlines). The
	// harness places them in string contents or text parts as the router
	// does.
	Spans []plugin.TextSpan
	// Detect runs the router's own pii detector over the body's user
	// messages instead of Spans: every type, threshold 0.5 (a pii signal
	// {types: [ALL], threshold: 0.5}).
	Detect bool
	// Unscanned and Truncated set the record's flags: part of the user text
	// was not scanned; more spans were detected than were sent.
	Unscanned, Truncated bool
}

// locate turns pii into the record the plugin reads.
func (pii *PII) locate(c *chat.Request) (*abi.PIISpans, error) {
	if pii == nil {
		return nil, nil
	}
	if pii.Detect && len(pii.Spans) > 0 {
		return nil, errors.New("fixture PII: give Spans or Detect, not both")
	}
	spans := append([]plugin.TextSpan(nil), pii.Spans...)
	return plugin.StandInPII(context.Background(), c, spans, pii.Detect, pii.Unscanned, pii.Truncated)
}

// PIIFixture is the personal data routing detected in a plugin case's
// request (the "pii" member of a fixture, or --pii): spans given as routing
// finds them (message index, byte offsets into the message's text with text
// parts joined by newlines), or "detect": true to run the router's detector
// over the user messages (every type, threshold 0.5).
type PIIFixture struct {
	Detect    bool          `json:"detect"`
	Spans     []PIISpanJSON `json:"spans"`
	Unscanned bool          `json:"unscanned"`
	Truncated bool          `json:"truncated"`
}

// PIISpanJSON is one span of a PIIFixture.
type PIISpanJSON struct {
	Message int     `json:"message"`
	Start   int     `json:"start"`
	End     int     `json:"end"`
	Type    string  `json:"type"`
	Score   float64 `json:"score"`
}

// Locate places the fixture's spans in c the way the router does.
func (f *PIIFixture) Locate(ctx context.Context, c *chat.Request) (*abi.PIISpans, error) {
	if f == nil {
		return nil, nil
	}
	if f.Detect && len(f.Spans) > 0 {
		return nil, errors.New(`pii: give "spans" or "detect", not both`)
	}
	spans := make([]plugin.TextSpan, len(f.Spans))
	for i, s := range f.Spans {
		t, err := pii.Normalize(s.Type)
		if err != nil || t == "ALL" {
			return nil, fmt.Errorf("pii: spans[%d].type %q: want one of %s", i, s.Type, strings.Join(pii.Types(), ", "))
		}
		spans[i] = plugin.TextSpan{Message: s.Message, Start: s.Start, End: s.End, Type: t, Score: s.Score}
	}
	located, err := plugin.StandInPII(ctx, c, spans, f.Detect, f.Unscanned, f.Truncated)
	if err != nil {
		return nil, fmt.Errorf("pii: %w", err)
	}
	return located, nil
}
