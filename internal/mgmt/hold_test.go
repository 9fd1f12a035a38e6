package mgmt_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// gatedEmbedder names its generation and, once armed, blocks each call until
// released.
type gatedEmbedder struct {
	name    string
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	inner   signal.Embedder
}

func (g *gatedEmbedder) Method() string { return g.name }

func (g *gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if g.armed.Load() {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.inner.Embed(ctx, texts)
}

// A typed model call keeps the generation it started on even when a reload
// activates another one meanwhile.
func TestModelCallHoldsItsGeneration(t *testing.T) {
	var mu sync.Mutex
	var embedders []*gatedEmbedder
	compile := func(_ context.Context, doc *recipes.Document, hash string) (*engine.Generation, error) {
		mu.Lock()
		defer mu.Unlock()
		emb := &gatedEmbedder{name: fmt.Sprintf("gen-%d", len(embedders)+1), entered: make(chan struct{}, 1), release: make(chan struct{}), inner: signal.HashedEmbedder()}
		embedders = append(embedders, emb)
		return engine.Compile(doc, hash, engine.Options{Plugins: native.Stage(), Models: signal.Models{Embedder: emb}})
	}
	e := newEnvWith(t, copyBase(t), compile)
	first := embedders[0]
	first.armed.Store(true)
	done := make(chan reply, 1)
	go func() {
		done <- e.call("POST", "/api/v1/diagnostics/models/embeddings", map[string]any{"recipe": "default", "binding": "embedding", "texts": []string{"hello"}})
	}()
	<-first.entered
	must(t, e.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "big"}}}, "If-Match", e.etag()), 200)
	if got := e.cfg.Runtime().Current().Models().Embedder.Method(); got == "gen-1" {
		t.Fatal("the reload did not activate a new generation")
	}
	close(first.release)
	r := must(t, <-done, 200).json(t)
	if m := r["binding"].(map[string]any)["method"]; m != "gen-1" {
		t.Fatalf("the call finished on %v, not the generation it started on", m)
	}
}
