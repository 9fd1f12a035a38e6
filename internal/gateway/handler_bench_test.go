package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"testing"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/dataplane/dataplanetest"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/internal/tracing/otlp"
	"github.com/junction-router/junction/internal/tracing/otlptest"
	"github.com/junction-router/junction/recipes"
)

// fixedUpstream answers every request with the same chat.completion, in
// memory: the handler benchmarks measure the gateway's own work without
// loopback sockets, whose cost and noise dwarf it.
type fixedUpstream struct{ answer []byte }

func (f fixedUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(f.answer)),
		ContentLength: int64(len(f.answer)),
		Request:       req,
	}, nil
}

// benchRecipes are the routing configurations of the handler benchmarks:
// keyword is BenchmarkGatewayOverhead's, bench is cmd/junction-bench's
// (keywords, pii and context signals).
var benchRecipes = map[string]string{
	"keyword": `
recipes:
  - name: default
    signals:
      keywords: [{name: proof, keywords: ["prove", "derive"]}]
    decisions:
      - name: hard
        priority: 100
        rules: {operator: OR, conditions: [{type: keyword, name: proof}]}
        modelRefs: [{model: small, use_reasoning: true}]
      - name: general
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small, use_reasoning: false}]
`,
	"bench": recipes.BenchRecipesYAML(),
	// keyword_reliability is keyword with a reliability and fallback policy
	// on the decision the benchmark's request matches: what an active
	// policy costs when the first attempt answers.
	"keyword_reliability": `
recipes:
  - name: default
    signals:
      keywords: [{name: proof, keywords: ["prove", "derive"]}]
    decisions:
      - name: hard
        priority: 100
        rules: {operator: OR, conditions: [{type: keyword, name: proof}]}
        modelRefs: [{model: small, use_reasoning: true}]
      - name: general
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small, use_reasoning: false}, {model: big}]
        reliability: {retry_count: 2, per_try_timeout: 30s}
        fallback: {enabled: true}
`,
}

const benchProviders = `
version: v1
providers:
  defaults: {default_model: small}
  reasoning_families:
    qwen3: {type: chat_template_kwargs, parameter: enable_thinking}
  models:
    - name: small
      reasoning_family: qwen3
      pricing: {currency: USD, prompt_per_1m: 0.10, completion_per_1m: 0.40}
      backend_refs: [{provider: demo}]
    - name: big
      backend_refs: [{provider: demo}]
`

// benchOptions compiles the configuration yaml and returns a gateway's
// options on it: its first listener, a fresh registry, no logs, upstreams
// made with uo (closed when b's run ends). The caller adds the plugins.
func benchOptions(b *testing.B, yaml string, uo UpstreamOptions) (Options, *recipes.Document) {
	b.Helper()
	doc, gen := dataplanetest.Compile(b, yaml, engine.Options{})
	ups := NewUpstreams(uo)
	b.Cleanup(ups.Close)
	return Options{
		Listener:  doc.Listeners[0],
		Runtime:   engine.NewRuntime(gen),
		Metrics:   metrics.New(prometheus.NewRegistry()),
		Upstreams: ups,
		Logger:    slog.New(slog.DiscardHandler),
	}, doc
}

// BenchmarkGatewayHandler is the gateway's CPU and allocations per
// non-streamed request: ServeHTTP on a recorded request with an in-memory
// upstream, so that parsing, routing, rewriting, relaying, headers and metrics
// are all that is measured.
func BenchmarkGatewayHandler(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-demo-0a1b2c3d4e5f","object":"chat.completion","created":1767225600,"model":"small","choices":[{"index":0,"message":{"role":"assistant","content":"[demo:small] reasoning off (chat_template_kwargs.enable_thinking=false) — you said: \"What is the capital of France? Answer in one word, please.\""},"finish_reason":"stop"}],"usage":{"prompt_tokens":27,"completion_tokens":37,"total_tokens":64}}` + "\n")
	body := []byte(`{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"What is the capital of France? Answer in one word, please."}],"max_tokens":16}`)
	// traced: tracing on, every request sampled, spans exported over
	// OTLP/gRPC to an in-process receiver (the batch exporter works beside
	// the requests, on the same CPUs).
	// refund is cmd/junction-bench's request: bench.yaml's refund decision,
	// which inserts a system prompt and adds a header (issue 16's recipe).
	refund := []byte(`{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"I was charged twice for order 1234, can I get a refund? Answer in one word, please."}],"max_tokens":16}`)
	for _, run := range []struct {
		name, recipe string
		traced       bool
		body         []byte
	}{{"keyword", "keyword", false, body}, {"bench", "bench", false, body}, {"refund", "bench", false, refund}, {"keyword-traced", "keyword", true, body}, {"keyword_reliability", "keyword_reliability", false, body}} {
		b.Run(run.name, func(b *testing.B) {
			var tracer *tracing.Tracer
			if run.traced {
				rcv := otlptest.NewGRPCSink(b)
				t, err := otlp.New(recipes.Tracing{Enabled: true, Exporter: recipes.TracingExporter{Endpoint: rcv.Addr}}, otlp.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					_ = t.Shutdown(context.Background())
					if n := rcv.Count(); n < b.N {
						b.Errorf("the receiver got %d spans for %d requests", n, b.N)
					}
				}()
				tracer = t
			}
			o, _ := benchOptions(b, benchProviders+benchRecipes[run.recipe], UpstreamOptions{Demo: fixedUpstream{answer: answer}})
			o.Plugins, o.Tracer = native.Stage(), tracer
			gw := New(o)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// What net/http's server hands a handler: a parsed request with
				// a body reader, and a writer that does not copy headers.
				req := &http.Request{
					Method: http.MethodPost, URL: &url.URL{Path: "/v1/chat/completions"},
					Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: "gateway",
					Header:        http.Header{"Content-Type": {"application/json"}},
					Body:          io.NopCloser(bytes.NewReader(run.body)),
					ContentLength: int64(len(run.body)),
				}
				req = req.WithContext(ctx)
				w := &discardWriter{header: http.Header{}}
				gw.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
				if run.name == "refund" && w.header.Get("X-Junction-Decision") != "refund" {
					b.Fatalf("decision %q, want refund", w.header.Get("X-Junction-Decision"))
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps the status and drops the body.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}
