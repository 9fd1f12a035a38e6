package memresponses_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/memresponses"
	"github.com/junction-router/junction/internal/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.RunResponses(t, func(*testing.T) storage.Responses { return memresponses.New(memresponses.Options{}) })
}

func TestBounds(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1700000000, 0)
	s := memresponses.New(memresponses.Options{MaxEntries: 2, MaxBytes: 100, TTL: time.Minute, Now: func() time.Time { return now }})
	put := func(id string, n int) error {
		return s.PutResponse(ctx, storage.StoredResponse{ID: id, Response: make([]byte, n)})
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := put(id, 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetResponse(ctx, "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("oldest past MaxEntries: %v, want ErrNotFound", err)
	}
	if err := put("big", 90); err != nil { // b and c (22 bytes) + 93 > 100: both go
		t.Fatal(err)
	}
	if s.Len() != 1 {
		t.Fatalf("Len = %d after a put past MaxBytes, want 1", s.Len())
	}
	if err := put("huge", 200); !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("over MaxBytes alone: %v, want ErrTooLarge", err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := s.GetResponse(ctx, "big"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("past the TTL: %v, want ErrNotFound", err)
	}
}
