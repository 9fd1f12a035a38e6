package recipes

import (
	"os"
	"testing"
)

func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(examplePath); err == nil {
		f.Add(b)
	}
	f.Add(BuiltinYAML())
	f.Add([]byte(minimalYAML))
	for _, s := range []string{
		"",
		"version: v1\n",
		"{\"version\": \"v1\", \"version\": \"v2\"}",
		"version: v1\nproviders:\n  defaults:\n default_model: x\n",
		"[1, 2, 3]",
		"version: v1\nrecipes: [{name: r, decisions: [{name: d, rules: {operator: NOT, conditions: []}}]}]\n",
		"version: v1\nproviders: {defaults: {default_model: m}, models: [{name: m, backend_refs: [{provider: demo}]}]}\nrecipes: [{name: r, signals: {complexity: [{name: c, threshold: 1e-9, hard: {candidates: [a]}, easy: {candidates: [b]}}]}}]\nlisteners: [{name: a, timeout: 1e30}]\n",
		"a: &a [*a]\n",
		"version: !!binary aGVsbG8=\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, canonSrc, err := ParseSource(data)
		if err != nil {
			if _, ok := AsValidationError(err); !ok {
				t.Fatalf("error is %T, not *ValidationError: %v", err, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		// The source hash is stable under re-canonicalization.
		h1, err := HashSource(data)
		if err != nil {
			t.Fatalf("HashSource of an accepted document: %v", err)
		}
		if h2, err := HashSource(canonSrc); err != nil || h1 != h2 || h1 != HashBytes(canonSrc) {
			t.Fatalf("source hash unstable: %s vs %s (%v)", h1, h2, err)
		}
		// The effective document survives a round trip through its canonical form.
		c, err := Canonical(doc)
		if err != nil {
			t.Fatalf("Canonical: %v", err)
		}
		back, err := Parse(c)
		if err != nil {
			t.Fatalf("canonical form of an accepted document is rejected:\n%v\n%s", err, c)
		}
		if Hash(back) != Hash(doc) || Hash(doc) == "" {
			t.Fatalf("effective hash unstable:\n%s", c)
		}
		if err := doc.Validate(); err != nil {
			t.Fatalf("Validate rejects a parsed document: %v", err)
		}
	})
}
