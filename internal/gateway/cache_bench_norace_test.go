//go:build !race

package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/builtintest"
	"github.com/junction-router/junction/recipes"
)

// BenchmarkGatewayCacheMiss is what the response cache adds to a request it
// cannot answer: the same handler and in-memory upstream as
// BenchmarkGatewayHandler, every request a new question (so every lookup
// misses and every answer is stored), with the decision's response_cache off,
// exact, or exact_then_semantic (the semantic lookup embeds the question and
// scans the namespace, which fills up to its bound as the benchmark runs).
// The plugin runs as its module in the wasm host (wasm) or in process over
// the same host's functions (native, what serve runs). The cache's own cost
// is on − off, measured in one run.
func BenchmarkGatewayCacheMiss(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-demo","object":"chat.completion","created":1767225600,"model":"small","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":27,"completion_tokens":2,"total_tokens":29}}` + "\n")
	runners := map[string]plugin.Runner{"wasm": builtintest.Runner(b, "response_cache"), "native": builtintest.NativeRunner(b)}
	asked := 0 // across runs: the cache outlives each b.N round
	for _, name := range []string{"off", "exact/wasm", "exact/native", "exact_then_semantic/wasm", "exact_then_semantic/native"} {
		mode, rt, _ := strings.Cut(name, "/")
		runner := runners[rt]
		if mode == "off" {
			runner = runners["wasm"] // with no plugin to run
		}
		b.Run(name, func(b *testing.B) {
			plugins := ""
			if mode != "off" {
				plugins = fmt.Sprintf("\n        plugins: [{type: response_cache, configuration: {mode: %s, ttl_seconds: 600}}]", mode)
			}
			doc, err := recipes.Parse([]byte(benchProviders + `
recipes:
  - name: default
    decisions:
      - name: general
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small, use_reasoning: false}]` + plugins + "\n"))
			if err != nil {
				b.Fatal(err)
			}
			gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{Plugins: nil})
			if err != nil {
				b.Fatal(err)
			}
			ups := NewUpstreams(UpstreamOptions{Demo: fixedUpstream{answer: answer}})
			defer ups.Close()
			gw := New(Options{
				Listener: doc.Listeners[0], Runtime: engine.NewRuntime(gen), Metrics: metrics.New(prometheus.NewRegistry()),
				Plugins: runner, Upstreams: ups, Logger: slog.New(slog.DiscardHandler),
			})
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				asked++
				body := []byte(`{"model":"MoM","messages":[{"role":"user","content":"What is the capital of ` + word(asked) + ` please?"}]}`)
				req := &http.Request{
					Method: http.MethodPost, URL: &url.URL{Path: "/v1/chat/completions"},
					Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: "gateway",
					Header: http.Header{"Content-Type": {"application/json"}},
					Body:   io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
				}
				w := &discardWriter{header: http.Header{}}
				gw.ServeHTTP(w, req.WithContext(ctx))
				if w.status != http.StatusOK || w.header.Get("x-cache-status") == "hit" {
					b.Fatalf("status %d, x-cache-status %q", w.status, w.header.Get("x-cache-status"))
				}
			}
		})
	}
}

// word is a lower-case word unique to i (no digits, so the cache's slot guard
// sees the same slots for every question, as for real rewordings).
func word(i int) string {
	var buf []byte
	for i++; i > 0; i /= 26 {
		buf = append(buf, byte('a'+i%26))
	}
	return string(buf) + "land"
}
