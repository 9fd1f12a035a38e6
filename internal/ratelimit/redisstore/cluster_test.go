package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/ratelimit/redisstore"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// TestOnCluster runs the store's tests against a real three-node Redis
// Cluster: a take from two buckets is one script, so their keys must share
// a slot (the cluster refuses the script otherwise).
func TestOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	t.Run("ConcurrentTakesAdmitExactlyTheLimit", func(t *testing.T) { testConcurrentTakesAdmitExactlyTheLimit(t, cl.Client(t)) })
	t.Run("AllOrNoneAndRefill", func(t *testing.T) { testAllOrNoneAndRefill(t, cl.Client(t)) })
	// Last: the shard holding the buckets killed. A take fails open or
	// closed as configured, at once, and is counted; none is an error.
	t.Run("ShardDown", func(t *testing.T) {
		c := cl.Client(t)
		ctx := context.Background()
		node, err := c.UniversalClient.(*redis.ClusterClient).MasterForKey(ctx, c.Group("rl")+":x")
		if err != nil {
			t.Fatal(err)
		}
		cl.KillNode(node.Options().Addr)
		b := ratelimit.Bucket{ID: "x", Capacity: 100, Window: time.Second}
		lv := make([]ratelimit.Level, 1)
		for _, open := range []bool{true, false} {
			start := time.Now()
			ok, err := redisstore.New(c, open).Take(ctx, time.Now(), []ratelimit.Take{{Bucket: b, N: 1}}, lv)
			if err != nil || ok != open {
				t.Fatalf("fail open %v with the buckets' shard down: admitted %v, %v", open, ok, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("a take with the buckets' shard down took %v", d)
			}
		}
		if n := c.Errors("rate_limit", "take"); n != 2 {
			t.Fatalf("errors counted: %v", n)
		}
	})
}

// TestOnTLSCluster runs the take's tests against a real three-node Redis
// Cluster that speaks TLS only (to clients and on its bus), requires
// client certificates and a password: the client reaches the buckets'
// node, which the slot map names, over TLS.
func TestOnTLSCluster(t *testing.T) {
	t.Setenv("JUNCTION_TEST_REDIS_CLUSTER_PASSWORD", "rl-cluster-s3cret")
	cl := redistest.StartClusterWith(t, 3, redistest.Options{TLS: true, ClientCerts: "yes", PasswordEnv: "JUNCTION_TEST_REDIS_CLUSTER_PASSWORD"})
	t.Run("ConcurrentTakesAdmitExactlyTheLimit", func(t *testing.T) { testConcurrentTakesAdmitExactlyTheLimit(t, cl.Client(t)) })
	t.Run("AllOrNoneAndRefill", func(t *testing.T) { testAllOrNoneAndRefill(t, cl.Client(t)) })
}
