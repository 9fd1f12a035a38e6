package deploy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/internal/metrics"
)

// counted is the lexical embedder (at embed-glove's width) counting the texts it is asked for: how
// a test sees which calls reached the model behind a memo.
type counted struct {
	signal.Embedder
	texts atomic.Int64
}

func (c *counted) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts.Add(int64(len(texts)))
	return c.Embedder.Embed(ctx, texts)
}

func newCountedMemo() (*embedMemo, *counted, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	c := &counted{Embedder: lexical.NewHashedEmbedder(defaultmodels.Dim)}
	return newEmbedMemo(c, metrics.NewLocalModels(reg)), c, reg
}

// A single text is embedded once and answered from the memo after, with
// the model's vector, which the caller may change without changing the
// memo's; several texts always reach the model; the metrics count both.
func TestEmbedMemoAnswersRepeats(t *testing.T) {
	ctx := context.Background()
	m, c, reg := newCountedMemo()
	want, err := c.Embedder.Embed(ctx, []string{"how do I get a refund"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		vs, err := m.Embed(ctx, []string{"how do I get a refund"})
		if err != nil || len(vs) != 1 || !slices.Equal(vs[0], want[0]) {
			t.Fatalf("call %d: %v, vector equal to the model's: %v", i, err, err == nil && slices.Equal(vs[0], want[0]))
		}
		vs[0][0] = 42 // the caller's to change
	}
	if n := c.texts.Load(); n != 1 {
		t.Fatalf("three calls of one text reached the model %d times", n)
	}
	if hit, miss := series(t, reg, "router_local_model_embed_memo_total", "hit"), series(t, reg, "router_local_model_embed_memo_total", "miss"); hit != 2 || miss != 1 {
		t.Fatalf("memo metrics: %v hits, %v misses; want 2, 1", hit, miss)
	}
	if _, err := m.Embed(ctx, []string{"how do I get a refund", "update my credit card"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Embed(ctx, []string{"update my credit card"}); err != nil {
		t.Fatal(err)
	}
	if n := c.texts.Load(); n != 4 {
		t.Fatalf("after a call of two texts and one of a text only that call had: %d texts reached the model, want 4", n)
	}
	// The same text differing in one byte is another text.
	if _, err := m.Embed(ctx, []string{"how do I get a refund?"}); err != nil || c.texts.Load() != 5 {
		t.Fatalf("a different text was answered from the memo (%v)", err)
	}
}

// The memo keeps at most memoEntries texts and memoBytes bytes, dropping
// the least recently used first, and keeps no text too long to share it.
func TestEmbedMemoBounds(t *testing.T) {
	ctx := context.Background()
	m, c, _ := newCountedMemo()
	embed := func(text string) {
		t.Helper()
		if _, err := m.Embed(ctx, []string{text}); err != nil {
			t.Fatal(err)
		}
	}
	embed("text 0")
	for i := 1; i <= memoEntries+50; i++ {
		embed(fmt.Sprint("text ", i))
		embed("text 0") // kept recent: survives
	}
	if n, _ := m.len(); n != memoEntries {
		t.Fatalf("%d entries after %d texts, want %d", n, memoEntries+51, memoEntries)
	}
	before := c.texts.Load()
	embed("text 0")
	embed(fmt.Sprint("text ", memoEntries+50))
	if c.texts.Load() != before {
		t.Fatal("the recent texts were dropped")
	}
	embed("text 1")
	if c.texts.Load() != before+1 {
		t.Fatal("the least recently used text was kept beyond the bound")
	}

	long := strings.Repeat("a long question ", 1<<10) // 16 KiB
	for i := range 200 {
		embed(fmt.Sprint(i, long))
		if _, bytes := m.len(); bytes > memoBytes {
			t.Fatalf("%d bytes held, bound %d", bytes, memoBytes)
		}
	}
	if n, _ := m.len(); n >= memoBytes/len(long) {
		t.Fatalf("%d entries of 16 KiB within %d bytes", n, memoBytes)
	}
	huge := strings.Repeat("x", memoBytes/8)
	before = c.texts.Load()
	embed(huge)
	embed(huge)
	if c.texts.Load() != before+2 {
		t.Fatal("a text of an eighth of the memo's bytes was kept")
	}
}

// Concurrent callers of overlapping texts each get the model's vector for
// their text (run with -race: the memo's vectors are not shared with them).
func TestEmbedMemoConcurrent(t *testing.T) {
	ctx := context.Background()
	m, c, _ := newCountedMemo()
	const texts = 300 // more than the memo holds: evictions run beside hits
	want := make([][]float32, texts)
	for i := range want {
		vs, err := c.Embedder.Embed(ctx, []string{fmt.Sprint("question number ", i)})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = vs[0]
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 2000 {
				i := (j*7 + g*13) % texts
				if j%3 == 0 {
					i %= 20 // a hot set, answered from the memo
				}
				vs, err := m.Embed(ctx, []string{fmt.Sprint("question number ", i)})
				if err != nil || len(vs) != 1 || !slices.Equal(vs[0], want[i]) {
					errs <- fmt.Errorf("text %d: %v, or another vector", i, err)
					return
				}
				vs[0][0]++ // a caller changing its vector
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := c.texts.Load(); n >= 8*2000 {
		t.Fatalf("every one of %d calls reached the model", n)
	}
}

// Every user of the loaded embedding model shares its memo: the signals of
// two generations (their leases) and the on-demand users (the plugin host,
// stored data). A released model takes its memo with it.
func TestLoaderSharesEmbedMemo(t *testing.T) {
	orttest.Library(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	l, err := NewLoader(ModelsONNX, signal.Models{}, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	count := func() (hit, miss float64) {
		return series(t, reg, "router_local_model_embed_memo_total", "hit"), series(t, reg, "router_local_model_embed_memo_total", "miss")
	}
	g1, err := l.Acquire(ctx, Need{Embedder: true})
	if err != nil {
		t.Fatal(err)
	}
	g2, err := l.Acquire(ctx, Need{Embedder: true})
	if err != nil {
		t.Fatal(err)
	}
	if g1.Models.Embedder.Method() != defaultmodels.MethodEmbedder {
		t.Fatalf("a lease's embedder: %s", g1.Models.Embedder.Method())
	}
	demand := l.OnDemand().Embedder
	const text = "I was charged twice for my order"
	first, err := g1.Models.Embedder.Embed(ctx, []string{text})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []signal.Embedder{demand, g2.Models.Embedder, demand} {
		vs, err := e.Embed(ctx, []string{text})
		if err != nil || !slices.Equal(vs[0], first[0]) {
			t.Fatalf("%v, or another vector", err)
		}
	}
	if hit, miss := count(); hit != 3 || miss != 1 {
		t.Fatalf("one text embedded by a generation, then by the on-demand embedder and another generation: %v hits, %v misses; want 3, 1", hit, miss)
	}
	g1.Release()
	g2.Release()
	if got := l.Loaded(); len(got) != 0 {
		t.Fatalf("after the last release: %v", got)
	}
	// Loaded again (on demand): a new model, a new memo.
	if _, err := demand.Embed(ctx, []string{text}); err != nil {
		t.Fatal(err)
	}
	if hit, miss := count(); hit != 3 || miss != 2 {
		t.Fatalf("the reloaded model answered from the released one's memo: %v hits, %v misses", hit, miss)
	}
}

// A failed call is not remembered: the next call of the text runs the model.
func TestEmbedMemoForgetsFailures(t *testing.T) {
	m, c, _ := newCountedMemo()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(canceled, []string{"update my credit card"}); err == nil {
		t.Fatal("a canceled call succeeded")
	}
	for range 2 {
		if vs, err := m.Embed(context.Background(), []string{"update my credit card"}); err != nil || len(vs) != 1 {
			t.Fatalf("after a failure: %v", err)
		}
	}
	if n := c.texts.Load(); n != 2 {
		t.Fatalf("a failure, a call and a repeat reached the model for %d texts, want 2", n)
	}
}

// BenchmarkEmbedMemoHit is a repeat of a text at embed-glove's width (the
// model's call: 25-40 µs, see docs/benchmarks.md), with 256 texts held.
func BenchmarkEmbedMemoHit(b *testing.B) {
	ctx := context.Background()
	m, _, _ := newCountedMemo()
	for i := range memoEntries {
		if _, err := m.Embed(ctx, []string{fmt.Sprint("What is the capital of country number ", i, " please?")}); err != nil {
			b.Fatal(err)
		}
	}
	text := fmt.Sprint("What is the capital of country number ", 7, " please?")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := m.Embed(ctx, []string{text}); err != nil {
			b.Fatal(err)
		}
	}
}
