//go:build !race

// These tests run the built-in rag and memory modules in a real plugin host
// (wazero compiles them, which is slow under the race detector).

package mgmt_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/pluginsys"
)

// newEnvWithPlugins is newEnv with serve's plugin system (the WebAssembly
// host running the built-ins) behind the plugin endpoints, its retrieve and
// memory functions backed by in-memory stores.
func newEnvWithPlugins(t *testing.T) (*env, *memstore.Retriever, *memstore.Memory) {
	t.Helper()
	return newEnvWithPluginsConfig(t, copyBase(t))
}

// ragDecisions are two decisions of the default recipe whose rag plugins
// retrieve from the knowledge base kb (top 2 and top 1): RAG previews run an
// active binding.
const ragDecisions = `      - name: rag_two
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]
        plugins: [{type: rag, configuration: {store: kb, top_k: 2}}]
      - name: rag_one
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]
        plugins: [{type: rag, configuration: {store: kb, top_k: 1}}]
`

// withRAGDecisions is the base configuration with ragDecisions.
func withRAGDecisions(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "  - name: spare\n", ragDecisions+"  - name: spare\n", 1)
	if s == string(b) {
		t.Fatal("testdata/base.yaml has no recipe spare to insert the rag decisions before")
	}
	return writeConfig(t, s)
}

