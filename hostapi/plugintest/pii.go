package plugintest

import (
	"context"
	"errors"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/dataplane"
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
	spans := make([]signal.PIISpan, len(pii.Spans))
	for i, s := range pii.Spans {
		spans[i] = signal.PIISpan(s)
	}
	return dataplane.StandInPII(context.Background(), c, spans, pii.Detect, pii.Unscanned, pii.Truncated)
}
