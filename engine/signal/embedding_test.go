package signal

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/recipes"
)

func TestEmbeddingFallback(t *testing.T) {
	s := compileOne(t, recipes.Signals{Embeddings: []recipes.EmbeddingSignal{{
		Name:       "billing",
		Candidates: []string{"I was charged twice", "how do I get a refund", "update my credit card"},
		Threshold:  0.5,
	}}}, Models{})
	for _, tc := range []struct {
		text    string
		matched bool
		value   string
	}{
		{"How do I get a refund for my order?", true, "how do I get a refund"},
		{"I think I was charged twice this month", true, "I was charged twice"},
		{"Explain photosynthesis to a ten year old", false, ""},
	} {
		r := evalText(s, tc.text)[0]
		if r.Matched != tc.matched || (tc.value != "" && r.Value != tc.value) || r.Method != MethodHashedNgrams {
			t.Errorf("%q: %+v", tc.text, r)
		}
	}
}

func unitEmbedder() *fakeEmbedder {
	return &fakeEmbedder{dims: 3, vecs: map[string][]float32{
		"A": {1, 0, 0}, "B": {0, 1, 0},
		"text": {0.8, 0.6, 0}, "far": {0, 0, 1},
		// Not unit length: the Set normalizes.
		"long": {8, 6, 0},
	}}
}

func TestEmbeddingAggregation(t *testing.T) {
	s := compileOne(t, recipes.Signals{Embeddings: []recipes.EmbeddingSignal{
		{Name: "max", Candidates: []string{"A", "B"}, Threshold: 0.75},
		{Name: "mean", Candidates: []string{"A", "B"}, Threshold: 0.75, Aggregation: "mean"},
		{Name: "mean low", Candidates: []string{"A", "B"}, Threshold: 0.7, Aggregation: "MEAN"},
		{Name: "b", Candidates: []string{"B"}, Threshold: 0.5},
	}}, Models{Embedder: unitEmbedder()})
	for _, text := range []string{"text", "long"} {
		got := byName(evalText(s, text))
		for name, want := range map[string]struct {
			matched bool
			score   float64
			value   string
		}{
			"max":      {true, 0.8, "A"},
			"mean":     {false, 0.7, "A"},
			"mean low": {true, 0.7, "A"},
			"b":        {true, 0.6, "B"},
		} {
			r := got[name]
			if r.Matched != want.matched || abs(r.Score-want.score) > 1e-6 || r.Value != want.value || r.Method != "fake:embedder" {
				t.Errorf("%s %s: %+v, want %+v", text, name, r, want)
			}
		}
	}
	if r := byName(evalText(s, "far"))["max"]; r.Matched || r.Score != 0 {
		t.Errorf("orthogonal text: %+v", r)
	}
}

// One Embed call per request text serves the embedding and the complexity
// signals, even when their Sets run concurrently; candidates are embedded at
// compile time only.
func TestEmbeddingSharedCall(t *testing.T) {
	emb := unitEmbedder()
	emb.delay = 20 * time.Millisecond // long enough for both Sets to be waiting
	sets := compileSets(t, recipes.Signals{
		Embeddings: []recipes.EmbeddingSignal{{Name: "e", Candidates: []string{"A", "B"}, Threshold: 0.5}},
		Complexity: []recipes.ComplexitySignal{{Name: "c", Hard: &recipes.CandidateSet{Candidates: []string{"A"}}, Easy: &recipes.CandidateSet{Candidates: []string{"B"}}}},
	}, Models{Embedder: emb})
	if len(sets) != 2 {
		t.Fatalf("%d sets", len(sets))
	}
	compileCalls := emb.calls.Load()
	if compileCalls != 2 {
		t.Fatalf("compile made %d Embed calls, want 2 (one per Set)", compileCalls)
	}
	for round := 0; round < 3; round++ {
		in := &Input{Text: "text"}
		var wg sync.WaitGroup
		results := make([][]Result, len(sets))
		for i, s := range sets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.Evaluate(t.Context(), in)
			}()
		}
		wg.Wait()
		if !results[0][0].Matched || results[1][0].Level != recipes.LevelHard {
			t.Fatalf("results %+v", results)
		}
	}
	if n := emb.calls.Load() - compileCalls; n != 1 {
		t.Errorf("%d Embed calls for three requests with the same text and two Sets, want 1 (remembered)", n)
	}
	sets[0].Evaluate(t.Context(), &Input{Text: "far"})
	if n := emb.calls.Load() - compileCalls; n != 2 {
		t.Errorf("a new text made %d calls in all, want 2", n)
	}
}

