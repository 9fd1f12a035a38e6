package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/synthetic"
	"github.com/junction-router/junction/internal/inference/worker"
	"github.com/junction-router/junction/internal/inference/worker/client"
	"github.com/junction-router/junction/internal/inference/worker/supervise"
)

// benchModels are the models the benchmarks run: a small encoder of
// realistic shape (2 layers, hidden 128, 512 positions), whose forward pass is
// compute-bound on CPU like small production classifiers, and a tiny one
// (1 layer, hidden 32), whose cost is mostly per-pass overhead, like the
// GloVe-based default models.
var benchModels = []struct {
	name string
	spec synthetic.Spec
}{
	{"encoder-h128-l2", synthetic.Spec{Task: synthetic.SequenceClassification, Labels: []string{"benign", "jailbreak"},
		Hidden: 128, Layers: 2, FFN: 512, MaxTokens: 512, Seed: 7}},
	{"tiny-h32-l1", synthetic.Spec{Task: synthetic.SequenceClassification, Labels: []string{"benign", "jailbreak"},
		Hidden: 32, Layers: 1, MaxTokens: 512, Seed: 8}},
}

// benchText is a ~40-token input; i makes each text distinct.
func benchText(i int) string {
	w := synthetic.DefaultWords
	var sb strings.Builder
	for k := range 40 {
		sb.WriteString(w[(i*7+k*13)%len(w)])
		sb.WriteByte(' ')
	}
	return sb.String()
}

func benchServer(b *testing.B, r *realModels, opt worker.Options) (string, *http.Client) {
	b.Helper()
	opt.ResultCacheEntries = -1 // measure the model, not the cache
	h := startWith(b, []worker.Spec{{Model: "m"}}, r.loader(), opt, true)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	return h.url, client
}

