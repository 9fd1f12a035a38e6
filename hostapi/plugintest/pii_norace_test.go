//go:build !race

package plugintest_test

import (
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/plugin"
)

// A fixture supplies the personal data routing detected, as spans or by
// running the router's detector; the plugin reads them through the
// pii_spans host function.
func TestFixturePII(t *testing.T) {
	p := plugintest.New(t, plugintest.Build(t, "../../examples/plugins/piiredact"))
	signals := []plugin.Signal{{Kind: "pii", Name: "contact"}}
	body := `{"model":"m","messages":[{"role":"user","content":"mail ann@example.org or call +1 415 555 0100"}]}`

	out := p.Run(t, plugintest.Fixture{Signals: signals, Body: body, PII: &plugintest.PII{Detect: true}})
	if out.Report.Status != plugin.StatusApplied || !strings.Contains(string(out.Body), "mail [EMAIL] or call [PHONE]") {
		t.Fatalf("detect: %+v %s", out.Report, out.Body)
	}
	out = p.Run(t, plugintest.Fixture{Signals: signals, Body: body, PII: &plugintest.PII{
		Spans: []plugin.TextSpan{{Message: 0, Start: 0, End: 4, Type: "PERSON", Score: 1}}}})
	if !strings.Contains(string(out.Body), "[PERSON] ann@example.org") {
		t.Fatalf("given spans: %+v %s", out.Report, out.Body)
	}
	out = p.Run(t, plugintest.Fixture{Signals: signals, Body: body, PII: &plugintest.PII{Detect: true, Unscanned: true}})
	if out.Report.Status != plugin.StatusFailed || !strings.Contains(out.Report.Detail, "not scanned") {
		t.Fatalf("unscanned: %+v", out.Report)
	}
	out = p.Run(t, plugintest.Fixture{Signals: signals, Body: body})
	if out.Report.Status != plugin.StatusFailed || !strings.Contains(out.Report.Detail, "no personal-data spans") {
		t.Fatalf("no scan: %+v", out.Report)
	}
}

// BenchmarkPIIRedactModule: one request through the pii_redact example
// module with spans given (two in one message): parsing the fixture, placing
// the spans, the module call (its pii_spans host call included) and applying
// its message replacement.
func BenchmarkPIIRedactModule(b *testing.B) {
	p := plugintest.New(b, plugintest.Build(b, "../../examples/plugins/piiredact"))
	fx := plugintest.Fixture{
		Signals: []plugin.Signal{{Kind: "pii", Name: "contact"}},
		Body:    `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"mail ann@example.org or call +1 415 555 0100"}]}`,
		PII: &plugintest.PII{Spans: []plugin.TextSpan{
			{Message: 1, Start: 5, End: 20, Type: "EMAIL", Score: 0.95}, {Message: 1, Start: 29, End: 44, Type: "PHONE", Score: 0.9}}},
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := p.Run(b, fx); out.Report.Status != plugin.StatusApplied {
			b.Fatalf("%+v", out.Report)
		}
	}
}
