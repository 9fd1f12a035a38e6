package signal

import (
	"context"
	"slices"
	"testing"

	"github.com/junction-router/junction/recipes"
)

// exampleSignals are the signals of the spec's example configuration.
func exampleSignals() recipes.Signals {
	return recipes.Signals{
		Keywords: []recipes.KeywordSignal{{Name: "urgent", Operator: "OR", Keywords: []string{"urgent", "asap", "immediately"}}},
		Domains: []recipes.DomainSignal{
			{Name: "math", MMLUCategories: []string{"math"}},
			{Name: "science", MMLUCategories: []string{"physics", "chemistry", "biology"}},
			{Name: "computer science"},
		},
		PII:       []recipes.PIISignal{{Name: "contact_data", Types: []string{"EMAIL", "PHONE", "CREDIT_CARD", "SSN"}, Threshold: 0.5}},
		Jailbreak: []recipes.JailbreakSignal{{Name: "attack", Threshold: 0.7}},
		Context:   []recipes.ContextSignal{{Name: "long_context", MinTokens: 4000}},
		Language:  []recipes.LanguageSignal{{Name: "german", Languages: []string{"de"}}},
		Embeddings: []recipes.EmbeddingSignal{{Name: "billing_question",
			Candidates: []string{"I was charged twice", "how do I get a refund", "update my credit card"}, Threshold: 0.75}},
		Complexity: []recipes.ComplexitySignal{{Name: "reasoning_load", Threshold: "0.1",
			Hard: &recipes.CandidateSet{Candidates: []string{"prove that", "derive the closed form", "design a distributed algorithm"}},
			Easy: &recipes.CandidateSet{Candidates: []string{"what is the capital of", "say hello", "translate this word"}}}},
	}
}

func TestCompileEveryKind(t *testing.T) {
	sets := compileSets(t, exampleSignals(), Models{})
	var kinds []string
	for _, s := range sets {
		kinds = append(kinds, s.Kind())
	}
	if !slices.Equal(kinds, recipes.Kinds) {
		t.Fatalf("kinds %v, want %v", kinds, recipes.Kinds)
	}
	cheap := map[string]bool{recipes.KindKeyword: true, recipes.KindContext: true}
	in := &Input{
		Text:      "Prove that the integral of x^2 dx from 0 to 1 is 1/3, asap please",
		UserTexts: []string{"Prove that the integral of x^2 dx from 0 to 1 is 1/3, asap please"},
		AllTexts:  []string{"You are a helpful assistant.", "Prove that the integral of x^2 dx from 0 to 1 is 1/3, asap please"},
	}
	got := map[string]Result{}
	for _, s := range sets {
		if s.Cheap() != cheap[s.Kind()] {
			t.Errorf("%s: Cheap() = %v", s.Kind(), s.Cheap())
		}
		rs := s.Evaluate(t.Context(), in)
		if len(rs) == 0 {
			t.Fatalf("%s: no results", s.Kind())
		}
		for _, r := range rs {
			if r.Kind != s.Kind() || r.Method == "" || r.Elapsed <= 0 {
				t.Errorf("%s: %+v", s.Kind(), r)
			}
			got[r.Kind+"/"+r.Name] = r
		}
		// Nil input must not panic.
		s.Evaluate(t.Context(), nil)
	}
	for key, matched := range map[string]bool{
		"keyword/urgent": true, "domain/math": true, "domain/science": false, "pii/contact_data": false,
		"jailbreak/attack": false, "context/long_context": false, "language/german": false,
		"complexity/reasoning_load": true,
	} {
		if got[key].Matched != matched {
			t.Errorf("%s: %+v, want matched=%v", key, got[key], matched)
		}
	}
	if got["complexity/reasoning_load"].Level != recipes.LevelHard {
		t.Errorf("complexity: %+v", got["complexity/reasoning_load"])
	}
	if got["language/german"].Value != "en" {
		t.Errorf("language: %+v", got["language/german"])
	}
}

