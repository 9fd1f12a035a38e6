package retrieval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/storage"
)

// BenchmarkSearch searches 10k chunks of the router's embedding dimension
// through the library: a cache hit, a miss whose query embedding is
// memoised (Fresh), and a miss that embeds too.
func BenchmarkSearch(b *testing.B) {
	f := newFixture(b)
	vs := f.vectorStore("bench")
	rng := rand.New(rand.NewPCG(1, 2))
	dims := f.model.Dimensions()
	for file := range 10 {
		fl, err := f.store.CreateFile(f.ctx, storage.NewFile{Filename: fmt.Sprintf("f%d.md", file), Purpose: "assistants", MediaType: "text/markdown"}, strings.NewReader("x"), 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.store.AttachFile(f.ctx, vs.ID, fl.ID, nil, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}); err != nil {
			b.Fatal(err)
		}
		chunks := make([]storage.Chunk, 1000)
		for i := range chunks {
			v := make([]float32, dims)
			var n float64
			for j := range v {
				v[j] = float32(rng.NormFloat64())
				n += float64(v[j] * v[j])
			}
			for j := range v {
				v[j] /= float32(math.Sqrt(n))
			}
			chunks[i] = storage.Chunk{Index: i, Text: fmt.Sprintf("passage %d of file %d", i, file), Tokens: 5, Vector: v}
		}
		if err := f.store.CompleteFile(f.ctx, vs.ID, fl.ID, chunks); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cached", func(b *testing.B) {
		q := Query{Source: "bench", Text: "what is the refund policy?", K: 5}
		f.search(q)
		for b.Loop() {
			if res, err := f.lib.Search(f.ctx, q); err != nil || !res.Cached {
				b.Fatal(res.Cached, err)
			}
		}
	})
	b.Run("fresh", func(b *testing.B) {
		q := Query{Source: "bench", Text: "what is the refund policy?", K: 5, Fresh: true}
		for b.Loop() {
			if _, err := f.lib.Search(f.ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("embed", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := f.lib.Search(f.ctx, Query{Source: "bench", Text: fmt.Sprintf("question number %d about refunds", i), K: 5, Fresh: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
