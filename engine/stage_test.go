package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// stagedFake asks through the request's stage; every call it sends is
// recorded by a shared calls list.
type stagedFake struct {
	label string
	calls *stageCalls
}

type stageCalls struct {
	mu   sync.Mutex
	list []string
}

func (s stagedFake) Staged()        {}
func (s stagedFake) Method() string { return "staged" }
func (s stagedFake) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	ans, err := signal.Ask(ctx, "dep", s.label, func(_ context.Context, round string, items []any) ([]any, error) {
		s.calls.mu.Lock()
		s.calls.list = append(s.calls.list, fmt.Sprint(round, len(items)))
		s.calls.mu.Unlock()
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = [][]signal.LabelScore{{{Label: it.(string), Score: 0.9}, {Label: "other", Score: 0.1}}}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return ans.([][]signal.LabelScore), nil
}

const stagedConfig = `version: v1
providers:
  defaults: {default_model: open}
  models:
    - {name: open, backend_refs: [{provider: demo}]}
    - {name: safe, backend_refs: [{provider: demo}]}
    - {name: mathy, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      jailbreak: [{name: guard, threshold: 0.5}]
      domains: [{name: math, mmlu_categories: [math]}]
      keywords: [{name: hi, operator: OR, keywords: [hello]}]
    decisions:
      - name: guard
        priority: 10
        rules: {operator: OR, conditions: [{type: jailbreak, name: guard}]}
        modelRefs: [{model: safe}]
      - name: math
        priority: 5
        rules: {operator: AND, conditions: [{type: domain, name: math}, {type: keyword, name: hi}]}
        modelRefs: [{model: mathy}]
`

// The domain and jailbreak sets of one request, both staged, reach their
// deployment in one call; an unstaged set beside them does not hold it up.
func TestRouteStagesModelSignals(t *testing.T) {
	var calls stageCalls
	doc, err := recipes.Parse([]byte(stagedConfig))
	if err != nil {
		t.Fatal(err)
	}
	g, err := engine.Compile(doc, "", engine.Options{Models: signal.Models{
		Domain: stagedFake{"math", &calls}, Jailbreak: stagedFake{"jailbreak", &calls}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		res, err := g.Route(context.Background(), "", ask("MoM", "hello, integrate x squared"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Model != "safe" {
			t.Fatalf("routed to %q (%v)", res.Model, res.MatchedRules)
		}
	}
	if fmt.Sprint(calls.list) != "[first2 first2 first2]" {
		t.Errorf("calls %v, want one first-round call of two questions per request", calls.list)
	}
	// A staged signal past the budget is Missing and does not hang routing.
	doc.Global.ModelCatalog = &recipes.ModelCatalog{SignalTimeoutMS: 20}
	g, err = engine.Compile(doc, "", engine.Options{Models: signal.Models{
		Domain: stagedFake{"math", &calls}, Jailbreak: slowStaged{}}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := g.Route(context.Background(), "", ask("MoM", "hello"))
	if err != nil || time.Since(start) > time.Second {
		t.Fatalf("%v after %v", err, time.Since(start))
	}
	if jb := findSignal(res, "jailbreak"); !jb.Unscanned || jb.Error != "deadline" {
		t.Errorf("slow staged jailbreak: %+v", jb)
	}
}

// slowStaged is staged but never asks: it outlives the signal budget.
type slowStaged struct{}

func (slowStaged) Staged()        {}
func (slowStaged) Method() string { return "slow" }
func (slowStaged) Classify(ctx context.Context, _ []string) ([][]signal.LabelScore, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
