// Package cachetest is the conformance suite every response cache backend
// passes (respcache.Backend): exact and semantic lookups, time to live,
// the bounds on entries and bytes, invalidation and flush with their
// epochs, the counters, and for a persistent backend that all of it
// survives closing and opening again.
package cachetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/respcache"
)

// Open opens a backend with o at a place of its own for t; called again
// with the same t it opens the same place (what a persistent backend kept
// is there).
type Open func(t *testing.T, o respcache.Options) respcache.Backend

// clock is a settable clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// Run runs the suite.
func Run(t *testing.T, open Open) {
	t.Run("ExactAndSemantic", func(t *testing.T) { exactAndSemantic(t, open) })
	t.Run("TTL", func(t *testing.T) { ttl(t, open) })
	t.Run("Bounds", func(t *testing.T) { bounds(t, open) })
	t.Run("InvalidateAndFlush", func(t *testing.T) { invalidateAndFlush(t, open) })
	t.Run("Reopen", func(t *testing.T) { reopen(t, open) })
	t.Run("Retain", func(t *testing.T) { retain(t, open) })
}

// retain: the namespaces keep refuses answer no more, are counted as
// flushed, and (a persistent backend) do not come back after reopening;
// the others are untouched.
func retain(t *testing.T, open Open) {
	b := open(t, respcache.Options{})
	old, cur := "response_cache/v2/recipe=r/epoch=old", "response_cache/v2/recipe=r/epoch=new"
	for i := 0; i < 600; i++ { // more than one batch of the memory's sweep
		store(t, b, old, fmt.Sprint(i), "old", time.Hour, []float32{1, float32(i)})
	}
	store(t, b, cur, "k", "new", time.Hour, []float32{1, 0})
	store(t, b, "plain", "k", "plain", time.Hour, nil)
	removed, err := b.Retain(func(ns string) bool { return !strings.HasSuffix(ns, "/epoch=old") })
	if err != nil || removed != 600 {
		t.Fatalf("retain: removed %d, %v", removed, err)
	}
	check := func(when string) {
		t.Helper()
		if _, _, ok := lookup(t, b, old, "7", nil, 0); ok {
			t.Fatalf("%s: a removed entry answered", when)
		}
		if _, _, ok := lookup(t, b, old, "", []float32{1, 7}, 0.5); ok {
			t.Fatalf("%s: a removed entry answered a semantic lookup", when)
		}
		if v, _, ok := lookup(t, b, cur, "k", nil, 0); !ok || v != "new" {
			t.Fatalf("%s: a kept entry: %q %v", when, v, ok)
		}
		if v, _, ok := lookup(t, b, "plain", "k", nil, 0); !ok || v != "plain" {
			t.Fatalf("%s: a kept entry: %q %v", when, v, ok)
		}
		if _, n := b.Counts(); n != 2 {
			t.Fatalf("%s: %d entries, want 2", when, n)
		}
	}
	check("after retain")
	if k, _ := b.Counts(); k.Flushed != 600 {
		t.Fatalf("counts after retain: %+v", k)
	}
	if !b.Info().Persistent {
		closeAtEnd(t, b)
		return
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, respcache.Options{})
	closeAtEnd(t, b)
	check("after reopening")
}

func store(t *testing.T, b respcache.Backend, ns, key, value string, ttl time.Duration, emb []float32) {
	t.Helper()
	if err := b.Store(context.Background(), ns, key, []byte(value), ttl, emb); err != nil {
		t.Fatalf("store %s/%s: %v", ns, key, err)
	}
}

func lookup(t *testing.T, b respcache.Backend, ns, key string, emb []float32, threshold float32) (string, float32, bool) {
	t.Helper()
	e, ok, err := b.Lookup(context.Background(), ns, key, emb, threshold)
	if err != nil {
		t.Fatalf("lookup %s/%s: %v", ns, key, err)
	}
	return string(e.Value), e.Similarity, ok
}

func closeAtEnd(t *testing.T, b respcache.Backend) {
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
}

