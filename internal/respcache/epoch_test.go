package respcache_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/recipes"
)

// The spec's example configuration: response_cache on the catch-all
// decision "general" (models small and big).
func exampleDoc(t testing.TB, edit func(string) string) *recipes.Document {
	t.Helper()
	src := readExample(t)
	if edit != nil {
		src = edit(src)
	}
	doc, err := recipes.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestConfigEpochFollowsWhatShapesTheAnswer(t *testing.T) {
	base := respcache.ScopeOf(exampleDoc(t, nil), "default", "general", "small")
	if base.Recipe != "default" || len(base.Epoch) != 16 {
		t.Fatalf("scope %+v", base)
	}
	if again := respcache.ScopeOf(exampleDoc(t, nil), "default", "general", "small"); again != base {
		t.Fatalf("the same configuration gave another scope: %+v, %+v", again, base)
	}
	if other := respcache.ScopeOf(exampleDoc(t, nil), "default", "general", "big"); other.Epoch == base.Epoch {
		t.Fatal("two models share an epoch")
	}
	changes := map[string]struct {
		old, new string
		same     bool
	}{
		"the decision's reasoning switch": {"- {model: small, use_reasoning: false}\n          - {model: big", "- {model: small, use_reasoning: true}\n          - {model: big", false},
		"the model's backend":             {"base_url: http://127.0.0.1:18001/v1", "base_url: http://127.0.0.1:18009/v1", false},
		"a plugin added before the cache": {"        plugins:\n          - type: response_cache", "        plugins:\n          - type: system_prompt\n            configuration: {system_prompt: \"Answer in French.\"}\n          - type: response_cache", false},
		"the cache's own settings":        {"similarity_threshold: 0.92", "similarity_threshold: 0.95", true},
		"another decision":                {"priority: 120", "priority: 121", true},
		"the model's price":               {"prompt_per_1m: 1.00", "prompt_per_1m: 2.00", true},
	}
	src := readExample(t)
	for what, c := range changes {
		if !strings.Contains(src, c.old) {
			t.Fatalf("%s: the example configuration has no %q", what, c.old)
		}
		got := respcache.ScopeOf(exampleDoc(t, func(s string) string { return strings.Replace(s, c.old, c.new, 1) }), "default", "general", "small")
		if (got == base) != c.same {
			t.Errorf("%s: scope %+v, before %+v (want the same: %v)", what, got, base, c.same)
		}
	}
	// scope.recipe off: no recipe; scope.model off: every model of the
	// decision is in the epoch, so both models share it.
	shared := exampleDoc(t, func(s string) string {
		return strings.Replace(s, "ttl_seconds: 600}", "ttl_seconds: 600, scope: {recipe: false, model: false}}", 1)
	})
	a, b := respcache.ScopeOf(shared, "default", "general", "small"), respcache.ScopeOf(shared, "default", "general", "big")
	if a.Recipe != "" || a != b {
		t.Fatalf("scope.model and scope.recipe off: %+v, %+v", a, b)
	}
}

func TestEpochsMemoiseByDocument(t *testing.T) {
	var e respcache.Epochs
	d1, d2 := exampleDoc(t, nil), exampleDoc(t, func(s string) string {
		return strings.Replace(s, "use_reasoning: false}\n          - {model: big", "use_reasoning: true}\n          - {model: big", 1)
	})
	s1 := e.Scope(d1, "default", "general", "small")
	if s1 != respcache.ScopeOf(d1, "default", "general", "small") || e.Scope(d1, "default", "general", "small") != s1 {
		t.Fatal("memoised scope differs")
	}
	if s2 := e.Scope(d2, "default", "general", "small"); s2 == s1 || s2 != respcache.ScopeOf(d2, "default", "general", "small") {
		t.Fatal("a new document kept the old scope")
	}
}

func TestScopedAddsTheScopeToNamespaces(t *testing.T) {
	mem := respcache.NewMemory(respcache.Options{})
	c := respcache.Scoped{Backend: mem}
	ctx := respcache.WithScope(context.Background(), respcache.Scope{Recipe: "r", Epoch: "e1"})
	if err := c.Store(ctx, "response_cache/v2/model=m", "k", []byte("v"), time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := mem.Lookup(context.Background(), "response_cache/v2/model=m/recipe=r/epoch=e1", "k", nil, 0); !ok {
		t.Fatal("not stored under the scoped namespace")
	}
	if _, ok, _ := c.Lookup(ctx, "response_cache/v2/model=m", "k", nil, 0); !ok {
		t.Fatal("a scoped lookup missed its own store")
	}
	other := respcache.WithScope(context.Background(), respcache.Scope{Recipe: "r", Epoch: "e2"})
	if _, ok, _ := c.Lookup(other, "response_cache/v2/model=m", "k", nil, 0); ok {
		t.Fatal("another epoch found the entry")
	}
	if _, ok, _ := c.Lookup(context.Background(), "response_cache/v2/model=m", "k", nil, 0); ok {
		t.Fatal("a lookup without a scope found a scoped entry")
	}
}

// A request that looked up before a flush does not store its answer after
// it: the flush advanced the epoch of what was in flight too.
func TestScopedDropsAStoreMadeBeforeAFlush(t *testing.T) {
	mem := respcache.NewMemory(respcache.Options{})
	c := respcache.Scoped{Backend: mem}
	scope := respcache.Scope{Recipe: "r", Epoch: "e"}
	ask := func(flush bool) bool {
		ctx := respcache.WithScope(context.Background(), scope.ForRequest())
		if _, ok, _ := c.Lookup(ctx, "ns", "k", nil, 0); ok {
			t.Fatal("hit before any store")
		}
		if flush {
			if _, _, err := mem.Flush(respcache.Filter{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Store(ctx, "ns", "k", []byte("v"), time.Minute, nil); err != nil {
			t.Fatal(err)
		}
		_, n := mem.Counts()
		return n == 1
	}
	if ask(true) {
		t.Fatal("an answer looked up before a flush was stored after it")
	}
	if !ask(false) {
		t.Fatal("an answer without a flush in between was not stored")
	}
	// A retargeted scope keeps the request's state.
	first := scope.ForRequest()
	c.Lookup(respcache.WithScope(context.Background(), first), "ns2", "k", nil, 0)
	mem.Flush(respcache.Filter{NamespacePrefix: "other"})
	next := respcache.Scope{Recipe: "r", Epoch: "e2"}.Retargeted(first)
	if err := c.Store(respcache.WithScope(context.Background(), next), "ns2", "k", []byte("v"), time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if _, n := mem.Counts(); n != 1 {
		t.Fatalf("a retargeted request stored across a flush: %d entries, want the 1 before", n)
	}
}
