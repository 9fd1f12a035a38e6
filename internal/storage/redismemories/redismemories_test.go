package redismemories_test

import (
	"context"
	"sync"
	"testing"

	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/redismemories"
	"github.com/junction-router/junction/internal/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.RunMemories(t, func(t *testing.T) storage.Memories { return redismemories.New(redistest.New(t)) })
}

// TestReplicasRememberOnce: two stores on one Redis (two replicas) told the
// same text at once keep one memory, which both recall.
func TestReplicasRememberOnce(t *testing.T) { testReplicasRememberOnce(t, redistest.New(t)) }

func testReplicasRememberOnce(t *testing.T, c *redisstate.Client) {
	a, b := redismemories.New(c), redismemories.New(c)
	ctx := context.Background()
	var wg sync.WaitGroup
	created := make([]bool, 16)
	for i := range created {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			_, ok, err := s.Remember(ctx, storage.Memory{Scope: "u", Text: "My name is Ada", EmbeddingModel: "m", Vector: []float32{1, 0}})
			if err != nil {
				t.Error(err)
			}
			created[i] = ok
		}()
	}
	wg.Wait()
	n := 0
	for _, ok := range created {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("16 concurrent remembers of one text on two replicas created %d memories", n)
	}
	hits, err := b.Recall(ctx, "u", "m", []float32{1, 0}, 5, 0.5)
	if err != nil || len(hits) != 1 || hits[0].Text != "My name is Ada" {
		t.Fatalf("recall on the other replica: %+v %v", hits, err)
	}
}

// TestMemoriesSurviveRedisRestart: memories have no TTL and live in Redis
// only, so a memory Remember acknowledged is one Redis must not lose. On a
// Redis with the append-only file fsynced before each acknowledgement
// (what docs/storage.md asks of operators), it is recalled by another
// client after Redis is killed (SIGKILL, no shutdown) and started again.
func TestMemoriesSurviveRedisRestart(t *testing.T) {
	srv := redistest.StartServer(t)
	open := func() *redisstate.Client {
		c, err := redisstate.New(redisstate.Config{Address: srv.Addr(), KeyPrefix: "t:"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()
	kept, ok, err := redismemories.New(open()).Remember(ctx, storage.Memory{Scope: "u", Text: "I live in Lisbon", EmbeddingModel: "m", Vector: []float32{0, 1}})
	if err != nil || !ok {
		t.Fatalf("remember: %v %v", ok, err)
	}
	srv.Kill()
	srv.Start()
	other := redismemories.New(open())
	if got, err := other.GetMemory(ctx, kept.ID); err != nil || got.Text != "I live in Lisbon" {
		t.Fatalf("the acknowledged memory after Redis was killed and restarted: %+v %v", got, err)
	}
	hits, err := other.Recall(ctx, "u", "m", []float32{0, 1}, 5, 0.5)
	if err != nil || len(hits) != 1 || hits[0].ID != kept.ID {
		t.Fatalf("recall after the restart: %+v %v", hits, err)
	}
	// The digest that keeps one memory per text survived too.
	if _, created, err := other.Remember(ctx, storage.Memory{Scope: "u", Text: "I live in Lisbon", EmbeddingModel: "m", Vector: []float32{0, 1}}); err != nil || created {
		t.Fatalf("the same text after the restart made a second memory (created %v, %v)", created, err)
	}
}