func exactAndSemantic(t *testing.T, open Open) {
	b := open(t, respcache.Options{})
	closeAtEnd(t, b)
	store(t, b, "ns/a", "k1", "answer one", time.Minute, []float32{1, 0, 0})
	store(t, b, "ns/a", "k2", "answer two", time.Minute, []float32{0, 1, 0})
	store(t, b, "ns/b", "k1", "other namespace", time.Minute, nil)
	if v, sim, ok := lookup(t, b, "ns/a", "k1", nil, 0.9); !ok || v != "answer one" || sim != 1 {
		t.Fatalf("exact lookup: %q %v %v", v, sim, ok)
	}
	if v, _, ok := lookup(t, b, "ns/b", "k1", nil, 0.9); !ok || v != "other namespace" {
		t.Fatalf("namespaces are not separate: %q %v", v, ok)
	}
	if _, _, ok := lookup(t, b, "ns/a", "k3", nil, 0.9); ok {
		t.Fatal("an unknown key hit")
	}
	// The nearest entry at or above the threshold; below it, a miss.
	if v, sim, ok := lookup(t, b, "ns/a", "", []float32{0.1, 2, 0}, 0.9); !ok || v != "answer two" || sim < 0.99 || sim >= 1.0001 {
		t.Fatalf("semantic lookup: %q %v %v", v, sim, ok)
	}
	if _, _, ok := lookup(t, b, "ns/a", "", []float32{1, 1, 0}, 0.9); ok {
		t.Fatal("a semantic hit below the threshold (cosine 0.707)")
	}
	if _, _, ok := lookup(t, b, "ns/a", "", []float32{1, 0}, 0.5); ok {
		t.Fatal("an embedding of another dimension matched")
	}
	if _, _, ok := lookup(t, b, "ns/b", "", []float32{1, 0, 0}, 0.5); ok {
		t.Fatal("an entry stored without an embedding matched by similarity")
	}
	// Storing a key again replaces its value and embedding.
	store(t, b, "ns/a", "k1", "answer one, again", time.Minute, []float32{0, 0, 1})
	if v, _, ok := lookup(t, b, "ns/a", "", []float32{0, 0, 1}, 0.99); !ok || v != "answer one, again" {
		t.Fatalf("replaced entry: %q %v", v, ok)
	}
	k, n := b.Counts()
	if n != 3 || k.ExactHits != 2 || k.SemanticHits != 2 || k.ExactMisses != 1 || k.SemanticMisses != 3 {
		t.Fatalf("counts: %d entries, %+v", n, k)
	}
	if st, err := b.Stats(10); err != nil || st.Entries != 3 || st.Namespaces != 2 || st.Bytes <= 0 || len(st.Top) != 2 || st.Top[0].Namespace != "ns/a" {
		t.Fatalf("stats: %+v %v", st, err)
	}
}

func ttl(t *testing.T, open Open) {
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	b := open(t, respcache.Options{Now: c.Now})
	closeAtEnd(t, b)
	store(t, b, "ns", "short", "s", 10*time.Second, []float32{1, 0})
	store(t, b, "ns", "long", "l", time.Hour, []float32{0, 1})
	c.now = c.now.Add(9 * time.Second)
	if _, _, ok := lookup(t, b, "ns", "short", nil, 0.9); !ok {
		t.Fatal("an entry expired early")
	}
	c.now = c.now.Add(2 * time.Second)
	if _, _, ok := lookup(t, b, "ns", "short", nil, 0.9); ok {
		t.Fatal("an expired entry answered")
	}
	if _, _, ok := lookup(t, b, "ns", "", []float32{1, 0.01}, 0.9); ok {
		t.Fatal("an expired entry answered a semantic lookup")
	}
	if _, _, ok := lookup(t, b, "ns", "long", nil, 0.9); !ok {
		t.Fatal("a live entry went with an expired one")
	}
	if k, n := b.Counts(); n != 1 || k.Expirations != 1 {
		t.Fatalf("after expiry: %d entries, %+v", n, k)
	}
}

