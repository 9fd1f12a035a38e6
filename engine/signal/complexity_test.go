package signal

import (
	"testing"

	"github.com/junction-router/junction/recipes"
)

func complexityEmbedder() *fakeEmbedder {
	return &fakeEmbedder{dims: 3, vecs: map[string][]float32{
		"H": {1, 0, 0}, "E": {0, 1, 0},
		"hard":    {1, 0, 0},               // score 1
		"easy":    {0, 1, 0},               // score -1
		"middle":  {0.6, 0.6, 0.529150262}, // score 0
		"leaning": {0.8, 0.6, 0},           // score 0.2
	}}
}

func TestComplexityGrades(t *testing.T) {
	hard := &recipes.CandidateSet{Candidates: []string{"H"}}
	easy := &recipes.CandidateSet{Candidates: []string{"E"}}
	s := compileOne(t, recipes.Signals{Complexity: []recipes.ComplexitySignal{
		{Name: "margin", Threshold: "0.1", Hard: hard, Easy: easy},
		{Name: "wide", Threshold: "0.5", Hard: hard, Easy: easy},
		{Name: "bounds", HardAbove: "0.2", EasyBelow: "-0.5", Hard: hard, Easy: easy},
		{Name: "default", Hard: hard, Easy: easy},
		{Name: "hard only", Threshold: "0.1", Hard: hard},
	}}, Models{Embedder: complexityEmbedder()})
	for _, tc := range []struct {
		text  string
		score float64
		want  map[string]string
	}{
		{"hard", 1, map[string]string{"margin": "hard", "wide": "hard", "bounds": "hard", "default": "hard", "hard only": "hard"}},
		{"easy", -1, map[string]string{"margin": "easy", "wide": "easy", "bounds": "easy", "default": "easy", "hard only": "medium"}},
		{"middle", 0, map[string]string{"margin": "medium", "wide": "medium", "bounds": "medium", "default": "medium", "hard only": "hard"}},
		{"leaning", 0.2, map[string]string{"margin": "hard", "wide": "medium", "bounds": "hard", "default": "hard", "hard only": "hard"}},
	} {
		got := byName(evalText(s, tc.text))
		for name, level := range tc.want {
			r := got[name]
			if r.Level != level || r.Value != level || !r.Matched || r.Error != "" {
				t.Errorf("%s %s: %+v, want %s", tc.text, name, r, level)
			}
			if name != "hard only" && abs(r.Score-tc.score) > 1e-5 {
				t.Errorf("%s %s: score %v, want %v", tc.text, name, r.Score, tc.score)
			}
		}
	}
	if r := evalText(s, "")[0]; r.Level != recipes.LevelMedium || !r.Matched {
		t.Errorf("empty text: %+v", r)
	}
	if r := s.Missing(CodeDeadline)[0]; r.Level != "" || r.Matched || r.Error != CodeDeadline {
		t.Errorf("missing: %+v", r)
	}
}

func TestComplexityFallback(t *testing.T) {
	s := compileOne(t, recipes.Signals{Complexity: []recipes.ComplexitySignal{{
		Name:      "reasoning_load",
		Threshold: "0.1",
		Hard:      &recipes.CandidateSet{Candidates: []string{"prove that", "derive the closed form", "design a distributed algorithm"}},
		Easy:      &recipes.CandidateSet{Candidates: []string{"what is the capital of", "say hello", "translate this word"}},
	}}}, Models{})
	for text, level := range map[string]string{
		"Prove that the square root of two is irrational":    recipes.LevelHard,
		"Derive the closed form of the Fibonacci recurrence": recipes.LevelHard,
		"What is the capital of Peru?":                       recipes.LevelEasy,
		"Say hello to my friend":                             recipes.LevelEasy,
	} {
		if r := evalText(s, text)[0]; r.Level != level || r.Method != MethodHashedNgrams {
			t.Errorf("%q: %+v, want %s", text, r, level)
		}
	}
}

func TestComplexityCompileErrors(t *testing.T) {
	h := &recipes.CandidateSet{Candidates: []string{"x"}}
	for name, sig := range map[string]recipes.ComplexitySignal{
		"score backend":         {Name: "c", HardBelow: "0.2", EasyAbove: "0.5", Hard: h},
		"threshold and bounds":  {Name: "c", Threshold: "0.1", HardAbove: "0.2", EasyBelow: "0", Hard: h},
		"half a pair":           {Name: "c", HardAbove: "0.2", Hard: h},
		"inverted bounds":       {Name: "c", HardAbove: "-0.2", EasyBelow: "0.2", Hard: h},
		"not a number":          {Name: "c", Threshold: "high", Hard: h},
		"threshold above one":   {Name: "c", Threshold: "1.5", Hard: h},
		"bad bound":             {Name: "c", HardAbove: "x", EasyBelow: "0", Hard: h},
		"no candidates":         {Name: "c", Threshold: "0.1"},
		"empty candidate lists": {Name: "c", Hard: &recipes.CandidateSet{}, Easy: &recipes.CandidateSet{}},
	} {
		if _, err := Compile(recipes.Signals{Complexity: []recipes.ComplexitySignal{sig}}, nil, Models{}); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}