func classifyOnce(client *http.Client, url, text string) error {
	body, _ := json.Marshal(map[string]any{"input": text})
	resp, err := client.Post(url+"/v1/classify", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// BenchmarkWorkerHTTPOverhead compares classify calls through the worker
// with the same calls on the session directly, for inputs of 16, 128 and 512
// tokens (the model's whole window), one input per request and 32, so that
// the report shows how the worker's fixed cost per request amortises. Each
// sample is a triple, in turn: the session (inference.Model.Classify), the
// worker over TCP loopback and the worker over a Unix socket (how `junction
// serve` reaches the workers it manages), both through the router's own
// client (internal/inference/worker/client). It reports p50 and p99 of each, their
// ratios to the direct call (target ≤ 1.2), and the medians of the worker's
// own Server-Timing total and forward (over the Unix socket), which split the
// added time into the worker's share and the HTTP exchange's.
func BenchmarkWorkerHTTPOverhead(b *testing.B) {
	for _, bm := range benchModels {
		b.Run(bm.name, func(b *testing.B) { benchOverhead(b, bm.spec) })
	}
}

// overheadSizes are the input sizes, in tokens the model reads (special
// tokens included), and the inputs per request, of the overhead benchmark.
var overheadSizes = []struct{ tokens, batch int }{{16, 1}, {128, 1}, {512, 1}, {16, 32}, {128, 32}, {512, 32}}

// unixServer serves a worker on a Unix socket, as `junction serve` reaches
// the workers it manages, and returns a client that dials it.
func unixServer(b *testing.B, r *realModels) (string, *http.Client) {
	b.Helper()
	srv, err := worker.New([]worker.Spec{{Model: "m"}}, r.loader(), worker.Options{ResultCacheEntries: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if st := srv.WaitSettled(ctx); st != worker.StateReady {
		b.Fatalf("worker did not become ready: %s", st)
	}
	sock := filepath.Join(b.TempDir(), "w.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go func() { _ = hs.Serve(l) }()
	b.Cleanup(func() {
		_ = hs.Close()
		_ = srv.Close()
	})
	return "http://worker", supervise.UnixClient(sock)
}

// tokenText returns a text of exactly n tokens (special tokens included) for
// the model, distinct for each i.
func tokenText(b *testing.B, m *inference.Model, n, i int) string {
	b.Helper()
	w := synthetic.DefaultWords[:60] // plain ASCII words, one token each
	var sb strings.Builder
	for k := range n - m.Tokenizer().NumSpecial(false) {
		sb.WriteString(w[(i*7+k*13)%len(w)])
		sb.WriteByte(' ')
	}
	text := sb.String()
	if got, _ := m.CountTokens(text, 0); got != n {
		b.Fatalf("the bench text has %d tokens, not %d", got, n)
	}
	return text
}

// workerClassifier is the router's classifier for one worker.
func workerClassifier(b *testing.B, name, url string, hc *http.Client, observe client.Observer) *client.Classifier {
	b.Helper()
	p, err := client.New(client.Options{Deployment: name, Replicas: []client.Replica{{HTTP: hc, BaseURL: url, Model: "m"}}, Observe: observe})
	if err != nil {
		b.Fatal(err)
	}
	p.SetReady(0, true)
	return client.NewClassifier(p, name, client.ClassifyOptions{})
}

func benchOverhead(b *testing.B, spec synthetic.Spec) {
	r := openReal(b, map[string]synthetic.Spec{"m": spec})
	url, tcpHTTP := benchServer(b, r, worker.Options{})
	unixURL, unixHTTP := unixServer(b, r)
	var last client.Call
	observe := func(c client.Call) { last = c }
	tcp := workerClassifier(b, "tcp", url, tcpHTTP, observe)
	unix := workerClassifier(b, "unix", unixURL, unixHTTP, observe)
	direct := r.direct(b, "m")
	ctx := context.Background()
	for _, sz := range overheadSizes {
		b.Run(fmt.Sprintf("tokens=%d/batch=%d", sz.tokens, sz.batch), func(b *testing.B) {
			// Distinct texts, so that no cache anywhere answers twice.
			const distinct = 64
			texts := make([][]string, distinct)
			for i := range texts {
				for k := range sz.batch {
					texts[i] = append(texts[i], tokenText(b, direct, sz.tokens, i*sz.batch+k))
				}
			}
			var dl, tl, ul, sTotal, sForward []time.Duration
			check := func(out [][]signal.LabelScore, err error) {
				if err != nil {
					b.Fatal(err)
				}
				if len(out) != sz.batch {
					b.Fatalf("%d results for %d inputs", len(out), sz.batch)
				}
			}
			// Samples: as many triples as fit about 8 s, at least 30 and
			// at most 1500 (p99 needs a few hundred to mean anything).
			budget := 8 * time.Second
			b.ResetTimer()
			for range b.N {
				began := time.Now()
				for i := 0; i < 1500 && (i < 30 || time.Since(began) < budget); i++ {
					in := texts[i%distinct]
					t0 := time.Now()
					res, err := direct.Classify(ctx, inference.Texts(in...), inference.ClassifyOptions{})
					if err != nil {
						b.Fatal(err)
					}
					dl = append(dl, time.Since(t0))
					if len(res.Results) != sz.batch || res.Usage.Tokens != sz.tokens*sz.batch || res.Usage.TokensLowerBound {
						b.Fatalf("direct: %d results, %d tokens", len(res.Results), res.Usage.Tokens)
					}
					t0 = time.Now()
					check(tcp.Classify(ctx, in))
					tl = append(tl, time.Since(t0))
					t0 = time.Now()
					check(unix.Classify(ctx, in))
					ul = append(ul, time.Since(t0))
					for _, p := range last.Server {
						switch p.Name {
						case "total":
							sTotal = append(sTotal, p.Duration)
						case "forward":
							sForward = append(sForward, p.Duration)
						}
					}
				}
			}
			b.StopTimer()
			us := func(d time.Duration) float64 { return float64(d) / 1e3 }
			d50, d99 := quantile(dl, 0.5), quantile(dl, 0.99)
			t50, t99 := quantile(tl, 0.5), quantile(tl, 0.99)
			u50, u99 := quantile(ul, 0.5), quantile(ul, 0.99)
			b.ReportMetric(float64(len(dl)), "samples")
			b.ReportMetric(us(d50), "direct-p50-µs")
			b.ReportMetric(us(d99), "direct-p99-µs")
			b.ReportMetric(us(t50), "tcp-p50-µs")
			b.ReportMetric(us(t99), "tcp-p99-µs")
			b.ReportMetric(us(u50), "unix-p50-µs")
			b.ReportMetric(us(u99), "unix-p99-µs")
			b.ReportMetric(float64(t50)/float64(d50), "tcp/direct-p50")
			b.ReportMetric(float64(t99)/float64(d99), "tcp/direct-p99")
			b.ReportMetric(float64(u50)/float64(d50), "unix/direct-p50")
			b.ReportMetric(float64(u99)/float64(d99), "unix/direct-p99")
			// Where the added time goes: the worker's own total, of which
			// its forward pass; the rest of unix-p50 is the HTTP exchange.
			if len(sTotal) > 0 && len(sForward) > 0 {
				b.ReportMetric(us(quantile(sTotal, 0.5)), "server-total-µs")
				b.ReportMetric(us(quantile(sForward, 0.5)), "server-forward-µs")
			}
		})
	}
}

// quantile returns the q-quantile of d (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// BenchmarkWorkerBatching runs 32 concurrent clients sending one-input
// classify requests, against a worker that batches (the defaults: 2 ms
// window, 65536 tokens per pass) and one that runs each request in its own
// forward pass. It reports the median throughput of each over alternating
// rounds and their ratio (target ≥ 3).
func BenchmarkWorkerBatching(b *testing.B) {
	for _, bm := range benchModels {
		b.Run(bm.name, func(b *testing.B) { benchBatching(b, bm.spec) })
	}
}

func benchBatching(b *testing.B, spec synthetic.Spec) {
	r := openReal(b, map[string]synthetic.Spec{"m": spec})
	batchedURL, client := benchServer(b, r, worker.Options{})
	singleURL, _ := benchServer(b, r, worker.Options{MaxBatchRequests: 1, BatchWindowMs: -1})
	const clients, rounds = 32, 3
	round := 2 * time.Second
	run := func(url string) float64 {
		var done atomic.Int64
		stop := time.Now().Add(round)
		var wg sync.WaitGroup
		var failed atomic.Value
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(stop); i++ {
					if err := classifyOnce(client, url, benchText(c*100000+i)); err != nil {
						failed.Store(err)
						return
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		return float64(done.Load()) / round.Seconds()
	}
	var batched, single []float64
	b.ResetTimer()
	for range b.N {
		for range rounds {
			batched = append(batched, run(batchedURL))
			single = append(single, run(singleURL))
		}
	}
	slices.Sort(batched)
	slices.Sort(single)
	mb, ms := batched[len(batched)/2], single[len(single)/2]
	b.ReportMetric(mb, "batched-req/s")
	b.ReportMetric(ms, "unbatched-req/s")
	b.ReportMetric(mb/ms, "batched/unbatched")
}

// BenchmarkHandlerClassify is the worker's own cost per classify request, in
// process (no sockets), on a test model whose forward pass costs nothing.
func BenchmarkHandlerClassify(b *testing.B) {
	h := start(b, map[string]worker.Model{"guard": newWordModel(worker.TaskSequence)}, worker.Options{ResultCacheEntries: -1})
	handler := h.srv.Handler()
	body, _ := json.Marshal(map[string]any{"input": benchText(1)})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest(http.MethodPost, "/v1/classify", bytes.NewReader(body))
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
