package engine_test

import (
	"context"
	"fmt"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// Compile a document once, then Route each request through it: the engine
// says which decision matched and which model to call, and never calls it.
func Example() {
	doc, err := recipes.Parse([]byte(`
version: v1
providers:
  defaults: {default_model: small}
  models:
    - name: small
      backend_refs: [{provider: demo}]
    - name: coder
      backend_refs: [{provider: demo}]
recipes:
  - name: default
    signals:
      keywords: [{name: code, keywords: [python, golang, stack trace]}]
    decisions:
      - name: coding
        priority: 100
        rules: {operator: OR, conditions: [{type: keyword, name: code}]}
        modelRefs: [{model: coder}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, text := range []string{"Why does this golang program panic?", "What is the capital of France?"} {
		res, err := gen.Route(context.Background(), gen.DefaultRecipe(), &engine.Request{
			Model: engine.ModelAuto,
			Input: signal.Input{Text: text, UserTexts: []string{text}, AllTexts: []string{text}},
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%q: decision %q, model %s (%s)\n", text, res.Decision, res.Model, res.ReasonCode)
	}
	// Output:
	// "Why does this golang program panic?": decision "coding", model coder (auto_routing)
	// "What is the capital of France?": decision "", model small (default_model)
}
