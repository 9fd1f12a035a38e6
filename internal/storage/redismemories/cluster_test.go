package redismemories_test

import (
	"testing"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/redismemories"
	"github.com/junction-router/junction/internal/storage/storagetest"
)

// TestOnCluster runs the store's suite and the two-replica test against a
// real three-node Redis Cluster: each script touches a memory, its scope's
// keys and the shared sets together, which the cluster accepts only within
// one slot.
func TestOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	t.Run("Conformance", func(t *testing.T) {
		storagetest.RunMemories(t, func(t *testing.T) storage.Memories { return redismemories.New(cl.Client(t)) })
	})
	t.Run("ReplicasRememberOnce", func(t *testing.T) { testReplicasRememberOnce(t, cl.Client(t)) })
}