func TestCompileOnlyUsedSignals(t *testing.T) {
	used := func(kind, name string) bool {
		return kind == recipes.KindKeyword && name == "b" || kind == recipes.KindContext
	}
	rs := exampleSignals()
	rs.Keywords = []recipes.KeywordSignal{{Name: "a", Keywords: []string{"x"}}, {Name: "b", Keywords: []string{"y"}}, {Name: "c", Keywords: []string{"z"}}}
	// An unused signal is not compiled, so even an invalid one is no error.
	rs.Domains = append(rs.Domains, recipes.DomainSignal{Name: "not a category"})
	sets, err := CompileWith(t.Context(), rs, used, Models{}, Options{Language: detector(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 || sets[0].Kind() != recipes.KindKeyword || sets[1].Kind() != recipes.KindContext {
		t.Fatalf("sets %v", sets)
	}
	res := evalText(sets[0], "x y z")
	if len(res) != 1 || res[0].Name != "b" || !res[0].Matched {
		t.Fatalf("keyword results %+v", res)
	}
	if sets, err := Compile(rs, func(string, string) bool { return false }, Models{}); err != nil || len(sets) != 0 {
		t.Fatalf("nothing used: %v %v", sets, err)
	}
}

func TestCompileRejectsDuplicateNames(t *testing.T) {
	rs := recipes.Signals{Context: []recipes.ContextSignal{{Name: "x"}, {Name: "x", MinTokens: 5}}}
	if _, err := Compile(rs, nil, Models{}); err == nil {
		t.Fatal("duplicate names compiled")
	}
}

// Compile with no options builds its own language detector.
func TestCompileDefaultOptions(t *testing.T) {
	sets, err := Compile(recipes.Signals{Language: []recipes.LanguageSignal{{Name: "fr", Languages: []string{"fr"}}}}, nil, Models{})
	if err != nil {
		t.Fatal(err)
	}
	if r := evalText(sets[0], "Bonjour, je voudrais réserver une table pour deux personnes ce soir.")[0]; !r.Matched {
		t.Fatalf("%+v", r)
	}
}

func TestMissingEveryKind(t *testing.T) {
	rs := exampleSignals()
	rs.PII = append(rs.PII, recipes.PIISignal{Name: "lenient", OnUnscanned: "allow"})
	for _, s := range compileSets(t, rs, Models{}) {
		miss := s.Missing(CodeDeadline)
		live := s.Evaluate(context.Background(), &Input{Text: "hello"})
		if len(miss) != len(live) {
			t.Errorf("%s: %d missing results for %d signals", s.Kind(), len(miss), len(live))
		}
		for i, r := range miss {
			if r.Name != live[i].Name || r.Kind != s.Kind() || r.Error != CodeDeadline || r.Method != live[i].Method {
				t.Errorf("%s: %+v (live %+v)", s.Kind(), r, live[i])
			}
			safety := s.Kind() == recipes.KindPII || s.Kind() == recipes.KindJailbreak
			if r.Unscanned != safety || r.Matched != (safety && r.Name != "lenient") {
				t.Errorf("%s: %+v", s.Kind(), r)
			}
		}
	}
}

func TestScanTexts(t *testing.T) {
	in := &Input{UserTexts: []string{"aaaa", "bbbb", "cccc"}}
	got, _, over := scanTexts(in, 10, nil)
	if !over || !slices.Equal(got, []string{"cccc", "bbbb", "aa"}) {
		t.Errorf("budget 10: %q %v", got, over)
	}
	got, _, over = scanTexts(in, 12, nil)
	if over || len(got) != 3 {
		t.Errorf("budget 12: %q %v", got, over)
	}
	// A cut never splits a rune.
	got, _, _ = scanTexts(&Input{UserTexts: []string{"héllo"}}, 2, nil)
	if got[0] != "h" {
		t.Errorf("cut %q", got[0])
	}
}
