package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/memstore"
)

func TestCacheExactTTLAndLRU(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	c := &memstore.Cache{MaxEntries: 2, Now: func() time.Time { return now }}
	if err := c.Store(ctx, "ns", "a", []byte("A"), time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if e, ok, _ := c.Lookup(ctx, "ns", "a", nil, 0); !ok || string(e.Value) != "A" || e.Similarity != 1 {
		t.Fatalf("a = %+v %v", e, ok)
	}
	if _, ok, _ := c.Lookup(ctx, "other", "a", nil, 0); ok {
		t.Fatal("namespaces are not separate")
	}
	_ = c.Store(ctx, "ns", "b", []byte("B"), time.Minute, nil)
	c.Lookup(ctx, "ns", "a", nil, 0)
	_ = c.Store(ctx, "ns", "c", []byte("C"), time.Minute, nil)
	if _, ok, _ := c.Lookup(ctx, "ns", "b", nil, 0); ok {
		t.Fatal("the least recently used entry was kept over the bound")
	}
	if c.Len("ns") != 2 {
		t.Fatalf("len = %d", c.Len("ns"))
	}
	now = now.Add(2 * time.Minute)
	if _, ok, _ := c.Lookup(ctx, "ns", "a", nil, 0); ok {
		t.Fatal("an expired entry was found")
	}
	if err := (&memstore.Cache{MaxValue: 3}).Store(ctx, "ns", "k", []byte("four"), 0, nil); err == nil {
		t.Fatal("a value over the limit was stored")
	}
}

func TestCacheSimilarity(t *testing.T) {
	ctx := context.Background()
	c := memstore.NewCache()
	_ = c.Store(ctx, "ns", "q1", []byte("one"), 0, []float32{1, 0, 0})
	_ = c.Store(ctx, "ns", "q2", []byte("two"), 0, []float32{0, 1, 0})
	e, ok, err := c.Lookup(ctx, "ns", "nope", []float32{0.9, 0.1, 0}, 0.9)
	if err != nil || !ok || string(e.Value) != "one" || e.Similarity < 0.9 {
		t.Fatalf("similar = %+v %v %v", e, ok, err)
	}
	if _, ok, _ := c.Lookup(ctx, "ns", "nope", []float32{0.5, 0.5, 0.7}, 0.9); ok {
		t.Fatal("a dissimilar query hit")
	}
}

func TestVectors(t *testing.T) {
	ctx := context.Background()
	v := &memstore.Vectors{MaxItems: 2}
	if _, err := v.Search(ctx, "docs", []float32{1, 0}, 1); !errors.Is(err, hostapi.ErrNoSuchStore) {
		t.Fatalf("unknown store: %v", err)
	}
	_ = v.Upsert("docs", "a", []float32{1, 0}, []byte("alpha"))
	_ = v.Upsert("docs", "b", []float32{0.6, 0.8}, []byte("beta"))
	if err := v.Upsert("docs", "c", []float32{0, 1}, nil); err == nil {
		t.Fatal("a full store took another item")
	}
	hits, err := v.Search(ctx, "docs", []float32{0, 1}, 5)
	if err != nil || len(hits) != 2 || hits[0].ID != "b" || string(hits[1].Payload) != "alpha" {
		t.Fatalf("hits = %+v %v", hits, err)
	}
	if hits, _ := v.Search(ctx, "docs", []float32{0, 1}, 1); len(hits) != 1 {
		t.Fatalf("k=1 gave %d", len(hits))
	}
}