func TestEmbeddingFailures(t *testing.T) {
	sig := []recipes.EmbeddingSignal{{Name: "e", Candidates: []string{"A"}, Threshold: 0.5}}
	emb := unitEmbedder()
	s := compileOne(t, recipes.Signals{Embeddings: sig}, Models{Embedder: emb})
	emb.delay = 2 * time.Second // ignores ctx
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := s.Evaluate(ctx, &Input{Text: "text"})[0]
	if time.Since(start) > 500*time.Millisecond || r.Error != CodeDeadline || r.Matched {
		t.Errorf("deadline: %+v after %v", r, time.Since(start))
	}

	emb = unitEmbedder()
	s = compileOne(t, recipes.Signals{Embeddings: sig}, Models{Embedder: emb})
	emb.err = errBoom
	if r := evalText(s, "text")[0]; r.Error != CodeModelError || r.Matched {
		t.Errorf("model error: %+v", r)
	}
	emb.err = nil // failures are not remembered
	if r := evalText(s, "text")[0]; r.Error != "" || !r.Matched {
		t.Errorf("after recovery: %+v", r)
	}

	// A vector of another size than the candidates'.
	emb.vecs["odd"] = []float32{1, 0}
	if r := evalText(s, "odd")[0]; r.Error != CodeModelError {
		t.Errorf("size mismatch: %+v", r)
	}
	if r := evalText(s, "")[0]; r.Matched || r.Error != "" {
		t.Errorf("empty text: %+v", r)
	}
}

func TestEmbeddingCompileErrors(t *testing.T) {
	for name, sig := range map[string]recipes.EmbeddingSignal{
		"no candidates": {Name: "e", Threshold: 0.5},
		"aggregation":   {Name: "e", Candidates: []string{"a"}, Aggregation: "median"},
		"threshold":     {Name: "e", Candidates: []string{"a"}, Threshold: 1.2},
	} {
		if _, err := Compile(recipes.Signals{Embeddings: []recipes.EmbeddingSignal{sig}}, nil, Models{}); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
	failing := &fakeEmbedder{dims: 3, err: errBoom}
	if _, err := Compile(recipes.Signals{Embeddings: []recipes.EmbeddingSignal{{Name: "e", Candidates: []string{"a"}}}}, nil, Models{Embedder: failing}); err == nil {
		t.Error("compiled although the candidates could not be embedded")
	}
}

func BenchmarkEmbeddingFallback(b *testing.B) {
	s := compileOne(b, recipes.Signals{Embeddings: []recipes.EmbeddingSignal{{
		Name:       "billing",
		Candidates: []string{"I was charged twice", "how do I get a refund", "update my credit card"},
		Threshold:  0.75,
	}}}, Models{})
	in := &Input{Text: "Hi, I think my card was charged twice for the same order, can I get a refund?"}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}

// The lexical embedder's vector of a text is computed once for the sets
// that ask for it (the embedding and complexity signals of a request): the
// second asker gets the first one's vector, which is the embedder's own.
func TestLexicalVectorShared(t *testing.T) {
	lex := lexical.NewHashedEmbedder(0)
	emb := newSharedEmbedder(lex)
	ctx := context.Background()
	texts := []string{"Urgent: where is my parcel?", "Urgent: where is my parcel!", "Prove that there are infinitely many primes"}
	first := make([][]float32, len(texts))
	for i, text := range texts {
		v, err := emb.embed(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		want := normalized(lex.Vector(text))
		if !slices.Equal(v, want) {
			t.Fatalf("%q: the shared vector differs from the embedder's", text)
		}
		first[i] = v
	}
	for i, text := range texts {
		v, err := emb.embed(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		if &v[0] != &first[i][0] {
			t.Errorf("%q: embedded again instead of taking the remembered vector", text)
		}
	}
	// Older texts make way for newer ones.
	for i := range lexicalRecent {
		if _, err := emb.embed(ctx, fmt.Sprintf("text %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	v, err := emb.embed(ctx, texts[0])
	if err != nil {
		t.Fatal(err)
	}
	if &v[0] == &first[0][0] || !slices.Equal(v, first[0]) {
		t.Errorf("a text pushed out was not embedded anew with the same answer")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := emb.embed(cancelled, texts[1]); err == nil {
		t.Error("a done context: no error")
	}
}
