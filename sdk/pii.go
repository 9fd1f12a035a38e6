package sdk

import (
	"errors"
	"fmt"

	"github.com/junction-router/junction/hostapi/abi"
)

// PIISpan is one piece of personal data the router's pii signals detected in
// the request: where it is and what it is.
type PIISpan struct {
	// Message is the index in Messages() (the request as this plugin sees it,
	// after earlier plugins' edits).
	Message int
	// Part is the index in the message's content array of the text part that
	// holds the span, or -1 when the content is a string.
	Part int
	// Start and End (exclusive) are byte offsets into that string's or
	// part's text, decoded from JSON (not into the escaped JSON). When Part is
	// -1 they are offsets into Messages()[Message].Content as well.
	Start, End int
	// Type is the entity type: EMAIL, PHONE, CREDIT_CARD, SSN, IP_ADDRESS,
	// IBAN, PERSON or LOCATION.
	Type string
	// Score is the detector's confidence in [0,1].
	Score float32
}

// Errors of PIISpans.
var (
	// ErrNotScanned: no pii signal scanned this request (the recipe has
	// none, or no decision or block references one), or the phase is not
	// the request phase. The plugin knows nothing about personal data.
	ErrNotScanned = errors.New("no pii signal scanned the request")
	// ErrPIIIncomplete: the spans are what the router found, but not all
	// there is: part of the user text was not scanned (over the scan budget,
	// past the signal deadline), or more than 256 spans were detected.
	// A plugin that must not let personal data through should fail.
	ErrPIIIncomplete = errors.New("the personal-data spans are incomplete")
)

// PIISpans returns the personal data the router's pii signals detected,
// sorted by message, part and start, not overlapping. It asks the host each
// time it is called (the junction.pii_spans host function, ABI revision 1):
// call it once per request.
//
// The spans are those at least one of the recipe's evaluated pii signals
// counted (its types, at or above its threshold), in user messages. A
// message an earlier plugin replaced has no spans (they described the old
// text); inserted and removed messages shift the indexes.
//
// The error is nil when the spans are everything the router found in all of
// the user text. errors.Is(err, ErrPIIIncomplete): the spans are valid but
// not the whole story (see ErrPIIIncomplete). errors.Is(err, ErrNotScanned):
// there was no scan and the spans are nil. Other errors come from the host.
func (r *Request) PIISpans() ([]PIISpan, error) {
	b, err := r.call("pii_spans", hostPIISpans, nil)
	if errors.Is(err, ErrUnavailable) {
		return nil, ErrNotScanned
	}
	if err != nil {
		return nil, err
	}
	rec, err := abi.DecodePIISpans(b)
	if err != nil {
		return nil, fmt.Errorf("junction.pii_spans: %w", err)
	}
	spans := make([]PIISpan, len(rec.Spans))
	for i, s := range rec.Spans {
		part := -1
		if s.Part != abi.NoPart {
			part = int(s.Part)
		}
		spans[i] = PIISpan{Message: int(s.Message), Part: part, Start: int(s.Start), End: int(s.End), Type: s.Type, Score: s.Score}
	}
	switch {
	case rec.Flags&abi.PIIUnscanned != 0:
		return spans, fmt.Errorf("%w: part of the user text was not scanned", ErrPIIIncomplete)
	case rec.Flags&abi.PIITruncated != 0:
		return spans, fmt.Errorf("%w: more than %d spans were detected", ErrPIIIncomplete, abi.MaxPIISpans)
	}
	return spans, nil
}
