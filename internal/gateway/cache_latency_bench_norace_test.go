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
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/builtintest"
	"github.com/junction-router/junction/recipes"
)

// BenchmarkGatewayCacheLatency is the latency the response cache adds to the
// request path on a semantic miss (exact_then_semantic, run natively as
// serve runs it), measured as a client sees it: the time ServeHTTP takes to
// answer, not the CPU of the response phase, which runs after the answer
// is released. Each iteration sends one request through a gateway with the
// cache off and one through a gateway with it on, in alternating order, and
// times each alone; the reported figures are the medians of the off and on
// latencies and of their paired differences (added-µs), so a loaded machine
// slows both sides of a pair alike. The namespace is filled with entries
// entries first and stays that size (the measured answers are refused by
// the cache: finish_reason content_filter), so the figure is the request
// path at that size rather than a scan that grows through the run. On
// Linux it also reports the paired difference of the CPU time the request
// path used on the benchmark's thread (added-cpu-µs): the work the cache
// adds, without the waits for a core that a loaded machine puts into the
// wall-clock figures (the response phase, on its own goroutine, is in
// neither). embed-cpu-µs is the CPU time of one call of the harness's
// embedder (lexical.HashedEmbedder, 1,024 dims) for a question, measured in
// the same loop: the model's share of a semantic miss, which serve's
// embedding memo answers instead when the recipe's signals embedded the
// question first; added-cpu-µs minus it is the cache's own.
func BenchmarkGatewayCacheLatency(b *testing.B) {
	storable := []byte(`{"id":"chatcmpl-demo","object":"chat.completion","created":1767225600,"model":"small","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":27,"completion_tokens":2,"total_tokens":29}}` + "\n")
	refused := bytes.Replace(storable, []byte(`"stop"`), []byte(`"content_filter"`), 1)
	for _, entries := range []int{0, 1000} {
		b.Run(fmt.Sprintf("entries=%d", entries), func(b *testing.B) {
			runner := builtintest.NativeRunner(b)
			off := latencyGateway(b, runner, "", refused)
			on := latencyGateway(b, runner, "exact_then_semantic", refused)
			fill := latencyGateway(b, runner, "exact_then_semantic", storable)
			asked := 0
			for range entries {
				asked++
				serveQuestion(b, fill, asked)
			}
			time.Sleep(200 * time.Millisecond) // the fill's response phases (the stores) finish
			offs, ons, added := make([]float64, 0, b.N), make([]float64, 0, b.N), make([]float64, 0, b.N)
			addedCPU, embedCPU := make([]float64, 0, b.N), make([]float64, 0, b.N)
			embedder := lexical.NewHashedEmbedder(0)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				asked++
				var offT, onT timing
				if i%2 == 0 {
					offT, onT = serveQuestion(b, off, asked), serveQuestion(b, on, asked)
				} else {
					onT, offT = serveQuestion(b, on, asked), serveQuestion(b, off, asked)
				}
				offs, ons = append(offs, us(offT.wall)), append(ons, us(onT.wall))
				added = append(added, us(onT.wall)-us(offT.wall))
				if onT.cpuOK && offT.cpuOK {
					addedCPU = append(addedCPU, us(onT.cpu)-us(offT.cpu))
				}
				if d, ok := embedTime(b, embedder, asked); ok {
					embedCPU = append(embedCPU, us(d))
				}
			}
			b.StopTimer()
			b.ReportMetric(median(offs), "off-µs")
			b.ReportMetric(median(ons), "on-µs")
			b.ReportMetric(median(added), "added-µs")
			if len(addedCPU) > 0 {
				b.ReportMetric(median(addedCPU), "added-cpu-µs")
				b.ReportMetric(median(embedCPU), "embed-cpu-µs")
			}
		})
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// latencyGateway is the benchmark handler's gateway with the decision's
// response_cache in mode (none when empty), answered by answer.
func latencyGateway(b *testing.B, runner plugin.Runner, mode string, answer []byte) *Server {
	b.Helper()
	plugins := ""
	if mode != "" {
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
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ups := NewUpstreams(UpstreamOptions{Demo: fixedUpstream{answer: answer}})
	b.Cleanup(ups.Close)
	return New(Options{
		Listener: doc.Listeners[0], Runtime: engine.NewRuntime(gen), Metrics: metrics.New(prometheus.NewRegistry()),
		Plugins: runner, Upstreams: ups, Logger: slog.New(slog.DiscardHandler),
	})
}

// embedTime is the thread CPU time of embedding question n's text.
func embedTime(b *testing.B, e *lexical.HashedEmbedder, n int) (time.Duration, bool) {
	text := "What is the capital of " + word(n) + " please?"
	c0, ok0 := threadCPU()
	if _, err := e.Embed(context.Background(), []string{text}); err != nil {
		b.Fatal(err)
	}
	c1, ok1 := threadCPU()
	return c1 - c0, ok0 && ok1
}

// timing is how long the handler took to answer: wall clock, and the CPU
// time of the calling thread when the clock could be read (cpuOK).
type timing struct {
	wall, cpu time.Duration
	cpuOK     bool
}

// serveQuestion sends question n (a new one for every n) and returns how
// long the handler took to answer it.
func serveQuestion(b *testing.B, gw *Server, n int) timing {
	body := []byte(`{"model":"MoM","messages":[{"role":"user","content":"What is the capital of ` + word(n) + ` please?"}]}`)
	req := &http.Request{
		Method: http.MethodPost, URL: &url.URL{Path: "/v1/chat/completions"},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: "gateway",
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
	w := &discardWriter{header: http.Header{}}
	cpu0, ok0 := threadCPU()
	start := time.Now()
	gw.ServeHTTP(w, req.WithContext(context.Background()))
	t := timing{wall: time.Since(start)}
	cpu1, ok1 := threadCPU()
	t.cpu, t.cpuOK = cpu1-cpu0, ok0 && ok1
	if w.status != http.StatusOK || w.header.Get("x-cache-status") == "hit" {
		b.Fatalf("status %d, x-cache-status %q", w.status, w.header.Get("x-cache-status"))
	}
	return t
}
