package respcache_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/respcache"
)

// TestSweeperRemovesReplacedEpochs stores answers the way the data plane
// does (Scoped, under each request's scope) for the example configuration,
// then activates a configuration with another system prompt for the
// catch-all decision: the Sweeper removes the old epoch's entries (counted
// as flushed) and keeps what the new configuration still serves: another
// decision's entries (its epoch did not change) and namespaces without an
// epoch.
func TestSweeperRemovesReplacedEpochs(t *testing.T) {
	ctx := context.Background()
	b := respcache.NewMemory(respcache.Options{})
	cache := respcache.Scoped{Backend: b}
	before := exampleDoc(t, nil)
	after := exampleDoc(t, func(s string) string {
		return strings.Replace(s, "        plugins:\n          - type: response_cache",
			"        plugins:\n          - type: system_prompt\n            configuration: {system_prompt: \"Answer in French.\"}\n          - type: response_cache", 1)
	})
	store := func(s respcache.Scope, key string) {
		t.Helper()
		if err := cache.Store(respcache.WithScope(ctx, s), "response_cache/v2", key, []byte(key), time.Hour, []float32{1, 0}); err != nil {
			t.Fatal(err)
		}
	}
	var other string // a decision of the example configuration other than general
	for _, r := range before.Recipes {
		for _, d := range r.Decisions {
			if d.Name != "general" && len(d.ModelRefs) > 0 && other == "" {
				other = d.Name
				store(respcache.ScopeOf(before, r.Name, d.Name, d.ModelRefs[0].Model), "other")
			}
		}
	}
	if other == "" {
		t.Fatal("the example configuration has one decision only")
	}
	for _, model := range []string{"small", "big"} {
		for i := 0; i < 300; i++ {
			store(respcache.ScopeOf(before, "default", "general", model), model+string(rune('a'+i%26))+strings.Repeat("x", i/26))
		}
	}
	if err := b.Store(ctx, "unscoped", "k", []byte("v"), time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	live := respcache.LiveEpochs(after)
	if live[respcache.ScopeOf(before, "default", "general", "small").Epoch] || !live[respcache.ScopeOf(after, "default", "general", "small").Epoch] {
		t.Fatal("LiveEpochs: the replaced epoch is live, or the new one is not")
	}
	sw := respcache.NewSweeper(b, nil)
	sw.Activated(before) // the start: nothing replaced
	sw.Wait()
	if k, n := b.Counts(); n != 602 || k.Flushed != 0 {
		t.Fatalf("a sweep for the serving configuration removed entries: %d left, %+v", n, k)
	}
	sw.Activated(after)
	sw.Wait()
	k, n := b.Counts()
	if n != 2 || k.Flushed != 600 {
		t.Fatalf("after the change: %d entries (want the other decision's and the unscoped one), %+v", n, k)
	}
	got, ok, err := cache.Lookup(respcache.WithScope(ctx, respcache.ScopeOf(after, "default", "general", "small")), "response_cache/v2", "smalla", nil, 0)
	if err != nil || ok {
		t.Fatalf("the new configuration found %q (%v)", got.Value, err)
	}
	st, _ := b.Stats(10)
	for _, ns := range st.Top {
		if strings.Contains(ns.Namespace, respcache.ScopeOf(before, "default", "general", "small").Epoch) {
			t.Fatalf("%s is left", ns.Namespace)
		}
	}
}
