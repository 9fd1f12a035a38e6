package signal

import (
	"context"
	"testing"
	"time"

	"github.com/junction-router/junction/recipes"
)

func TestDomainFallback(t *testing.T) {
	s := compileOne(t, recipes.Signals{Domains: []recipes.DomainSignal{
		{Name: "math", MMLUCategories: []string{"math"}},
		{Name: "science", MMLUCategories: []string{"Physics", "chemistry", "biology"}},
		{Name: "computer science"},
		{Name: "confident math", MMLUCategories: []string{"math"}, Threshold: 0.99},
	}}, Models{})
	for _, tc := range []struct {
		text     string
		category string
		matched  []string
	}{
		{"Solve the integral of x^2 dx", "math", []string{"math"}},
		{"What is the pH of a 0.01 M solution of hydrochloric acid?", "chemistry", []string{"science"}},
		{"What is the time complexity of quicksort in the worst case for an array of n elements?", "computer science", []string{"computer science"}},
		{"What are the symptoms of type 2 diabetes and how is it treated?", "health", nil},
	} {
		got := evalText(s, tc.text)
		for _, r := range got {
			want := false
			for _, m := range tc.matched {
				want = want || m == r.Name
			}
			if r.Matched != want || r.Value != tc.category || r.Method != MethodLexicalBayes {
				t.Errorf("%q: %s = %+v, want matched=%v category=%s", tc.text, r.Name, r, want, tc.category)
			}
			if r.Score <= 0 || r.Score > 1 {
				t.Errorf("%q: score %v", tc.text, r.Score)
			}
		}
		if r := byName(got)["confident math"]; r.Matched && r.Score < 0.99 {
			t.Errorf("threshold ignored: %+v", r)
		}
	}
	if r := evalText(s, "   ")[0]; r.Matched || r.Value != "" || r.Error != "" {
		t.Errorf("blank text: %+v", r)
	}
}

func TestDomainModel(t *testing.T) {
	clf := &fakeClassifier{dist: []LabelScore{{"law", 0.2}, {"Business", 0.7}, {"economics", 0.1}}}
	s := compileOne(t, recipes.Signals{Domains: []recipes.DomainSignal{
		{Name: "business"}, // identity, case-insensitive
		{Name: "money", MMLUCategories: []string{"BUSINESS", "economics"}}, // mapping
		{Name: "strict business", MMLUCategories: []string{"business"}, Threshold: 0.8},
		{Name: "legal", MMLUCategories: []string{"law"}},
		{Name: "custom label"}, // a model may have labels the fallback lacks
	}}, Models{Domain: clf})
	got := byName(evalText(s, "quarterly revenue"))
	for name, want := range map[string]bool{"business": true, "money": true, "strict business": false, "legal": false, "custom label": false} {
		r := got[name]
		if r.Matched != want || r.Value != "Business" || r.Score != 0.7 || r.Method != "fake:classifier" {
			t.Errorf("%s: %+v, want matched=%v", name, r, want)
		}
	}
	if n := clf.calls.Load(); n != 1 {
		t.Errorf("%d classifier calls for one request, want 1", n)
	}
}

func TestDomainFailures(t *testing.T) {
	sig := []recipes.DomainSignal{{Name: "math"}}
	slow := &fakeClassifier{dist: []LabelScore{{"math", 1}}, delay: 2 * time.Second}
	s := compileOne(t, recipes.Signals{Domains: sig}, Models{Domain: slow})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := s.Evaluate(ctx, &Input{Text: "2+2"})[0]
	if time.Since(start) > 500*time.Millisecond || r.Error != CodeDeadline || r.Matched || r.Unscanned {
		t.Errorf("deadline: %+v after %v", r, time.Since(start))
	}
	honoring := &fakeClassifier{dist: []LabelScore{{"math", 1}}, delay: 2 * time.Second, honorCtx: true}
	s = compileOne(t, recipes.Signals{Domains: sig}, Models{Domain: honoring})
	ctx2, cancel2 := contextCancelled()
	defer cancel2()
	if r := s.Evaluate(ctx2, &Input{Text: "2+2"})[0]; r.Error != CodeDeadline {
		t.Errorf("cancelled: %+v", r)
	}
	s = compileOne(t, recipes.Signals{Domains: sig}, Models{Domain: &fakeClassifier{err: errBoom}})
	if r := evalText(s, "2+2")[0]; r.Error != CodeModelError || r.Matched {
		t.Errorf("model error: %+v", r)
	}
	s = compileOne(t, recipes.Signals{Domains: sig}, Models{Domain: &fakeClassifier{dist: nil}})
	if r := evalText(s, "2+2")[0]; r.Error != CodeModelError {
		t.Errorf("empty distribution: %+v", r)
	}
	if r := s.Missing(CodeDeadline)[0]; r.Error != CodeDeadline || r.Matched || r.Unscanned {
		t.Errorf("missing: %+v", r)
	}
}

func TestDomainCompileErrors(t *testing.T) {
	for name, sig := range map[string]recipes.DomainSignal{
		"not a category":         {Name: "science"},
		"unknown mmlu category":  {Name: "stem", MMLUCategories: []string{"math", "astrology"}},
		"threshold out of range": {Name: "math", Threshold: 2},
	} {
		if _, err := Compile(recipes.Signals{Domains: []recipes.DomainSignal{sig}}, nil, Models{}); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

func BenchmarkDomainFallback(b *testing.B) {
	s := compileOne(b, recipes.Signals{Domains: []recipes.DomainSignal{
		{Name: "math", MMLUCategories: []string{"math"}},
		{Name: "computer science"},
	}}, Models{})
	in := &Input{Text: "What is the time complexity of quicksort in the worst case for an array of n elements?"}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}
