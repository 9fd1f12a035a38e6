package wasm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/gateway"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/recipes"
)

const gatewayConfig = `
version: v1
listeners:
  - {name: public, port: 8801, timeout: 5s}
providers:
  defaults: {default_model: demo}
  models:
    - name: demo
      backend_refs: [{provider: demo}]
recipes:
  - name: default
    signals:
      keywords:
        - {name: crash, keywords: ["crash"]}
        - {name: strict, keywords: ["strict"]}
    decisions:
      - name: crashing
        priority: 100
        rules: {operator: OR, conditions: [{type: keyword, name: crash}]}
        modelRefs: [{model: demo}]
        plugins:
          - type: hostile
            configuration: {do: exit}
          - type: hello
            configuration: {greeting: "still greeted"}
      - name: strict
        priority: 90
        rules: {operator: OR, conditions: [{type: keyword, name: strict}]}
        modelRefs: [{model: demo}]
        plugins:
          - type: hostile
            configuration: {do: exit}
            on_error: fail
      - name: general
        priority: 10
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: demo}]
        plugins:
          - type: hello
            configuration: {greeting: "Be brief."}
`

type gatewayEnv struct {
	mods  *wasm.Modules
	srv   *httptest.Server
	cache *memstore.Cache
	host  *hostapi.Host
}

func newGatewayEnv(t *testing.T) *gatewayEnv {
	t.Helper()
	ctx := context.Background()
	backends, cache, _, err := wasm.Backends(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: plugintest.CacheDir(), Backends: backends, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(ctx) })
	var reg hostapi.Registry
	for typ, dir := range map[string]string{"hello": "../../../hostapi/testdata/hello", "hostile": "../../../hostapi/testdata/hostile"} {
		if err := reg.Register(typ, plugintest.Build(t, dir)); err != nil {
			t.Fatal(err)
		}
	}
	mods, err := wasm.Load(ctx, host, &reg, hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := recipes.Parse([]byte(gatewayConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := mods.Warm(ctx, doc, 2); err != nil {
		t.Fatal(err)
	}
	runner := plugin.New(mods)
	gen, err := engine.Compile(doc, "", engine.Options{Plugins: runner})
	if err != nil {
		t.Fatal(err)
	}
	ups := gateway.NewUpstreams(gateway.UpstreamOptions{})
	t.Cleanup(ups.Close)
	h := gateway.New(gateway.Options{Listener: doc.Listeners[0], Runtime: engine.NewRuntime(gen),
		Metrics: metrics.New(prometheus.NewRegistry()), Plugins: runner, Upstreams: ups})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &gatewayEnv{mods: mods, srv: srv, cache: cache, host: host}
}

func (e *gatewayEnv) chat(t *testing.T, text string) (*http.Response, string) {
	t.Helper()
	body := `{"model":"auto","messages":[{"role":"user","content":"` + text + `"}]}`
	resp, err := http.Post(e.srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestGatewayRunsModules serves requests through the gateway with plugins
// run in the wasm host: the request phase's report, the response phase
// storing the answer, and a crashing plugin that fails only its own step.
func TestGatewayRunsModules(t *testing.T) {
	e := newGatewayEnv(t)

	resp, body := e.chat(t, "hello there")
	if resp.StatusCode != 200 || resp.Header.Get("X-Junction-Plugins") != "hello=applied" {
		t.Fatalf("status %d, plugins %q: %s", resp.StatusCode, resp.Header.Get("X-Junction-Plugins"), body)
	}
	// The response phase runs after the answer was sent.
	deadline := time.Now().Add(5 * time.Second)
	for e.cache.Len("hello") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the response phase stored nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, ok, err := e.cache.Lookup(context.Background(), "hello", "last", nil, 0)
	if err != nil || !ok || !strings.Contains(string(got.Value), `"chat.completion"`) {
		t.Fatalf("cached answer = %s %v %v", got.Value, ok, err)
	}

	// on_error skip: the crash fails its step, the next plugin and the
	// request go on.
	resp, body = e.chat(t, "please crash")
	if resp.StatusCode != 200 || resp.Header.Get("X-Junction-Plugins") != "hostile=failed,hello=applied" {
		t.Fatalf("crash/skip: status %d, plugins %q: %s", resp.StatusCode, resp.Header.Get("X-Junction-Plugins"), body)
	}
	// on_error fail: the client gets an error naming the plugin.
	resp, body = e.chat(t, "strict please")
	if resp.StatusCode != 500 || !strings.Contains(body, "hostile") {
		t.Fatalf("crash/fail: status %d: %s", resp.StatusCode, body)
	}
	if n := e.host.Faults("hostile", hostapi.FaultExit); n != 2 {
		t.Fatalf("exit faults = %v, want 2", n)
	}
	// And the router keeps serving.
	if resp, _ := e.chat(t, "hello again"); resp.StatusCode != 200 {
		t.Fatalf("after the faults: %d", resp.StatusCode)
	}
	// The bindings: hello twice (two configurations), hostile once.
	bs := e.mods.Bindings("")
	if len(bs) != 3 || bs[0].Type != "hello" || bs[2].Type != "hostile" || bs[0].Instances < 1 {
		t.Fatalf("bindings = %+v", bs)
	}
	if hs := e.mods.Bindings("hostile"); len(hs) != 1 || string(hs[0].Configuration) != `{"do":"exit"}` {
		t.Fatalf("hostile bindings = %+v", hs)
	}
}

func TestValidationUsesModuleSchemas(t *testing.T) {
	ctx := context.Background()
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: plugintest.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(ctx)
	var reg hostapi.Registry
	if err := reg.RegisterTrusted("hello", plugintest.Build(t, "../../../hostapi/testdata/hello")); err != nil {
		t.Fatal(err)
	}
	mods, err := wasm.Load(ctx, host, &reg, hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := mods.Module("hello"); !m.Trusted() {
		t.Fatal("a trusted registration was loaded untrusted")
	}
	doc, err := recipes.Parse([]byte(strings.Replace(gatewayConfig, `{greeting: "Be brief."}`, `{greeting: "", extra: 1}`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.Compile(doc, "", engine.Options{Plugins: plugin.New(mods)})
	var ve *recipes.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) == 0 {
		t.Fatalf("err = %v", err)
	}
	found := false
	for _, p := range ve.Problems {
		if strings.HasPrefix(p.Path, "/recipes/0/decisions/2/plugins/0/configuration") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no problem at the hello plugin's configuration: %+v", ve.Problems)
	}
	// A registered module whose descriptor names another type is refused.
	var bad hostapi.Registry
	if err := bad.Register("greeter", plugintest.Build(t, "../../../hostapi/testdata/hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := wasm.Load(ctx, host, &bad, hostapi.Limits{}); err == nil || !strings.Contains(err.Error(), "describes itself as hello") {
		t.Fatalf("err = %v", err)
	}
}
