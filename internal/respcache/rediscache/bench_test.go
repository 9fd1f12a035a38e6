package rediscache_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/ratelimit/redisstore"
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

// BenchmarkStoresAtRate is what a replica's stores cost when they come at a
// rate, as a miss's do under load (one a millisecond, 1000 a second): one
// backend on a redis-server of its own, whose follower reads the change
// stream its own stores wake. It reports per store the stream reads (XREAD
// calls, from INFO commandstats: the follower's wake-ups), the CPU time of
// this process (the stores and the follower) and redis-server's (INFO
// cpu), µs. The reads are the load-independent figure; the CPU times are
// a loaded machine's too.
func BenchmarkStoresAtRate(b *testing.B) {
	c := redistest.StartVolatileServer(b).Client(b)
	ctx := context.Background()
	be := rediscache.Open(ctx, c, respcache.Options{})
	b.Cleanup(func() { be.Close() })
	value := make([]byte, 1024)
	serverCPU := func() float64 {
		var user, sys float64
		for _, l := range strings.Split(c.Info(ctx, "cpu").Val(), "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_cpu_user:"); ok {
				user, _ = strconv.ParseFloat(v, 64)
			}
			if v, ok := strings.CutPrefix(l, "used_cpu_sys:"); ok {
				sys, _ = strconv.ParseFloat(v, 64)
			}
		}
		return user + sys
	}
	ownCPU := func() float64 {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	srv0, own0 := serverCPU(), ownCPU()
	next := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := be.Store(ctx, "ns", "k"+strconv.Itoa(i), value, time.Hour, nil); err != nil {
			b.Fatal(err)
		}
		next = next.Add(time.Millisecond)
		time.Sleep(time.Until(next))
	}
	b.StopTimer()
	srv, own := serverCPU()-srv0, ownCPU()-own0
	_, after, _ := strings.Cut(c.Info(ctx, "commandstats").Val(), "cmdstat_xread:calls=")
	calls, _, _ := strings.Cut(after, ",")
	reads, _ := strconv.Atoi(calls) // 0 when no read ended yet
	b.ReportMetric(float64(reads)/float64(b.N), "xreads/store")
	b.ReportMetric(own*1e6/float64(b.N), "cpu-µs/store")
	b.ReportMetric(srv*1e6/float64(b.N), "redis-cpu-µs/store")
}

// BenchmarkCarriedLookup is the client side of a request's lookup on one
// redis-server with the rate limiter's take held back for it
// (redisstate.Deferred), as the gateway runs them: miss, the take and the
// GET of a key no replica holds in one pipeline; hit, a key the index
// holds, so the take goes alone. Its allocations per request (-benchmem)
// are the figure; its time is the machine's.
func BenchmarkCarriedLookup(b *testing.B) {
	c := redistest.StartVolatileServer(b).Client(b)
	cache := rediscache.Open(context.Background(), c, respcache.Options{})
	b.Cleanup(func() { cache.Close() })
	limits := redisstore.New(c, true)
	takes := []ratelimit.Take{{Bucket: ratelimit.Bucket{ID: "model=m", Capacity: 1 << 40, Window: time.Minute}, N: 1}}
	const ns = "response_cache/v2/model=small/decision=general/recipe=default/epoch=0123456789abcdef"
	ctx := context.Background()
	if err := cache.Store(ctx, ns, "held", make([]byte, 1024), time.Hour, nil); err != nil {
		b.Fatal(err)
	}
	lookup := func(b *testing.B, key string, hit bool) {
		lv := make([]ratelimit.Level, 1)
		rctx, send := limits.Defer(ctx, time.Now(), takes, lv)
		if _, ok, err := cache.Lookup(rctx, ns, key, nil, 0.95); err != nil || ok != hit {
			b.Fatalf("lookup of %s: %v %v", key, ok, err)
		}
		if pass, err := send.Send(); !pass || err != nil {
			b.Fatal(pass, err)
		}
	}
	b.Run("miss", func(b *testing.B) {
		keys := make([]string, b.N)
		for i := range keys {
			keys[i] = "absent-" + strconv.Itoa(i)
		}
		b.ResetTimer()
		for i := range b.N {
			lookup(b, keys[i], false)
		}
	})
	b.Run("hit", func(b *testing.B) {
		for range b.N {
			lookup(b, "held", true)
		}
	})
}

// BenchmarkMissPath is a request's miss as the gateway runs it, on the
// shared test Redis (redistest.New: no redis-server of its own, so no child
// process, whose exit signal aborts callgrind): the rate limiter's take
// carried with the GET of a key no replica holds, then the store of the
// answer, each under a deadline of its own as the plugin host's calls are
// (hostapi.DefaultCallTimeout), with this replica's follower reading the
// changes back. Its
// allocations per request (-benchmem) and instructions (callgrind, a fixed
// -test.benchtime Nx, GODEBUG=asyncpreemptoff=1) are the figures.
func BenchmarkMissPath(b *testing.B) {
	c := redistest.New(b)
	ctx := context.Background()
	cache := rediscache.Open(ctx, c, respcache.Options{})
	b.Cleanup(func() { cache.Close() })
	limits := redisstore.New(c, true)
	takes := []ratelimit.Take{{Bucket: ratelimit.Bucket{ID: "model=m", Capacity: 1 << 40, Window: time.Minute}, N: 1}}
	const ns = "response_cache/v2/model=small/decision=general/recipe=default/epoch=0123456789abcdef"
	value := make([]byte, 1024)
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = "absent-" + strconv.Itoa(i)
	}
	lv := make([]ratelimit.Level, 1)
	b.ResetTimer()
	for i := range b.N {
		rctx, send := limits.Defer(ctx, time.Now(), takes, lv)
		call, cancel := context.WithTimeout(rctx, hostapi.DefaultCallTimeout)
		if _, ok, err := cache.Lookup(call, ns, keys[i], nil, 0.95); err != nil || ok {
			b.Fatalf("lookup of %s: %v %v", keys[i], ok, err)
		}
		cancel()
		if pass, err := send.Send(); !pass || err != nil {
			b.Fatal(pass, err)
		}
		call, cancel = context.WithTimeout(context.WithoutCancel(rctx), hostapi.DefaultCallTimeout)
		if err := cache.Store(call, ns, keys[i], value, time.Hour, nil); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
