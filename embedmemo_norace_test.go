//go:build !race

// The plugin host compiles the built-in modules at start, which the race
// detector makes too slow for these real-server tests.

package junction

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

// memoConfig is the example configuration's shape: a decision reading an
// embedding signal (billing_question) and the catch-all decision with an
// exact_then_semantic response cache at 0.92, on the default embedder.
const memoConfig = `version: v1
listeners:
  - {name: public, address: 127.0.0.1, port: 8801, entrypoint: default}
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo}]}
    - {name: big, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      embeddings:
        - name: billing_question
          candidates: ["I was charged twice", "how do I get a refund", "update my credit card"]
          threshold: 0.75
    decisions:
      - name: billing
        priority: 100
        rules: {operator: OR, conditions: [{type: embedding, name: billing_question}]}
        modelRefs: [{model: big}]
      - name: general
        priority: 1
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]
        plugins:
          - type: response_cache
            configuration: {mode: exact_then_semantic, semantic: {similarity_threshold: 0.92}, ttl_seconds: 600}
`

// Under serve, a request's routing signal embeds its last user message with
// the loaded model, and the response cache's embedding of the same text in
// its request and response phases (the plugin host's embed function, a
// different user of the model) is answered from the model's memo: one model
// call a request, not three.
func TestResponseCacheReusesTheSignalsEmbedding(t *testing.T) {
	orttest.Library(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(memoConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := New(Options{ConfigPath: path, DataDir: t.TempDir(), ListenerAddrs: map[string]string{"public": "127.0.0.1:0"}, DisableExtproc: true,
		ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Registry: reg, SignalModels: SignalModelsONNX})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	select {
	case <-s.Ready():
	case err := <-errc:
		t.Fatalf("the server did not start: %v", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}()
	memo := func(result string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "router_local_model_embed_memo_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
		t.Fatalf("no router_local_model_embed_memo_total{result=%q}", result)
		return 0
	}
	ask := func(text string) http.Header {
		t.Helper()
		resp, err := http.Post("http://"+s.GatewayAddr()+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"MoM","messages":[{"role":"user","content":"`+text+`"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%q: %d %s", text, resp.StatusCode, b)
		}
		return resp.Header
	}
	for _, text := range []string{
		"What is the capital of Australia?",
		"Explain how a hash map handles collisions.",
		"Give me three ideas for a birthday party.",
	} {
		hit, miss := memo("hit"), memo("miss")
		h := ask(text)
		if d := h.Get("X-Junction-Decision"); d != "general" {
			t.Fatalf("%q: decision %q, want general (the cached one)", text, d)
		}
		if got := h.Get("X-Cache"); got != "" && !strings.EqualFold(got, "miss") {
			t.Fatalf("%q: x-cache %q on a new question", text, got)
		}
		// The response phase (which stores the answer) may finish just
		// after the client has the answer.
		for i := 0; i < 200 && memo("hit")-hit < 2; i++ {
			time.Sleep(5 * time.Millisecond)
		}
		if dh, dm := memo("hit")-hit, memo("miss")-miss; dm != 1 || dh != 2 {
			t.Fatalf("%q, a semantic cache miss: %v model calls and %v memo hits, want 1 (the signal's) and 2 (the cache's two phases)", text, dm, dh)
		}
	}
}
