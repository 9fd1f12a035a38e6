// Package dataplanetest holds what the tests of the data plane and of its
// front ends (internal/gateway, internal/extproc) set up alike: the recipe
// they route with, a configuration compiled into a generation, the value of
// a metric series, an API key in the environment.
package dataplanetest

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/recipes"
)

// RecipeOptions are what one package's tests add to Recipe.
type RecipeOptions struct {
	// MathPlugins are plugins (YAML list items, indented as Recipe's)
	// hard_math runs after its system_prompt.
	MathPlugins string
	// CodeModelRef is the code decision's model reference (a YAML flow
	// mapping); "" is {model: coder, use_reasoning: true, reasoning_effort: low}.
	CodeModelRef string
	// CodePlugins are the code decision's plugins (YAML list items).
	CodePlugins string
}

// Recipe returns the recipes section the front ends' tests route with: the
// recipe default, whose keyword signals proof ("prove"), code ("python"),
// canned and gated pick the decisions hard_math (model big, reasoning high,
// a system prompt), code (model coder), canned (a fast_response), gated (a
// rag plugin that fails) and otherwise general (model small); its pii
// signal blocks e-mail addresses and its jailbreak signal attacks. It needs
// the models small, big and coder.
func Recipe(o RecipeOptions) string {
	code := o.CodeModelRef
	if code == "" {
		code = "{model: coder, use_reasoning: true, reasoning_effort: low}"
	}
	var b strings.Builder
	b.WriteString(`recipes:
  - name: default
    signals:
      keywords:
        - {name: proof, keywords: ["prove"]}
        - {name: code, keywords: ["python"]}
        - {name: canned, keywords: ["canned"]}
        - {name: gated, keywords: ["gated"]}
      pii:
        - {name: contact, types: [EMAIL], threshold: 0.5, action: block}
      jailbreak:
        - {name: attack, threshold: 0.7, action: block}
    decisions:
      - name: hard_math
        priority: 200
        rules: {operator: OR, conditions: [{type: keyword, name: proof}]}
        modelRefs:
          - {model: big, use_reasoning: true, reasoning_effort: high}
        plugins:
          - type: system_prompt
            configuration: {system_prompt: "Be careful."}
`)
	b.WriteString(o.MathPlugins)
	b.WriteString(`      - name: code
        priority: 150
        rules: {operator: OR, conditions: [{type: keyword, name: code}]}
        modelRefs:
          - ` + code + "\n")
	if o.CodePlugins != "" {
		b.WriteString("        plugins:\n" + o.CodePlugins)
	}
	b.WriteString(`      - name: canned
        priority: 140
        rules: {operator: OR, conditions: [{type: keyword, name: canned}]}
        plugins:
          - type: fast_response
            configuration: {message: "a canned answer"}
      - name: gated
        priority: 130
        rules: {operator: OR, conditions: [{type: keyword, name: gated}]}
        modelRefs:
          - {model: small}
        plugins:
          - {type: rag, on_error: fail}
      - name: general
        priority: 10
        rules: {operator: AND, conditions: []}
        modelRefs:
          - {model: small, use_reasoning: false}
`)
	return b.String()
}

// Compile parses a configuration document and compiles its generation with
// o, failing t on either error.
func Compile(t testing.TB, yaml string, o engine.Options) (*recipes.Document, *engine.Generation) {
	t.Helper()
	doc, err := recipes.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	gen, err := engine.Compile(doc, recipes.Hash(doc), o)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return doc, gen
}

// Metric sums the series of name in g whose labels include labels: the
// values of counters and gauges, the sample counts of histograms; 0 when
// none.
func Metric(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// KeyEnv sets the environment variable name to value for t unless it is
// set already: a model whose backend takes its key from the environment is
// refused while the variable is unset.
func KeyEnv(t testing.TB, name, value string) {
	t.Helper()
	if os.Getenv(name) == "" {
		t.Setenv(name, value)
	}
}
