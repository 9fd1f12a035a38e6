package mgmt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/pluginsys"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/recipes"
)

// cacheEnv is a management server over the real plugin system's response
// cache, filled by the built-in response_cache plugin answering n questions
// for model small (and one for model big) in the base configuration's decision rest, each looked up twice.
func cacheEnv(t *testing.T, config string, n int) (*env, *pluginsys.System) {
	t.Helper()
	ctx := context.Background()
	p, err := pluginsys.New(ctx, pluginsys.Options{CacheDir: plugintest.CacheDir(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	doc, err := recipes.Parse([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Prepare(ctx, doc); err != nil {
		t.Fatal(err)
	}
	rest := doc.Recipes[0].Decisions[len(doc.Recipes[0].Decisions)-1]
	if rest.Name != "rest" {
		t.Fatalf("the base configuration's last decision is %s", rest.Name)
	}
	refs := rest.Plugins
	ask := func(model, q string) {
		t.Helper()
		for range 2 {
			c, err := chat.Parse([]byte(fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, model, q)))
			if err != nil {
				t.Fatal(err)
			}
			r := &plugin.Request{Chat: c, Decision: "rest", Model: model}
			// The scope a live request of this decision and model has.
			ctx := respcache.WithScope(ctx, respcache.ScopeOf(doc, doc.Recipes[0].Name, "rest", model))
			if _, err := p.Request(ctx, refs, r); err != nil {
				t.Fatal(err)
			}
			answer := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"demo","choices":[{"index":0,"message":{"role":"assistant","content":"yes"},"finish_reason":"stop"}]}`
			if _, err := p.Response(ctx, refs, &plugin.Response{Request: r, Status: 200, Body: []byte(answer)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range n {
		ask("small", fmt.Sprintf("question %d", i))
	}
	ask("big", "question 0")
	e := newEnvOpts(t, writeConfig(t, config), compiler(t), func(o *mgmt.Options) { o.ResponseCache, o.Plugins = p.Cache(), p })
	return e, p
}

func TestResponseCacheRoutes(t *testing.T) {
	e, _ := cacheEnv(t, baseConfig(t), 3)
	c := must(t, e.call("GET", "/api/v1/storage/response-cache/capabilities", nil), 200).json(t)
	if c["backend"] != "memory" || !strings.Contains(fmt.Sprint(c["modes"]), "exact_then_semantic") {
		t.Fatalf("capabilities: %v", c)
	}
	h := must(t, e.call("GET", "/api/v1/storage/response-cache/health", nil), 200).json(t)
	if h["reachable"] != true || h["entries"] != 4.0 {
		t.Fatalf("health: %v", h)
	}
	// The earlier-revision /health carries the same cache, with its hit rate.
	eh := must(t, e.call("GET", "/health", nil), 200).json(t)
	if c, _ := eh["cache"].(map[string]any); c["status"] != "healthy" || c["entries"] != 4.0 || c["hit_rate"] != 0.5 {
		t.Fatalf("/health cache: %v", eh["cache"])
	}
	s := must(t, e.call("GET", "/api/v1/storage/response-cache/stats?top=1", nil), 200).json(t)
	if s["entries"] != 4.0 || s["namespaces"] != 2.0 || s["hit_ratio"] != 0.5 || s["hits"].(map[string]any)["exact"] != 4.0 {
		t.Fatalf("stats: %v", s)
	}
	top := s["top_namespaces"].([]any)
	if len(top) != 1 || top[0].(map[string]any)["entries"] != 3.0 || !strings.HasPrefix(top[0].(map[string]any)["namespace"].(string), "response_cache/v2") {
		t.Fatalf("top namespaces: %v", top)
	}
	must(t, e.call("GET", "/api/v1/storage/response-cache/stats?top=1000", nil), 400)

	// A dry run counts; nothing goes.
	inv := must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"dry_run": true, "model": "small"}), 200).json(t)
	if inv["entries"] != 3.0 || inv["namespaces"] != 1.0 || inv["dry_run"] != true {
		t.Fatalf("dry run: %v", inv)
	}
	// Nothing is older than an hour; everything is older than a future time.
	inv = must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"dry_run": true, "older_than": 3600}), 200).json(t)
	if inv["entries"] != 0.0 {
		t.Fatalf("older than an hour: %v", inv)
	}
	inv = must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"dry_run": true, "older_than": "2999-01-01T00:00:00Z"}), 200).json(t)
	if inv["entries"] != 4.0 {
		t.Fatalf("older than 2999: %v", inv)
	}
	// Entries carry their recipe (and configuration epoch).
	for recipe, want := range map[string]float64{"default": 4, "another": 0} {
		inv = must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"dry_run": true, "recipe": recipe}), 200).json(t)
		if inv["entries"] != want {
			t.Fatalf("recipe %s: %v", recipe, inv)
		}
	}
	must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"recipe": "a/b"}), 400)
	must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"older_than": "yesterday"}), 400)
	must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"model": "a/b"}), 400)
	inv = must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"model": "big"}), 200).json(t)
	if inv["entries"] != 1.0 || inv["dry_run"] != false {
		t.Fatalf("invalidate: %v", inv)
	}
	if got := must(t, e.call("GET", "/api/v1/storage/response-cache/health", nil), 200).json(t)["entries"]; got != 3.0 {
		t.Fatalf("entries after invalidation: %v", got)
	}

	// A flush scoped by recipe and decision: nothing of another decision.
	f := must(t, e.call("POST", "/api/v1/storage/response-cache/flush", map[string]any{"recipe": "default", "decision": "other"}), 200).json(t)
	if f["epoch"] != 1.0 || f["removed"] != 0.0 || f["scope"] != "[decision=other][recipe=default]" {
		t.Fatalf("flush of another decision: %v", f)
	}
	f = must(t, e.call("POST", "/api/v1/storage/response-cache/flush", map[string]any{"scope": "response_cache/v2/model=small", "recipe": "default"}), 200).json(t)
	if f["epoch"] != 1.0 || f["removed"] != 3.0 {
		t.Fatalf("flush: %v", f)
	}
	f = must(t, e.call("POST", "/api/v1/storage/response-cache/flush", map[string]any{}), 200).json(t)
	if f["epoch"] != 1.0 || f["removed"] != 0.0 || f["scope"] != "" {
		t.Fatalf("global flush: %v", f)
	}
	s = must(t, e.call("GET", "/api/v1/storage/response-cache/stats", nil), 200).json(t)
	if s["entries"] != 0.0 || len(s["epochs"].([]any)) != 3 || s["evictions"].(map[string]any)["flushed"] != 3.0 || s["evictions"].(map[string]any)["invalidated"] != 1.0 {
		t.Fatalf("stats after flushes: %v", s)
	}
}

// POST test says what the binding's plugin would do, counting nowhere.
func TestResponseCacheTest(t *testing.T) {
	e, p := cacheEnv(t, baseConfig(t), 2)
	before, _ := p.Cache().Counts()
	binding := map[string]any{"recipe": "default", "decision": "rest"}
	q := func(text string) map[string]any {
		return map[string]any{"model": "MoM", "messages": []any{map[string]any{"role": "user", "content": text}}}
	}
	hit := must(t, e.call("POST", "/api/v1/storage/response-cache/test", map[string]any{"binding": binding, "request": q("question 1"), "model": "small"}), 200).json(t)
	if hit["result"] != "hit" || hit["kind"] != "exact" || hit["answer_bytes"].(float64) == 0 || hit["model"] != "small" {
		t.Fatalf("a stored question: %v", hit)
	}
	// The routed model: rest selects small for a plain question.
	hit = must(t, e.call("POST", "/api/v1/storage/response-cache/test", map[string]any{"binding": binding, "request": q("question 0")}), 200).json(t)
	if hit["result"] != "hit" || hit["model"] != "small" {
		t.Fatalf("a stored question, routed: %v", hit)
	}
	miss := must(t, e.call("POST", "/api/v1/storage/response-cache/test", map[string]any{"binding": binding, "request": q("how do tides work?"), "model": "small"}), 200).json(t)
	if miss["result"] != "miss" || miss["kind"] != nil || miss["detail"] == "" {
		t.Fatalf("an unseen question: %v", miss)
	}
	// Another model's scope holds only question 0.
	miss = must(t, e.call("POST", "/api/v1/storage/response-cache/test", map[string]any{"binding": binding, "request": q("question 1"), "model": "big"}), 200).json(t)
	if miss["result"] != "miss" {
		t.Fatalf("question 1 for big: %v", miss)
	}
	if after, _ := p.Cache().Counts(); after != before {
		t.Fatalf("a test lookup was counted: %+v then %+v", before, after)
	}
	must(t, e.call("POST", "/api/v1/storage/response-cache/test", map[string]any{"binding": map[string]any{"recipe": "default", "decision": "math"}, "request": q("x")}), 404)
	must(t, e.call("POST", "/api/v1/storage/response-cache/test", map[string]any{"binding": map[string]any{"recipe": "default", "decision": "nope"}, "request": q("x")}), 404)
	must(t, e.call("POST", "/api/v1/storage/response-cache/test", map[string]any{"binding": binding}), 400)
}

// Without a response cache the routes keep their 503.
func TestResponseCacheNotConfigured(t *testing.T) {
	e := newEnv(t, writeConfig(t, baseConfig(t)))
	for _, p := range []string{"capabilities", "health", "stats"} {
		must(t, e.call("GET", "/api/v1/storage/response-cache/"+p, nil), 503)
	}
	must(t, e.call("POST", "/api/v1/storage/response-cache/flush", map[string]any{}), 503)
}

// cache.read reads, cache.invalidate invalidates, cache.manage flushes; both
// mutations are audited.
func TestResponseCachePermissions(t *testing.T) {
	t.Setenv("JUNCTION_TEST_READER", "reader-token-1")
	t.Setenv("JUNCTION_TEST_INVAL", "inval-token-2")
	t.Setenv("JUNCTION_TEST_ADMIN", "admin-token-3")
	cfg := strings.Replace(baseConfig(t), "    api: {batch_classification: {max_batch_size: 4}}", `    api: {batch_classification: {max_batch_size: 4}}
    management_api:
      auth:
        mode: bearer
        roles:
          - {name: reader, permissions: [cache.read]}
          - {name: inval, permissions: [cache.read, cache.invalidate]}
          - {name: admin, permissions: [cache.read, cache.invalidate, cache.manage, audit.read]}
        tokens:
          - {name: rita, roles: [reader], env: JUNCTION_TEST_READER}
          - {name: ivan, roles: [inval], env: JUNCTION_TEST_INVAL}
          - {name: ada, roles: [admin], env: JUNCTION_TEST_ADMIN}`, 1)
	e, _ := cacheEnv(t, cfg, 1)
	must(t, e.call("GET", "/api/v1/storage/response-cache/stats", nil), 401)
	e.token = "reader-token-1"
	must(t, e.call("GET", "/api/v1/storage/response-cache/stats", nil), 200)
	r := must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"dry_run": true}), 403)
	if r.json(t)["error"].(map[string]any)["required_permission"] != "cache.invalidate" {
		t.Fatalf("403: %s", r.body)
	}
	e.token = "inval-token-2"
	must(t, e.call("POST", "/api/v1/storage/response-cache/invalidate", map[string]any{"model": "big"}), 200)
	r = must(t, e.call("POST", "/api/v1/storage/response-cache/flush", map[string]any{}), 403)
	if r.json(t)["error"].(map[string]any)["required_permission"] != "cache.manage" {
		t.Fatalf("403: %s", r.body)
	}
	e.token = "admin-token-3"
	must(t, e.call("POST", "/api/v1/storage/response-cache/flush", map[string]any{}), 200)
	for action, who := range map[string]string{"storage.response_cache.invalidate": "ivan", "storage.response_cache.flush": "ada"} {
		a := must(t, e.call("GET", "/api/v1/observability/audit?action="+action, nil), 200).json(t)
		entries := a["entries"].([]any)
		if len(entries) != 1 || entries[0].(map[string]any)["principal"] != who || entries[0].(map[string]any)["status"] != 200.0 {
			t.Fatalf("audit of %s: %v", action, a)
		}
	}
}
