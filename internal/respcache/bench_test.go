package respcache_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/respcache/sqlitecache"
)

// BenchmarkRequestScope is what the data plane adds to a request whose
// decision has plugins: the memoised scope, the request's flush state
// (ForRequest) and the context value.
func BenchmarkRequestScope(b *testing.B) {
	doc := exampleDoc(b, nil)
	var e respcache.Epochs
	ctx := context.Background()
	b.Run("scope", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = respcache.WithScope(ctx, e.Scope(doc, "default", "general", "small"))
		}
	})
	b.Run("scope+request", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = respcache.WithScope(ctx, e.Scope(doc, "default", "general", "small").ForRequest())
		}
	})
}

// BenchmarkStore stores an answer of 1 KiB with a 100-dim embedding: in
// memory, and in the embedded file (written through, one transaction).
func BenchmarkStore(b *testing.B) {
	value := make([]byte, 1024)
	emb := make([]float32, 100)
	for i := range emb {
		emb[i] = float32(i)
	}
	for _, backend := range []string{"memory", "embedded"} {
		b.Run(backend, func(b *testing.B) {
			var c respcache.Backend = respcache.NewMemory(respcache.Options{})
			if backend == "embedded" {
				var err error
				if c, err = sqlitecache.Open(context.Background(), filepath.Join(b.TempDir(), sqlitecache.File), respcache.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			defer c.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := c.Store(ctx, "response_cache/v2/model=small/decision=general/recipe=default/epoch=0123456789abcdef", fmt.Sprintf("key-%d", i), value, time.Hour, emb); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
