package memresponses_test

import (
	"context"
	"errors"
	"strconv"
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

// TestConversationRenewed: a turn continuing a conversation keeps its
// earlier turns alive past their own TTL, and the conversation expires
// together, a TTL after its newest turn; a continued conversation is not
// evicted first by the entry bound.
func TestConversationRenewed(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1700000000, 0)
	s := memresponses.New(memresponses.Options{MaxEntries: 5, TTL: time.Hour, Now: func() time.Time { return now }})
	prev := ""
	for i := range 4 {
		id := "resp_" + strconv.Itoa(i)
		if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, PreviousID: prev, Response: []byte(`{}`), Input: []byte(`[]`)}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := s.PutResponse(ctx, storage.StoredResponse{ID: "other", Response: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		prev = id
		now = now.Add(40 * time.Minute)
	}
	if chain, err := storage.Chain(ctx, s, "resp_3", 0); err != nil || len(chain) != 4 {
		t.Fatalf("2 h 40 min after the first turn: %d turns, %v", len(chain), err)
	}
	if _, err := s.GetResponse(ctx, "other"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an unused response past the TTL: %v", err)
	}
	if err := s.PutResponse(ctx, storage.StoredResponse{ID: "new1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutResponse(ctx, storage.StoredResponse{ID: "new2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetResponse(ctx, "resp_0"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the least recently used goes first past MaxEntries: %v", err)
	}
	if _, err := s.GetResponse(ctx, "resp_3"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(21 * time.Minute)
	if _, err := s.GetResponse(ctx, "resp_3"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a TTL after the newest turn: %v, want ErrNotFound", err)
	}
}

// BenchmarkPutResponse is one stored-response write: a 2 KiB response
// object and 512 B of input items.
func BenchmarkPutResponse(b *testing.B) {
	s := memresponses.New(memresponses.Options{})
	r := storage.StoredResponse{Response: make([]byte, 2048), Input: make([]byte, 512)}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.ID = "resp_" + strconv.Itoa(i)
		if err := s.PutResponse(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}