func bounds(t *testing.T, open Open) {
	b := open(t, respcache.Options{MaxEntries: 3})
	for i := range 3 {
		store(t, b, fmt.Sprintf("ns/%d", i), "k", "v", time.Minute, nil)
	}
	lookup(t, b, "ns/0", "k", nil, 0.9) // ns/0 is now the most recently used
	store(t, b, "ns/3", "k", "v", time.Minute, nil)
	if _, _, ok := lookup(t, b, "ns/1", "k", nil, 0.9); ok {
		t.Fatal("the least recently used entry was not evicted")
	}
	for _, ns := range []string{"ns/0", "ns/2", "ns/3"} {
		if _, _, ok := lookup(t, b, ns, "k", nil, 0.9); !ok {
			t.Fatalf("%s was evicted", ns)
		}
	}
	if k, n := b.Counts(); n != 3 || k.Evictions != 1 {
		t.Fatalf("entry bound: %d entries, %+v", n, k)
	}
	if _, _, err := b.Flush(respcache.Filter{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	big := open(t, respcache.Options{MaxBytes: 4096})
	closeAtEnd(t, big)
	value := strings.Repeat("x", 1000)
	for i := range 10 {
		store(t, big, "ns", fmt.Sprintf("k%d", i), value, time.Minute, nil)
	}
	st, err := big.Stats(1)
	if err != nil || st.Bytes > 4096 || st.Entries < 2 || st.Entries > 4 {
		t.Fatalf("byte bound 4096: %d entries, %d bytes, %v", st.Entries, st.Bytes, err)
	}
	if _, _, ok := lookup(t, big, "ns", "k9", nil, 0.9); !ok {
		t.Fatal("the newest entry went instead of the oldest")
	}
	if _, _, ok := lookup(t, big, "ns", "k0", nil, 0.9); ok {
		t.Fatal("the oldest entry is still there past the byte bound")
	}
}

func invalidateAndFlush(t *testing.T, open Open) {
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	b := open(t, respcache.Options{Now: c.Now})
	closeAtEnd(t, b)
	a := "response_cache/v2/model=m1/decision=d1/context=c/recipe=r1/epoch=e1"
	x := "response_cache/v2/model=m2/decision=d1/context=c/recipe=r2/epoch=e1"
	store(t, b, a, "k1", "v", time.Hour, nil)
	c.now = c.now.Add(time.Minute)
	store(t, b, a, "k2", "v", time.Hour, nil)
	store(t, b, x, "k1", "v", time.Hour, nil)
	store(t, b, x, "z1", "v", time.Hour, nil)
	check := func(what string, f respcache.Filter, dry bool, wantN, wantNS int) {
		t.Helper()
		n, nss, err := b.Invalidate(f, dry)
		if err != nil || n != wantN || nss != wantNS {
			t.Fatalf("%s: %d entries in %d namespaces (%v), want %d in %d", what, n, nss, err, wantN, wantNS)
		}
	}
	check("dry run, decision", respcache.Filter{Segments: []string{"decision=d1"}}, true, 4, 2)
	check("dry run, recipe", respcache.Filter{Segments: []string{"recipe=r1"}}, true, 2, 1)
	check("dry run, partial segment", respcache.Filter{Segments: []string{"recipe=r"}}, true, 0, 0)
	check("dry run, older than", respcache.Filter{OlderThan: c.now.Add(-time.Second)}, true, 1, 1)
	check("key prefix in model m2", respcache.Filter{Segments: []string{"model=m2"}, KeyPrefix: "z"}, false, 1, 1)
	if _, _, ok := lookup(t, b, x, "z1", nil, 0.9); ok {
		t.Fatal("an invalidated entry answered")
	}
	if _, _, ok := lookup(t, b, x, "k1", nil, 0.9); !ok {
		t.Fatal("invalidation removed an entry it did not select")
	}
	epoch, removed, err := b.Flush(respcache.Filter{Segments: []string{"recipe=r1"}})
	if err != nil || epoch != 1 || removed != 2 {
		t.Fatalf("scoped flush: epoch %d, removed %d, %v", epoch, removed, err)
	}
	if epoch, _, _ := b.Flush(respcache.Filter{Segments: []string{"recipe=r1"}}); epoch != 2 {
		t.Fatalf("a second flush of the scope: epoch %d", epoch)
	}
	if epoch, removed, err := b.Flush(respcache.Filter{}); err != nil || epoch != 1 || removed != 1 {
		t.Fatalf("global flush: epoch %d, removed %d, %v", epoch, removed, err)
	}
	st, err := b.Stats(5)
	if err != nil || st.Entries != 0 || st.Epochs["[recipe=r1]"] != 2 || st.Epochs[""] != 1 {
		t.Fatalf("after flushes: %+v %v", st, err)
	}
	if k, _ := b.Counts(); k.Invalidated != 1 || k.Flushed != 3 {
		t.Fatalf("counts: %+v", k)
	}
}

func reopen(t *testing.T, open Open) {
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	b := open(t, respcache.Options{Now: c.Now})
	if !b.Info().Persistent {
		_ = b.Close()
		t.Skipf("the %s backend keeps nothing across a restart", b.Info().Name)
	}
	store(t, b, "ns/a", "k1", "kept", time.Hour, []float32{1, 0})
	store(t, b, "ns/a", "k2", "expires", time.Minute, []float32{0, 1})
	store(t, b, "ns/b", "k1", "invalidated", time.Hour, nil)
	if _, _, err := b.Invalidate(respcache.Filter{NamespacePrefix: "ns/b"}, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Flush(respcache.Filter{NamespacePrefix: "ns/c"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(2 * time.Minute)
	b = open(t, respcache.Options{Now: c.Now})
	closeAtEnd(t, b)
	if v, _, ok := lookup(t, b, "ns/a", "k1", nil, 0.9); !ok || v != "kept" {
		t.Fatalf("after reopening: %q %v", v, ok)
	}
	if v, sim, ok := lookup(t, b, "ns/a", "", []float32{2, 0.01}, 0.99); !ok || v != "kept" || sim < 0.99 {
		t.Fatalf("a semantic lookup after reopening: %q %v %v", v, sim, ok)
	}
	if _, _, ok := lookup(t, b, "ns/a", "k2", nil, 0.9); ok {
		t.Fatal("an entry past its time to live came back")
	}
	if _, _, ok := lookup(t, b, "ns/b", "k1", nil, 0.9); ok {
		t.Fatal("an invalidated entry came back")
	}
	if st, err := b.Stats(5); err != nil || st.Entries != 1 || st.Epochs["ns/c"] != 1 {
		t.Fatalf("after reopening: %+v %v", st, err)
	}
	// Bounds apply to what is loaded: the least recently stored go.
	store(t, b, "ns/d", "k", "newer", time.Hour, nil)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, respcache.Options{Now: c.Now, MaxEntries: 1})
	if _, _, ok := lookup(t, b, "ns/d", "k", nil, 0.9); !ok {
		t.Fatal("the most recently stored entry did not survive a smaller bound")
	}
	if _, n := b.Counts(); n != 1 {
		t.Fatalf("%d entries loaded under a bound of 1", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, respcache.Options{Now: c.Now})
	closeAtEnd(t, b)
	if _, n := b.Counts(); n != 1 {
		t.Fatalf("entries evicted at load came back: %d", n)
	}
}
