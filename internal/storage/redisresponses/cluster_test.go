package redisresponses_test

import (
	"testing"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/redisresponses"
	"github.com/junction-router/junction/internal/storage/storagetest"
)

// TestOnCluster runs the store's suite and tests against a real three-node
// Redis Cluster: the scripts touch a conversation's turns and the index
// together, which the cluster accepts only within one slot.
func TestOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	t.Run("Conformance", func(t *testing.T) {
		storagetest.RunResponses(t, func(t *testing.T) storage.Responses {
			return redisresponses.New(cl.Client(t), redisresponses.Options{})
		})
	})
	t.Run("Bounds", func(t *testing.T) { testBounds(t, cl.Client(t)) })
	t.Run("ConversationRenewedAcrossReplicas", func(t *testing.T) { testConversationRenewedAcrossReplicas(t, cl.Client(t)) })
}
