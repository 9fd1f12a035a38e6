package plugin

import (
	"context"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/pii"
)

// StandInPII is what the plugin author harness (hostapi/plugintest, behind
// `junction plugin test|preview`) gives a plugin in place of a request's pii
// signals: the spans given, or with detect the router's own scan over the
// user messages (internal/pii, as a pii signal {types: [ALL], threshold:
// 0.5} reads them), placed in req as routing places them (LocatePII). It
// lives on the plugin side so that the harness need not import the engine.
func StandInPII(ctx context.Context, req *chat.Request, spans []TextSpan, detect, unscanned, truncated bool) (*abi.PIISpans, error) {
	if detect {
		t := pii.Texts{Last: req.LastUserText(), Messages: len(req.Messages)}
		t.User, t.UserMessages = req.UserTexts()
		found, over, err := pii.Scan(ctx, &t, pii.DefaultScanBytes, true)
		if err != nil {
			// As a signal whose deadline passed: nothing found, unscanned.
			over, found = true, nil
		}
		m := pii.Select(found, nil, 0.5)
		for _, s := range m.Spans {
			spans = append(spans, TextSpan(s))
		}
		truncated = truncated || m.Truncated
		unscanned = unscanned || over
	}
	return LocatePII(req, spans, truncated, unscanned)
}