func newEnvWithPluginsConfig(t *testing.T, path string) (*env, *memstore.Retriever, *memstore.Memory) {
	t.Helper()
	ctx := context.Background()
	emb := lexical.NewHashedEmbedder(0)
	ret := &memstore.Retriever{Vectors: memstore.NewVectors(), Embedder: emb}
	mem := memstore.NewMemory(emb)
	sys, err := pluginsys.New(ctx, pluginsys.Options{CacheDir: plugintest.CacheDir(), Retriever: ret, Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Close)
	cfg, err := mgmt.OpenConfig(ctx, mgmt.ConfigOptions{Path: path, Compile: compiler(t)})
	if err != nil {
		t.Fatal(err)
	}
	api, err := mgmt.New(mgmt.Options{Config: cfg, Startup: mgmt.NewStartup(), Version: "test", Plugins: sys})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	router, err := gorillamux.NewRouter(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, path: path, cfg: cfg, api: api, srv: srv, router: router}, ret, mem
}

func TestRAGPreviewHonoursTopLevelSuppliedContext(t *testing.T) {
	e, ret, _ := newEnvWithPluginsConfig(t, withRAGDecisions(t))
	req := map[string]any{"model": "MoM", "messages": []any{map[string]any{"role": "user", "content": "how long do refunds take?"}}}
	two := map[string]any{"recipe": "default", "decision": "rag_two"}

	// A candidate configuration is refused: RAG previews need binding.
	r := must(t, e.call("POST", "/api/v1/plugins/rag/preview", map[string]any{"configuration": map[string]any{"store": "kb"}, "request": req}), 400)
	if r.errCode(t) != mgmt.CodeInvalidInput || !strings.Contains(string(r.body), "needs binding") {
		t.Fatalf("rag candidate: %s", r.body)
	}
	r = must(t, e.call("POST", "/api/v1/plugins/tools/preview", map[string]any{"configuration": map[string]any{"block": []any{"shell"}}, "request": req}), 400)
	if r.errCode(t) != mgmt.CodeInvalidInput {
		t.Fatalf("tools candidate: %s", r.body)
	}

	// Preview: the top-level supplied_context is injected; nothing is
	// retrieved, and the input does not stay in the request.
	p := must(t, e.call("POST", "/api/v1/plugins/rag/preview", map[string]any{"binding": two, "request": req,
		"supplied_context": []any{"Refunds take 30 days.", map[string]any{"text": "Ask support.", "source": "faq.md", "score": 0.7}}}), 200).json(t)
	body := fmt.Sprint(p["request"])
	if p["mode"] != "preview" || p["backend_calls"] != 0.0 || p["persisted"] != false ||
		!strings.Contains(body, "[1] Refunds take 30 days.") || !strings.Contains(body, "[2] (faq.md) Ask support.") || strings.Contains(body, "supplied_context") {
		t.Fatalf("preview with top-level supplied_context: %v", p)
	}
	// The top-level field wins over one inside the request.
	inner := map[string]any{"model": "MoM", "supplied_context": []any{"inner"}, "messages": req["messages"]}
	p = must(t, e.call("POST", "/api/v1/plugins/rag/preview", map[string]any{"binding": two, "request": inner,
		"supplied_context": []any{"outer"}}), 200).json(t)
	if body := fmt.Sprint(p["request"]); !strings.Contains(body, "[1] outer") || strings.Contains(body, "inner") {
		t.Fatalf("top-level over inner: %v", p)
	}
	// Without any, the preview says what it would do.
	p = must(t, e.call("POST", "/api/v1/plugins/rag/preview", map[string]any{"binding": two, "request": req}), 200).json(t)
	if r := p["reports"].([]any)[0].(map[string]any); r["status"] != "skipped" || !strings.Contains(fmt.Sprint(r["detail"]), `would retrieve from "kb"`) {
		t.Fatalf("preview without supplied_context: %v", p)
	}

	// Probe retrieves for real through the host's retrieve; supplied_context
	// is not used, and it is removed.
	for i, text := range []string{"Refunds are issued within 30 days of the return.", "Our office is closed on Sundays."} {
		if err := ret.Add(context.Background(), "kb", memstore.Chunk{Text: text, Source: fmt.Sprintf("doc%d.md", i), FileID: fmt.Sprintf("file_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	p = must(t, e.call("POST", "/api/v1/plugins/rag/preview", map[string]any{"mode": "probe", "binding": map[string]any{"recipe": "default", "decision": "rag_one"},
		"request": req, "supplied_context": []any{"ignored"}}), 200).json(t)
	body = fmt.Sprint(p["request"])
	if p["mode"] != "probe" || p["backend_calls"] != 1.0 || p["persisted"] != false ||
		!strings.Contains(body, "(doc0.md) Refunds are issued within 30 days") || strings.Contains(body, "ignored") || strings.Contains(body, "Sundays") {
		t.Fatalf("probe: %v", p)
	}
	// A malformed supplied_context is the plugin's clear failure.
	p = must(t, e.call("POST", "/api/v1/plugins/rag/preview", map[string]any{"binding": two, "request": req, "supplied_context": "not a list"}), 200).json(t)
	if r := p["reports"].([]any)[0].(map[string]any); r["status"] != "failed" || !strings.Contains(fmt.Sprint(r["detail"]), "supplied_context must be an array") {
		t.Fatalf("malformed supplied_context: %v", p)
	}
}

func TestMemoryPreviewAndProbe(t *testing.T) {
	e, _, mem := newEnvWithPlugins(t)
	req := map[string]any{"model": "MoM", "user": "u-ada", "messages": []any{map[string]any{"role": "user", "content": "I live in Lisbon. Which trains go to Porto?"}}}
	cfg := map[string]any{"min_score": 0.05}

	// Preview: the top-level supplied_memories are injected, the statement
	// is shown, nothing is called or kept.
	p := must(t, e.call("POST", "/api/v1/plugins/memory/preview", map[string]any{"configuration": cfg, "request": req,
		"supplied_memories": []any{"I prefer trains to planes."}}), 200).json(t)
	body := fmt.Sprint(p["request"])
	rep := p["reports"].([]any)[0].(map[string]any)
	if p["backend_calls"] != 0.0 || p["persisted"] != false || !strings.Contains(body, "- I prefer trains to planes.") ||
		strings.Contains(body, "supplied_memories") || !strings.Contains(fmt.Sprint(rep["detail"]), "would remember 1 statement in live mode") {
		t.Fatalf("preview: %v", p)
	}
	if len(mem.Texts("u-ada")) != 0 {
		t.Fatalf("a preview kept %q", mem.Texts("u-ada"))
	}

	// Probe: recalls for real, keeps nothing.
	if err := mem.Remember(context.Background(), "u-ada", "I prefer trains to planes."); err != nil {
		t.Fatal(err)
	}
	p = must(t, e.call("POST", "/api/v1/plugins/memory/preview", map[string]any{"mode": "probe", "configuration": cfg, "request": req}), 200).json(t)
	if p["backend_calls"] != 1.0 || p["persisted"] != false || !strings.Contains(fmt.Sprint(p["request"]), "- I prefer trains to planes.") {
		t.Fatalf("probe: %v", p)
	}
	if got := mem.Texts("u-ada"); len(got) != 1 {
		t.Fatalf("a probe kept %q", got)
	}
}
