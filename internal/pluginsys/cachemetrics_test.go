package pluginsys

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/respcache"
)

// The built-in response_cache plugin, run by the real plugin system, misses,
// stores, then hits; the router_cache_* series read the same cache.
func TestResponseCacheMetricsFollowThePlugin(t *testing.T) {
	ctx := context.Background()
	doc := docWith(t, `[{type: response_cache, configuration: {mode: exact, ttl_seconds: 60}}]`)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := New(ctx, Options{CacheDir: plugintest.CacheDir(), Registerer: prometheus.NewRegistry(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Prepare(ctx, doc); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	p.WatchMetrics(m)
	refs := doc.Recipes[0].Decisions[0].Plugins
	req := func() *plugin.Request {
		c, err := chat.Parse([]byte(`{"model":"demo","messages":[{"role":"user","content":"what is the capital of France?"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return &plugin.Request{Chat: c, Decision: "all", Model: "demo"}
	}
	r1 := req()
	if _, err := p.Request(ctx, refs, r1); err != nil {
		t.Fatal(err)
	}
	answer := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"demo","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`
	if _, err := p.Response(ctx, refs, &plugin.Response{Request: r1, Status: 200, Body: []byte(answer)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Request(ctx, refs, req()); err != nil {
		t.Fatal(err)
	}
	k, n := p.Cache().Counts()
	if n != 1 || k.ExactHits != 1 || k.ExactMisses+k.SemanticMisses != 1 {
		t.Fatalf("cache after miss, store, hit: %d entries, %+v", n, k)
	}
	// Serve runs the built-in in process: its module was not even
	// compiled, and the management API says it runs natively.
	if mods := p.cur.Load().mods; mods != nil {
		t.Fatalf("a natively run built-in's module was compiled: %v", mods.Descriptors())
	}
	var runtime string
	for _, pt := range p.Types() {
		if pt.Type == "response_cache" && runtime == "" {
			runtime = pt.Runtime
		}
	}
	if runtime != "native" {
		t.Fatalf("response_cache runtime %q, want native", runtime)
	}
	want := `
# HELP router_cache_hit_ratio Share of response-cache lookups that hit, between 0 and 1.
# TYPE router_cache_hit_ratio gauge
router_cache_hit_ratio 0.5
# HELP router_cache_size Entries held by the response cache.
# TYPE router_cache_size gauge
router_cache_size 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "router_cache_hit_ratio", "router_cache_size"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(counter(t, reg, "router_cache_hits_total", "kind", "exact")); got != 1 {
		t.Fatalf("exact hits %v", got)
	}
	if n, _, _ := p.Cache().Invalidate(respcache.Filter{NamespacePrefix: "response_cache/v2"}, false); n != 1 {
		t.Fatalf("invalidated %d", n)
	}
	if got := testutil.ToFloat64(counter(t, reg, "router_cache_evictions_total", "reason", "invalidated")); got != 1 {
		t.Fatalf("invalidated evictions %v", got)
	}
	if got := testutil.ToFloat64(counter(t, reg, "router_cache_size")); got != 0 {
		t.Fatalf("size after invalidation %v", got)
	}
}

// counter gathers reg and returns the series of name with the label pair.
func counter(t *testing.T, reg *prometheus.Registry, name string, label ...string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			ok := true
			for i := 0; i+1 < len(label); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == label[i] && lp.GetValue() == label[i+1] {
						found = true
					}
				}
				ok = ok && found
			}
			if ok {
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
				g.Set(v)
				return g
			}
		}
	}
	t.Fatalf("no series %s %v", name, label)
	return nil
}
