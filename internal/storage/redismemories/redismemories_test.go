package redismemories_test

import (
	"context"
	"sync"
	"testing"

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
func TestReplicasRememberOnce(t *testing.T) {
	c := redistest.New(t)
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
