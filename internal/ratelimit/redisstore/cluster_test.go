package redisstore_test

import (
	"testing"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// TestOnCluster runs the store's tests against a real three-node Redis
// Cluster: a take from two buckets is one script, so their keys must share
// a slot (the cluster refuses the script otherwise).
func TestOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	t.Run("ConcurrentTakesAdmitExactlyTheLimit", func(t *testing.T) { testConcurrentTakesAdmitExactlyTheLimit(t, cl.Client(t)) })
	t.Run("AllOrNoneAndRefill", func(t *testing.T) { testAllOrNoneAndRefill(t, cl.Client(t)) })
}
