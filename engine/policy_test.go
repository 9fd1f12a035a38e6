package engine_test

import (
	"context"
	"testing"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
)

const policyYAML = `
version: v1
providers:
  defaults: {default_model: a}
  models:
    - {name: a, backend_refs: [{provider: demo}], pii_policy: {allow_by_default: false}}
    - {name: b, backend_refs: [{provider: demo}]}
    - {name: c, backend_refs: [{provider: demo}]}
global:
  router:
    reliability: {retry_count: 1}
recipes:
  - name: r
    fallback: {enabled: true}
    signals:
      keywords: [{name: k, keywords: ["fallback"]}]
      pii: [{name: p, types: [EMAIL]}]
    decisions:
      - name: d
        priority: 10
        rules: {operator: OR, conditions: [{type: keyword, name: k}, {type: pii, name: p}]}
        modelRefs: [{model: a}, {model: b, use_reasoning: true}, {model: c}]
        reliability: {retry_count: 3}
`

func TestRoutePolicyAndCandidates(t *testing.T) {
	g := compileYAML(t, policyYAML, engine.Options{})
	route := func(model, text string) *engine.Result {
		t.Helper()
		res, err := g.Route(context.Background(), "", &engine.Request{Model: model, Input: signal.Input{Text: text, AllTexts: []string{text}, UserTexts: []string{text}, UserMessages: []int{0}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := route("auto", "please use the fallback")
	if res.Policy == nil || res.Policy.RetryCount != 3 || !res.Policy.FallbackEnabled {
		t.Fatalf("policy %+v: want the decision's retry_count 3 and the recipe's fallback", res.Policy)
	}
	if got := g.Candidates(res); len(got) != 3 || got[0].Model != "a" || got[1].Model != "b" || got[2].Model != "c" {
		t.Errorf("candidates %+v, want a, b, c in order", got)
	}
	// a refuses personal data: a fallback must not move on to it either.
	res = route("auto", "mail me at jane.doe@example.com about the fallback")
	if got := g.Candidates(res); len(got) != 2 || got[0].Model != "b" || got[1].Model != "c" {
		t.Errorf("candidates with an email %+v, want b, c", got)
	}
	// No decision matched: the recipe's and router's layers.
	res = route("auto", "hello")
	if res.Policy == nil || res.Policy.RetryCount != 1 || !res.Policy.FallbackEnabled {
		t.Errorf("default route policy %+v", res.Policy)
	}
	if got := g.Candidates(res); len(got) != 1 || got[0].Model != "a" {
		t.Errorf("default route candidates %+v", got)
	}
	if got := g.Candidates(route("c", "please use the fallback")); got != nil {
		t.Errorf("an explicit model has no fallback candidates: %+v", got)
	}
	if m := g.Reasoning(g.Candidates(route("auto", "fallback"))[1]); !m.Enabled {
		t.Errorf("Reasoning(b) = %+v, want use_reasoning's enabled", m)
	}
}
