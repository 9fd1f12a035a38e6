package signal

import (
	"context"
	"testing"
	"time"

	"github.com/junction-router/junction/recipes"
)

// Outside the engine a model call that ignores its context is abandoned at
// the deadline (it runs on a goroutine of its own); under Detached it runs
// on the evaluating goroutine, whose caller abandons that one instead, so
// the Set waits for the answer and uses it.
func TestDetachedModelCalls(t *testing.T) {
	const delay = 60 * time.Millisecond
	clf := &fakeClassifier{dist: []LabelScore{{Label: "math", Score: 0.9}}, delay: delay}
	emb := unitEmbedder()
	emb.delay = delay
	sets := compileSets(t, recipes.Signals{
		Domains:    []recipes.DomainSignal{{Name: "math", MMLUCategories: []string{"math"}}},
		Embeddings: []recipes.EmbeddingSignal{{Name: "near", Candidates: []string{"A"}, Threshold: 0.5}},
	}, Models{Domain: clf, Embedder: emb})
	if len(sets) != 2 {
		t.Fatalf("compiled %d sets, want 2", len(sets))
	}
	for _, s := range sets {
		ms, ok := s.(ModelSet)
		if !ok || !ms.CallsModel() {
			t.Fatalf("%s set is not a ModelSet that calls a model", s.Kind())
		}
		for _, detached := range []bool{false, true} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			if detached {
				ctx = Detached(ctx)
			}
			start := time.Now()
			rs := s.Evaluate(ctx, &Input{Text: "text " + s.Kind() + map[bool]string{true: " detached"}[detached], UserTexts: []string{"text"}})
			took := time.Since(start)
			cancel()
			switch {
			case !detached && (rs[0].Error != CodeDeadline || took >= delay):
				t.Errorf("%s: %+v after %v; want the deadline error before the call's %v", s.Kind(), rs[0], took, delay)
			case detached && (rs[0].Error != "" || took < delay):
				t.Errorf("%s detached: %+v after %v; want the call's answer after %v", s.Kind(), rs[0], took, delay)
			}
		}
	}
	if !IsDetached(Detached(context.Background())) || IsDetached(context.Background()) {
		t.Fatal("IsDetached does not report Detached's mark")
	}
}
