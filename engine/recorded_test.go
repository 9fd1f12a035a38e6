package engine_test

import (
	"context"
	"testing"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
)

// Routing with recorded signal results takes a decision as the recorded
// signals say, without reading the input; a signal nothing recorded does
// not match, a safety one does not block.
func TestRouteRecordedSignals(t *testing.T) {
	g := compileYAML(t, `{version: v1,
  providers: {defaults: {default_model: small}, models: [{name: small, backend_refs: [{provider: demo}]}, {name: big, backend_refs: [{provider: demo}]}]},
  recipes: [{name: default,
    signals: {keywords: [{name: urgent, keywords: [urgent]}], domains: [{name: math, mmlu_categories: [math]}], pii: [{name: contact, types: [EMAIL], action: block}]},
    decisions: [
      {name: urgent, priority: 200, rules: {operator: OR, conditions: [{type: keyword, name: urgent}]}, modelRefs: [{model: big}]},
      {name: math, priority: 100, rules: {operator: OR, conditions: [{type: domain, name: math}]}, modelRefs: [{model: big}]},
      {name: rest, rules: {operator: AND, conditions: []}, modelRefs: [{model: small}]}]}]}`, engine.Options{})
	route := func(rec []signal.Result) *engine.Result {
		t.Helper()
		res, err := g.Route(context.Background(), "", &engine.Request{Model: engine.ModelMoM, Input: signal.Input{Text: "urgent"}, Recorded: rec})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := route([]signal.Result{{Kind: "domain", Name: "math", Matched: true, Score: 0.9}}); res.Decision != "math" || res.Model != "big" {
		t.Fatalf("recorded math: %+v", res)
	}
	// The input says urgent, but routing reads only what was recorded;
	// the pii signal, not recorded, does not block.
	res := route([]signal.Result{{Kind: "keyword", Name: "urgent", Matched: false}})
	if res.Decision != "rest" || res.Block != nil {
		t.Fatalf("nothing matched: %+v", res)
	}
	for _, s := range res.Signals {
		if s.Kind == "domain" && (s.Matched || s.Error != engine.ErrorNotRecorded) {
			t.Fatalf("an unrecorded signal: %+v", s)
		}
	}
	if res := route([]signal.Result{{Kind: "pii", Name: "contact", Matched: true, Entities: []string{"EMAIL"}}}); res.Block == nil {
		t.Fatalf("a recorded pii match with action block: %+v", res)
	}
}
