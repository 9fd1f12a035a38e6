package engine_test

import (
	"context"
	"testing"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
)

const piiConfig = `version: v1
providers:
  defaults: {default_model: m}
  models:
    - {name: m, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      pii:
        - {name: mail, types: [EMAIL], threshold: 0.5}
        - {name: phone, types: [PHONE], threshold: 0.5}
        - {name: unused, types: [SSN]}
    decisions:
      - name: private
        priority: 10
        rules: {operator: OR, conditions: [{type: pii, name: mail}, {type: pii, name: phone}]}
        modelRefs: [{model: m}]
      - name: rest
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: m}]
`

// The routing result holds the union of the evaluated pii signals' spans,
// in message order; nil when no pii signal was evaluated.
func TestRoutePIISpans(t *testing.T) {
	g := compileYAML(t, piiConfig, engine.Options{})
	text := "call +1 415 555 0100 or mail ann@example.org"
	res, err := g.Route(context.Background(), "", &engine.Request{Model: "MoM", Input: signal.Input{
		Text: text, UserTexts: []string{"ann@example.org", text}, UserMessages: []int{0, 2}, AllTexts: []string{"ann@example.org", "ok", text},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := res.PII
	if !p.Scanned || p.Truncated || p.Unscanned || len(p.Spans) != 3 {
		t.Fatalf("PII %+v", p)
	}
	want := []struct{ msg, start, end int }{{0, 0, 15}, {2, 5, 20}, {2, 29, 44}}
	for i, w := range want {
		if s := p.Spans[i]; s.Message != w.msg || s.Start != w.start || s.End != w.end {
			t.Errorf("span %d: %+v, want %+v", i, s, w)
		}
	}

	none := compileYAML(t, `version: v1
providers:
  defaults: {default_model: m}
  models: [{name: m, backend_refs: [{provider: demo}]}]
recipes: [{name: default, decisions: [{name: rest, rules: {operator: AND, conditions: []}, modelRefs: [{model: m}]}]}]
`, engine.Options{})
	if res, _ := none.Route(context.Background(), "", ask("MoM", "ann@example.org")); res.PII.Scanned {
		t.Errorf("no pii signal, PII %+v", res.PII)
	}
}
