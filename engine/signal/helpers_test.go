package signal

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/recipes"
)

// testDetector is built once for the whole test binary: lingua's models take
// a fraction of a second to load.
var testDetector = sync.OnceValues(func() (*LanguageDetector, error) { return NewLanguageDetector() })

func detector(t testing.TB) *LanguageDetector {
	t.Helper()
	d, err := testDetector()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func compileSets(t testing.TB, rs recipes.Signals, models Models) []Set {
	t.Helper()
	sets, err := CompileWith(context.Background(), rs, nil, models, Options{Language: detector(t)})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return sets
}

func compileOne(t testing.TB, rs recipes.Signals, models Models) Set {
	t.Helper()
	sets := compileSets(t, rs, models)
	if len(sets) != 1 {
		t.Fatalf("compiled %d sets, want 1", len(sets))
	}
	return sets[0]
}

func byName(rs []Result) map[string]Result {
	m := make(map[string]Result, len(rs))
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

func evalText(s Set, text string) []Result {
	return s.Evaluate(context.Background(), &Input{Text: text, UserTexts: []string{text}, AllTexts: []string{text}})
}

func boolPtr(b bool) *bool { return &b }

// fakeClassifier answers with a fixed distribution (or fn's), optionally
// after a delay that it may or may not cut short when ctx is done.
type fakeClassifier struct {
	dist     []LabelScore
	fn       func(text string) []LabelScore
	delay    time.Duration
	honorCtx bool
	err      error
	calls    atomic.Int32
}

func (f *fakeClassifier) Method() string { return "fake:classifier" }

func (f *fakeClassifier) Classify(ctx context.Context, texts []string) ([][]LabelScore, error) {
	f.calls.Add(1)
	if f.delay > 0 {
		if f.honorCtx {
			select {
			case <-time.After(f.delay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		} else {
			time.Sleep(f.delay)
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	out := make([][]LabelScore, len(texts))
	for i, t := range texts {
		if f.fn != nil {
			out[i] = f.fn(t)
		} else {
			out[i] = f.dist
		}
	}
	return out, nil
}

// fakeEmbedder maps known texts to given vectors (others to the zero
// vector) and counts calls.
type fakeEmbedder struct {
	vecs  map[string][]float32
	dims  int
	delay time.Duration
	err   error
	calls atomic.Int32
	texts atomic.Int32
}

func (f *fakeEmbedder) Method() string { return "fake:embedder" }

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.calls.Add(1)
	f.texts.Add(int32(len(texts)))
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if f.err != nil {
		return nil, f.err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if v, ok := f.vecs[t]; ok {
			out[i] = v
		} else {
			out[i] = make([]float32, f.dims)
		}
	}
	return out, nil
}

var errBoom = errors.New("boom")

func contextCancelled() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}
