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
// operation timed on its own so the p50 and p99 are reported (µs): a miss
// (the lookup of a key no replica holds, one Redis round trip, then the
// store of the answer, one pipelined round trip) and an exact hit held in
// the replica's index (no round trip), for the memory backend (the floor),
// the redis backend on a redis-server (single) and on a three-node Redis
// Cluster (cluster), both the benchmark's own, without persistence. Each
// iteration runs the three backends in an order that rotates, so a loaded
// machine slows them alike. An answer of 1 KiB with a 100-dim embedding, as respcache's
// BenchmarkStore.
func BenchmarkHotPath(b *testing.B) {
	value := make([]byte, 1024)
	emb := make([]float32, 100)
	const ns = "response_cache/v2/model=small/decision=general/recipe=default/epoch=0123456789abcdef"
	ctx := context.Background()
	names := []string{"memory", "single", "cluster"}
	backends := []respcache.Backend{
		respcache.NewMemory(respcache.Options{}),
		rediscache.Open(ctx, redistest.StartVolatileServer(b).Client(b), respcache.Options{}),
		rediscache.Open(ctx, redistest.StartCluster(b, 3).Client(b), respcache.Options{}),
	}
	for _, c := range backends {
		b.Cleanup(func() { c.Close() })
		if err := c.Store(ctx, ns, "k", value, time.Hour, emb); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	asked := 0
	b.Run("miss+store", func(b *testing.B) {
		lookups, stores := make([][]time.Duration, len(backends)), make([][]time.Duration, len(backends))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			asked++
			key := fmt.Sprintf("key-%d", asked)
			for j := range emb { // another question: random directions are far apart
				emb[j] = float32(rng.NormFloat64())
			}
			for j := range backends {
				g := (i + j) % len(backends)
				c := backends[g]
				t0 := time.Now()
				if _, ok, err := c.Lookup(ctx, ns, key, emb, 0.95); err != nil || ok {
					b.Fatalf("%s lookup: %v %v", names[g], ok, err)
				}
				t1 := time.Now()
				if err := c.Store(ctx, ns, key, value, time.Hour, emb); err != nil {
					b.Fatal(err)
				}
				lookups[g], stores[g] = append(lookups[g], t1.Sub(t0)), append(stores[g], time.Since(t1))
			}
		}
		b.StopTimer()
		for g, name := range names {
			report(b, name+"-lookup", lookups[g])
			report(b, name+"-store", stores[g])
		}
	})
	b.Run("hit", func(b *testing.B) {
		lookups := make([][]time.Duration, len(backends))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for j := range backends {
				g := (i + j) % len(backends)
				t0 := time.Now()
				if _, ok, err := backends[g].Lookup(ctx, ns, "k", nil, 0.95); err != nil || !ok {
					b.Fatalf("%s lookup: %v %v", names[g], ok, err)
				}
				lookups[g] = append(lookups[g], time.Since(t0))
			}
		}
		b.StopTimer()
		for g, name := range names {
			report(b, name+"-lookup", lookups[g])
		}
	})
}

func report(b *testing.B, what string, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2])/1e3, what+"-p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100])/1e3, what+"-p99-µs")
}
