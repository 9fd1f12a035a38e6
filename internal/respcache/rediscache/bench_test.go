package rediscache_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/respcache/rediscache"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// BenchmarkHotPath is what a request pays the response cache, each
// operation timed on its own so the p50 and p99 are reported (ns): a miss
// (the lookup of a key no replica holds, one Redis round trip, then the
// store of the answer, one pipelined round trip), an exact hit held in the
// replica's index (no round trip), and the memory backend's miss and store
// for the floor. An answer of 1 KiB with a 100-dim embedding, as
// respcache's BenchmarkStore.
func BenchmarkHotPath(b *testing.B) {
	value := make([]byte, 1024)
	emb := make([]float32, 100)
	for i := range emb {
		emb[i] = float32(i)
	}
	const ns = "response_cache/v2/model=small/decision=general/recipe=default/epoch=0123456789abcdef"
	ctx := context.Background()
	open := map[string]func(b *testing.B) respcache.Backend{
		"memory": func(*testing.B) respcache.Backend { return respcache.NewMemory(respcache.Options{}) },
		"redis": func(b *testing.B) respcache.Backend {
			return rediscache.Open(ctx, redistest.New(b), respcache.Options{})
		},
	}
	for _, backend := range []string{"memory", "redis"} {
		b.Run(backend+"/miss+store", func(b *testing.B) {
			c := open[backend](b)
			defer c.Close()
			lookups, stores := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			rng := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				key := fmt.Sprintf("key-%d", i)
				for j := range emb { // another question: random directions are far apart
					emb[j] = float32(rng.NormFloat64())
				}
				t0 := time.Now()
				if _, ok, err := c.Lookup(ctx, ns, key, emb, 0.95); err != nil || ok {
					b.Fatalf("lookup: %v %v", ok, err)
				}
				t1 := time.Now()
				if err := c.Store(ctx, ns, key, value, time.Hour, emb); err != nil {
					b.Fatal(err)
				}
				lookups, stores = append(lookups, t1.Sub(t0)), append(stores, time.Since(t1))
			}
			b.StopTimer()
			report(b, "lookup", lookups)
			report(b, "store", stores)
		})
		b.Run(backend+"/hit", func(b *testing.B) {
			c := open[backend](b)
			defer c.Close()
			if err := c.Store(ctx, ns, "k", value, time.Hour, emb); err != nil {
				b.Fatal(err)
			}
			lookups := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, ok, err := c.Lookup(ctx, ns, "k", emb, 0.95); err != nil || !ok {
					b.Fatalf("lookup: %v %v", ok, err)
				}
				lookups = append(lookups, time.Since(t0))
			}
			b.StopTimer()
			report(b, "lookup", lookups)
		})
	}
}

func report(b *testing.B, what string, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), what+"-p50-ns")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds()), what+"-p99-ns")
}
