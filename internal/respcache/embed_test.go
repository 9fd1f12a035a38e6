package respcache_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/internal/respcache"
)

// counting is the hashed embedder, counting its calls and failing the texts
// in fail.
type counting struct {
	*lexical.HashedEmbedder
	mu    sync.Mutex
	calls int
	fail  string
}

func (c *counting) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	if slices.Contains(texts, c.fail) {
		return nil, errors.New("the model failed")
	}
	return c.HashedEmbedder.Embed(ctx, texts)
}

// TestMemoEmbedsATextOnce: the second embedding of a text (the cache's
// after the routing signal's) does not call the model and gives the same
// vector, as a copy; several texts at once and failures pass through;
// the memo forgets the oldest texts past its size; concurrent use is safe
// (-race).
func TestMemoEmbedsATextOnce(t *testing.T) {
	ctx := context.Background()
	base := &counting{HashedEmbedder: lexical.NewHashedEmbedder(64), fail: "broken"}
	m := respcache.Memo(base)
	if m.Method() != base.Method() {
		t.Fatalf("method %q", m.Method())
	}
	first, err := m.Embed(ctx, []string{"What is the capital of France?"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.Embed(ctx, []string{"What is the capital of France?"})
	if err != nil || base.calls != 1 || !slices.Equal(first[0], again[0]) {
		t.Fatalf("again: %d calls, equal %v, %v", base.calls, slices.Equal(first[0], again[0]), err)
	}
	again[0][0] = 42 // a caller's change stays its own
	if v, _ := m.Embed(ctx, []string{"What is the capital of France?"}); v[0][0] == 42 {
		t.Fatal("a caller's change reached the memo")
	}
	if v, _ := m.Embed(ctx, []string{"What is the capital of Spain?"}); base.calls != 2 || slices.Equal(v[0], first[0]) {
		t.Fatalf("another text: %d calls", base.calls)
	}
	if _, err := m.Embed(ctx, []string{"a", "b"}); err != nil || base.calls != 3 {
		t.Fatalf("two texts: %d calls, %v", base.calls, err)
	}
	for range 2 {
		if _, err := m.Embed(ctx, []string{"broken"}); err == nil {
			t.Fatal("a failure was not reported")
		}
	}
	if base.calls != 5 {
		t.Fatalf("a failure was kept: %d calls", base.calls)
	}
	for i := range 100 { // past the memo's size
		if _, err := m.Embed(ctx, []string{fmt.Sprint("text ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	calls := base.calls
	if _, _ = m.Embed(ctx, []string{"What is the capital of France?"}); base.calls != calls+1 {
		t.Fatal("an old text is still kept")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if _, err := m.Embed(ctx, []string{fmt.Sprint("q", (g+i)%80)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkMemoHit is the cache's embedding of a text the routing signal
// just embedded (the default GloVe model's call: 32-41 µs, see
// docs/benchmarks.md).
func BenchmarkMemoHit(b *testing.B) {
	ctx := context.Background()
	m := respcache.Memo(lexical.NewHashedEmbedder(100))
	text := []string{"What is the capital of France, and how many people live there?"}
	if _, err := m.Embed(ctx, text); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := m.Embed(ctx, text); err != nil {
			b.Fatal(err)
		}
	}
}
