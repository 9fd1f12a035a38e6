package memstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
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

// TestFlushAndRetainSweep checks the batched removal behind Flush and
// Retain: the namespaces selected answer no more as soon as the call
// returns, every entry of theirs leaves the whole-cache list and bytes and
// is reported to OnRemove, the counters say how many went (as flushed, not
// as evictions), and lookups and stores running meanwhile (-race) see a
// consistent cache.
func TestFlushAndRetainSweep(t *testing.T) {
	ctx := context.Background()
	removed := map[string]int{}
	c := &Cache{MaxEntries: 5000}
	c.OnRemove = func(ns, _ string) { removed[ns]++ } // called with c.mu held
	nss := []string{"rc/recipe=r/epoch=old", "rc/x/recipe=r/epoch=old", "rc/recipe=r/epoch=new", "other/recipe=r/epoch=new"}
	for i := 0; i < 4000; i++ {
		ns := nss[i%len(nss)]
		if err := c.Store(ctx, ns, fmt.Sprint(i), []byte("v"), time.Hour, []float32{float32(i % 7), 1, float32(i % 3)}); err != nil {
			t.Fatal(err)
		}
	}
	before := c.Stats(-1).Bytes
	// Lookups and stores beside the sweeps.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ns := nss[2+i%2] // the kept ones
			if _, _, err := c.Lookup(ctx, ns, fmt.Sprint(i), []float32{1, 1, 1}, 0.99); err != nil {
				t.Error(err)
				return
			}
			if err := c.Store(ctx, ns, fmt.Sprintf("beside-%d", i%50), []byte("v"), time.Hour, []float32{1, 2, 3}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	keep := func(ns string) bool { return !strings.HasSuffix(ns, "/epoch=old") }
	if got := c.Retain(keep); got != 2000 {
		t.Errorf("retain removed %d, want 2000", got)
	}
	for _, ns := range nss[:2] {
		if c.Len(ns) != 0 {
			t.Errorf("%s still holds %d entries", ns, c.Len(ns))
		}
		if _, ok, _ := c.Lookup(ctx, ns, "0", nil, 0); ok {
			t.Errorf("%s answered after the retain", ns)
		}
	}
	_, removedNew := c.Flush(CacheFilter{NamespacePrefix: "rc/"})
	close(stop)
	wg.Wait()
	if removedNew < 1000 {
		t.Errorf("flush removed %d, want the 1,000 of rc/recipe=r/epoch=new and the stores beside", removedNew)
	}
	c.mu.Lock()
	if removed[nss[0]] != 1000 || removed[nss[1]] != 1000 || removed[nss[2]] != removedNew {
		t.Errorf("OnRemove told of %v (flush removed %d)", removed, removedNew)
	}
	listed, bytes := c.all.Len(), c.bytes
	c.mu.Unlock()
	k, n := c.Counts()
	// Left: the other namespace and what was stored beside after the flush.
	if listed != n || n != c.Len(nss[2])+c.Len(nss[3]) || c.Len(nss[3]) < 1000 {
		t.Errorf("the whole-cache list holds %d entries, the namespaces %d (%s: %d, %s: %d)", listed, n, nss[2], c.Len(nss[2]), nss[3], c.Len(nss[3]))
	}
	if bytes >= before/2 {
		t.Errorf("bytes %d of %d before", bytes, before)
	}
	if k.Flushed != uint64(2000+removedNew) || k.Evictions != 0 {
		t.Errorf("counts %+v, want %d flushed and no evictions", k, 2000+removedNew)
	}
}
