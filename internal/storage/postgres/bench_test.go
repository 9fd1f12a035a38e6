package postgres

import (
	"context"
	"github.com/junction-router/junction/internal/storage/postgres/pgtest"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
)

// BenchmarkBackends compares the embedded and the PostgreSQL backend on
// one store of 5k chunks (100 dimensions, 50 chunks a file): a vector
// search, a hybrid search, and an ingest commit (attach a file, then
// CompleteFile with its 50 chunks).
func BenchmarkBackends(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) storage.Store
	}{
		{"sqlite", func(b *testing.B) storage.Store {
			s, err := sqlite.Open(context.Background(), b.TempDir(), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"postgres", func(b *testing.B) storage.Store { return openTest(b, pgtest.Schema(b)) }},
	}
	const dim, perFile, files = 100, 50, 100
	words := strings.Fields("library opening hours sunday loan renewal card fines study rooms printing wifi archive catalogue")
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			s := be.open(b)
			defer s.Close()
			r := rand.New(rand.NewPCG(1, 2))
			vec := func() []float32 {
				v := make([]float32, dim)
				for i := range v {
					v[i] = r.Float32()*2 - 1
				}
				return v
			}
			chunks := func() []storage.Chunk {
				cs := make([]storage.Chunk, perFile)
				for i := range cs {
					text := words[r.IntN(len(words))] + " " + words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]
					cs[i] = storage.Chunk{Index: i, Text: text, Tokens: 3, Vector: vec()}
				}
				return cs
			}
			vs, err := s.CreateVectorStore(ctx, storage.NewVectorStore{EmbeddingModel: "m", Dimensions: dim})
			if err != nil {
				b.Fatal(err)
			}
			ingest := func() {
				f, err := s.CreateFile(ctx, storage.NewFile{Filename: "f.txt", Purpose: "assistants"}, strings.NewReader("x"), 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.AttachFile(ctx, vs.ID, f.ID, nil, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}); err != nil {
					b.Fatal(err)
				}
				if err := s.CompleteFile(ctx, vs.ID, f.ID, chunks()); err != nil {
					b.Fatal(err)
				}
			}
			for range files {
				ingest()
			}
			q := storage.Query{StoreIDs: []string{vs.ID}, Vector: vec(), K: 10}
			b.Run("search", func(b *testing.B) {
				for b.Loop() {
					if _, err := s.Search(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
			})
			q.Text = "library opening hours on sunday"
			b.Run("hybrid", func(b *testing.B) {
				for b.Loop() {
					if _, err := s.Search(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("ingest", func(b *testing.B) {
				for b.Loop() {
					ingest()
				}
			})
		})
	}
}
