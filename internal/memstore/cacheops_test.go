package memstore

import (
	"context"
	"testing"
	"time"
)

func TestCacheCountsFlushAndInvalidate(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &Cache{MaxEntries: 2, Now: func() time.Time { return now }}
	put := func(ns, key string) {
		t.Helper()
		if err := c.Store(ctx, ns, key, []byte("v"), time.Minute, []float32{1, 0}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := "response_cache/v2/model=m1/decision=d1", "response_cache/v2/model=m2/decision=d1"
	put(a, "k1")
	now = now.Add(10 * time.Second)
	put(a, "k2")
	put(b, "x1")
	put(b, "x2")
	put(b, "x3") // evicts x1
	if _, ok, _ := c.Lookup(ctx, a, "k1", nil, 0.9); !ok {
		t.Fatal("exact miss")
	}
	if _, ok, _ := c.Lookup(ctx, a, "nope", []float32{1, 0.01}, 0.9); !ok {
		t.Fatal("semantic miss")
	}
	if _, ok, _ := c.Lookup(ctx, a, "nope", nil, 0.9); ok {
		t.Fatal("exact hit on an unknown key")
	}
	if _, ok, _ := c.Lookup(ctx, a, "nope", []float32{0, 1}, 0.9); ok {
		t.Fatal("semantic hit on an orthogonal embedding")
	}
	k, n := c.Counts()
	if n != 4 || k.ExactHits != 1 || k.SemanticHits != 1 || k.ExactMisses != 1 || k.SemanticMisses != 1 || k.Evictions != 1 || k.HitRatio() != 0.5 {
		t.Fatalf("%d entries, %+v", n, k)
	}
	st := c.Stats(1)
	if st.Entries != 4 || st.Namespaces != 2 || len(st.Top) != 1 || st.Bytes == 0 {
		t.Fatalf("stats %+v", st)
	}
	// older than the second store: only k1.
	if got, nss := c.Invalidate(CacheFilter{Segments: []string{"decision=d1"}, OlderThan: now.Add(-time.Second)}, true); got != 1 || nss != 1 {
		t.Fatalf("dry run %d %d", got, nss)
	}
	if got, _ := c.Invalidate(CacheFilter{Segments: []string{"model=m2"}, KeyPrefix: "x2"}, false); got != 1 {
		t.Fatalf("invalidate %d", got)
	}
	if got, _ := c.Invalidate(CacheFilter{Segments: []string{"model=m"}}, true); got != 0 {
		t.Fatalf("a partial segment matched %d", got)
	}
	if e, removed := c.Flush(CacheFilter{NamespacePrefix: "response_cache/v2/model=m1"}); e != 1 || removed != 2 {
		t.Fatalf("flush: epoch %d removed %d", e, removed)
	}
	if _, ok, _ := c.Lookup(ctx, a, "k1", nil, 0.9); ok {
		t.Fatal("a flushed entry answered")
	}
	if e, removed := c.Flush(CacheFilter{}); e != 1 || removed != 1 || c.Epoch("response_cache/v2/model=m1") != 1 {
		t.Fatalf("global flush: epoch %d removed %d", e, removed)
	}
	if k, n := c.Counts(); n != 0 || k.Flushed != 3 || k.Invalidated != 1 {
		t.Fatalf("after flushes %d %+v", n, k)
	}
}

// A peeking lookup answers like any other but counts nowhere and leaves the
// LRU order alone.
func TestCachePeekingLookup(t *testing.T) {
	ctx := context.Background()
	c := &Cache{MaxEntries: 2}
	for _, k := range []string{"a", "b"} {
		if err := c.Store(ctx, "ns", k, []byte(k), time.Minute, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := c.Lookup(Peeking(ctx), "ns", "a", nil, 0); !ok {
		t.Fatal("peek missed")
	}
	if _, ok, _ := c.Lookup(Peeking(ctx), "ns", "zz", nil, 0); ok {
		t.Fatal("peek hit an unknown key")
	}
	if k, _ := c.Counts(); k != (CacheCounts{}) {
		t.Fatalf("peeks counted: %+v", k)
	}
	// "a" is still the least recent: a third entry evicts it.
	if err := c.Store(ctx, "ns", "c", []byte("c"), time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Lookup(ctx, "ns", "a", nil, 0); ok {
		t.Fatal("the peek made a recent")
	}
}
