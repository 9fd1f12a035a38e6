package rediscache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/respcache/cachetest"
	"github.com/junction-router/junction/internal/respcache/rediscache"
	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// TestOnCluster runs the backends' suite and the two-replica test against
// a real three-node Redis Cluster, and checks that the entries spread over
// the nodes and that a replica opened later loads (and a flush deletes)
// the entries of every node.
func TestOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	t.Run("Conformance", func(t *testing.T) {
		clients := map[*testing.T]*redisstate.Client{}
		cachetest.Run(t, func(t *testing.T, o respcache.Options) respcache.Backend {
			c, ok := clients[t]
			if !ok {
				c = cl.Client(t)
				clients[t] = c
			}
			return rediscache.Open(context.Background(), c, o)
		})
	})
	t.Run("ReplicasShareEntries", func(t *testing.T) { testReplicasShareEntries(t, cl.Client(t)) })
	t.Run("EntriesSpread", func(t *testing.T) {
		c := cl.Client(t)
		ctx := context.Background()
		a := rediscache.Open(ctx, c, respcache.Options{})
		defer a.Close()
		const n = 48
		for i := range n {
			if err := a.Store(ctx, "ns/x", fmt.Sprintf("k%d", i), []byte("v"), time.Minute, []float32{1, float32(i)}); err != nil {
				t.Fatal(err)
			}
		}
		entries := func() map[string]int { return cl.KeysPerNode(t, c.Prefix+"cache:e:") }
		nodes, total := 0, 0
		for _, k := range entries() {
			total += k
			if k > 0 {
				nodes++
			}
		}
		if total != n || nodes < 2 {
			t.Fatalf("%d entries in Redis on %d node(s) of 3, want %d on several: %v", total, nodes, n, entries())
		}
		late := rediscache.Open(ctx, c, respcache.Options{})
		defer late.Close()
		if _, held := late.Counts(); held != n {
			t.Fatalf("a replica opened later loaded %d entries of %d (the load scans every node)", held, n)
		}
		if _, _, err := late.Flush(respcache.Filter{NamespacePrefix: "ns/"}); err != nil {
			t.Fatal(err)
		}
		for node, k := range entries() {
			if k != 0 {
				t.Fatalf("after a flush node %s still holds %d entries", node, k)
			}
		}
	})
	// Last: one shard killed. Lookups and stores of keys on every shard
	// answer without an error and without waiting (a miss, or the
	// replica's own index), the failures are counted, and health says so.
	t.Run("ShardDown", func(t *testing.T) {
		c := cl.Client(t)
		ctx := context.Background()
		a := rediscache.Open(ctx, c, respcache.Options{})
		defer a.Close()
		cl.KillNode(cl.Addrs()[2])
		start := time.Now()
		for i := range 24 {
			key := fmt.Sprintf("down-%d", i)
			if _, ok, err := a.Lookup(ctx, "ns/down", key, nil, 0.9); ok || err != nil {
				t.Fatalf("lookup of %s with a shard down: %v %v, want a miss", key, ok, err)
			}
			if err := a.Store(ctx, "ns/down", key, []byte("v"), time.Minute, nil); err != nil {
				t.Fatalf("store of %s with a shard down: %v, want nil", key, err)
			}
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("24 lookups and stores with a shard down took %v", d)
		}
		if n := c.Errors(rediscache.Feature, "lookup") + c.Errors(rediscache.Feature, "store"); n < 1 {
			t.Fatalf("junction_state_errors_total{feature=response_cache} with a shard down: %v", n)
		}
		if _, err := a.Stats(0); err == nil {
			t.Fatal("stats with a shard down report no error (health would say ok)")
		}
	})
}

// TestOnTLSCluster runs the two-replica test (stores, exact and semantic
// lookups, eviction, invalidation and flush reaching the other replica
// through the stream) against a real three-node Redis Cluster that speaks
// TLS only (to clients and on its bus), requires client certificates and
// a password, with entries on several nodes, each reached over TLS.
func TestOnTLSCluster(t *testing.T) {
	t.Setenv("JUNCTION_TEST_REDIS_CLUSTER_PASSWORD", "cache-cluster-s3cret")
	cl := redistest.StartClusterWith(t, 3, redistest.Options{TLS: true, ClientCerts: "yes", PasswordEnv: "JUNCTION_TEST_REDIS_CLUSTER_PASSWORD"})
	c := cl.Client(t)
	testReplicasShareEntries(t, c)
	ctx := context.Background()
	a := rediscache.Open(ctx, c, respcache.Options{})
	defer a.Close()
	const n = 16
	for i := range n {
		if err := a.Store(ctx, "ns/tls", fmt.Sprintf("k%d", i), []byte("v"), time.Minute, nil); err != nil {
			t.Fatal(err)
		}
	}
	nodes := 0
	for _, k := range cl.KeysPerNode(t, c.Prefix+"cache:e:ns/tls") {
		if k > 0 {
			nodes++
		}
	}
	b := rediscache.Open(ctx, c, respcache.Options{})
	defer b.Close()
	for i := range n {
		if e, ok, err := b.Lookup(ctx, "ns/tls", fmt.Sprintf("k%d", i), nil, 0.9); err != nil || !ok || string(e.Value) != "v" {
			t.Fatalf("lookup of k%d on another replica: %q %v %v", i, e.Value, ok, err)
		}
	}
	if nodes < 2 {
		t.Fatalf("%d entries on %d node(s) of 3, want several", n, nodes)
	}
}
