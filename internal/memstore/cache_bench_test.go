package memstore

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/lexical"
)

func benchCache(b *testing.B, n, dim int) (*Cache, [][]float32) {
	b.Helper()
	r := rand.New(rand.NewSource(1))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	c := &Cache{MaxEntries: n}
	ctx := context.Background()
	for i := 0; i < n; i++ {
		if err := c.Store(ctx, "ns", fmt.Sprintf("key-%d", i), []byte("value"), time.Hour, vec()); err != nil {
			b.Fatal(err)
		}
	}
	qs := make([][]float32, 64)
	for i := range qs {
		qs[i] = vec()
	}
	return c, qs
}

// BenchmarkCacheLookupSemantic is a semantic miss (no entry within the
// threshold) over 10,000 live entries: the full scan every miss pays.
func BenchmarkCacheLookupSemantic(b *testing.B) {
	for _, dim := range []int{100, 1024} {
		b.Run(fmt.Sprintf("entries=10000/dim=%d", dim), func(b *testing.B) {
			c, qs := benchCache(b, 10000, dim)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, ok, err := c.Lookup(ctx, "ns", "absent", qs[i%len(qs)], 0.99); ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkCacheLookupExact is an exact hit among 10,000 entries.
func BenchmarkCacheLookupExact(b *testing.B) {
	c, _ := benchCache(b, 10000, 100)
	ctx := context.Background()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i*97)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, err := c.Lookup(ctx, "ns", keys[i%len(keys)], nil, 0); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkCacheLookupExactMiss is an exact miss among 10,000 entries: what
// an exact-mode lookup of a new question costs the cache.
func BenchmarkCacheLookupExactMiss(b *testing.B) {
	c, _ := benchCache(b, 10000, 100)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, err := c.Lookup(ctx, "ns", "absent", nil, 0); ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkCacheLookupSemanticCrowded is BenchmarkGatewayCacheMiss's lookup
// alone: 10,000 entries of one template ("What is the capital of X
// please?", a new word each) embedded by the harness's hashed 1,024-dim
// embedder, in one namespace (same context, same slots), and a new question
// looked up at the plugin's default threshold (0.9). Its nearest entries
// score about 0.9 (the template): the crowded case for the sketch search,
// where every entry's sketch is near the query's.
func BenchmarkCacheLookupSemanticCrowded(b *testing.B) {
	emb := lexical.NewHashedEmbedder(1024)
	word := func(i int) string {
		var buf []byte
		for i++; i > 0; i /= 26 {
			buf = append(buf, byte('a'+i%26))
		}
		return string(buf) + "land"
	}
	ask := func(i int) []float32 { return emb.Vector("What is the capital of " + word(i) + " please?") }
	c := &Cache{MaxEntries: 10000}
	ctx := context.Background()
	for i := 0; i < 10000; i++ {
		if err := c.Store(ctx, "ns", fmt.Sprint(i), []byte("value"), time.Hour, ask(i)); err != nil {
			b.Fatal(err)
		}
	}
	qs := make([][]float32, 64)
	for i := range qs {
		qs[i] = ask(20000 + i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := c.Lookup(ctx, "ns", "absent", qs[i%len(qs)], 0.9); err != nil {
			b.Fatal(err)
		}
	}
}
