package signal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/recipes"
)

// slowClassifier stands in for a model: it is never lexical.
type slowClassifier struct{}

func (slowClassifier) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	out := make([][]signal.LabelScore, len(texts))
	for i := range texts {
		out[i] = []signal.LabelScore{{Label: "benign", Score: 1}}
	}
	return out, nil
}
func (slowClassifier) Method() string { return "fake-model" }

const inlineConfig = `
version: v1
providers:
  defaults: {default_model: small}
  models:
    - name: small
      backend_refs: [{provider: demo}]
recipes:
  - name: default
    signals:
      pii:
        - {name: contact, types: [EMAIL]}
      jailbreak:
        - {name: guard, threshold: 0.99}
    decisions:
      - name: private
        priority: 10
        rules: {operator: AND, conditions: [{type: pii, name: contact}, {type: jailbreak, name: guard}]}
        modelRefs: [{model: small}]
`

func inputOf(texts ...string) *signal.Input {
	return &signal.Input{Text: texts[len(texts)-1], UserTexts: texts, AllTexts: texts}
}

func TestCheapFor(t *testing.T) {
	doc, err := recipes.Parse([]byte(inlineConfig))
	if err != nil {
		t.Fatal(err)
	}
	cheapFor := func(models signal.Models, kind string, in *signal.Input) bool {
		sets, err := signal.Compile(doc.Recipes[0].Signals, func(string, string) bool { return true }, models)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sets {
			if s.Kind() == kind {
				is, ok := s.(signal.InlineSet)
				return ok && is.CheapFor(in)
			}
		}
		t.Fatalf("no %s set", kind)
		return false
	}
	short, long := "mail me at a@example.com", strings.Repeat("x", 600)
	if !cheapFor(signal.Models{}, recipes.KindPII, inputOf(short)) {
		t.Error("pii on a short message should run inline")
	}
	if cheapFor(signal.Models{}, recipes.KindPII, inputOf(long)) {
		t.Error("pii on 600 bytes should run on its own goroutine")
	}
	if cheapFor(signal.Models{}, recipes.KindPII, inputOf(strings.Repeat("y", 300), strings.Repeat("z", 300))) {
		t.Error("pii reads every user message: 2×300 bytes is not short")
	}
	if !cheapFor(signal.Models{}, recipes.KindJailbreak, inputOf(short)) {
		t.Error("the lexical jailbreak fallback on a short message should run inline")
	}
	if cheapFor(signal.Models{Jailbreak: slowClassifier{}}, recipes.KindJailbreak, inputOf(short)) {
		t.Error("a jailbreak model call must never run inline")
	}
}

// TestInlineMatchesConcurrent routes the same personal data in a short
// message (evaluated inline) and in a long one (on goroutines): the verdicts
// must agree, and an exhausted budget must still leave inline safety scans
// unscanned.
func TestInlineMatchesConcurrent(t *testing.T) {
	doc, err := recipes.Parse([]byte(inlineConfig))
	if err != nil {
		t.Fatal(err)
	}
	g, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"write to jane.doe@example.com",
		strings.Repeat("padding text ", 60) + "write to jane.doe@example.com",
	} {
		res, err := g.Route(context.Background(), "", &engine.Request{Model: engine.ModelMoM, Input: *inputOf(text)})
		if err != nil {
			t.Fatal(err)
		}
		if !res.PIIDetected || len(res.PIIEntities) != 1 || res.PIIEntities[0] != pii.Email {
			t.Fatalf("%d bytes: pii %v %v", len(text), res.PIIDetected, res.PIIEntities)
		}
		for _, s := range res.Signals {
			if s.Error != "" || s.Unscanned {
				t.Fatalf("%d bytes: signal %+v", len(text), s)
			}
		}
	}

	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	res, err := g.Route(ctx, "", &engine.Request{Model: engine.ModelMoM, Input: *inputOf("hello")})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Signals {
		if s.Kind == recipes.KindPII && (!s.Unscanned || s.Error != signal.CodeDeadline) {
			t.Fatalf("pii with no budget left: %+v", s)
		}
	}
}
