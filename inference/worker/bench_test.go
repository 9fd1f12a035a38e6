package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/inference"
	"github.com/junction-router/junction/inference/synthetic"
	"github.com/junction-router/junction/inference/worker"
)

// benchModels are the models the benchmarks run: a small encoder of
// realistic shape (2 layers, hidden 128, 128 positions), whose forward pass is
// compute-bound on CPU like small production classifiers, and a tiny one
// (1 layer, hidden 32), whose cost is mostly per-pass overhead, like the
// GloVe-based default models.
var benchModels = []struct {
	name string
	spec synthetic.Spec
}{
	{"encoder-h128-l2", synthetic.Spec{Task: synthetic.SequenceClassification, Labels: []string{"benign", "jailbreak"},
		Hidden: 128, Layers: 2, FFN: 512, MaxTokens: 128, Seed: 7}},
	{"tiny-h32-l1", synthetic.Spec{Task: synthetic.SequenceClassification, Labels: []string{"benign", "jailbreak"},
		Hidden: 32, Layers: 1, MaxTokens: 128, Seed: 8}},
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

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkWorkerHTTPOverhead compares one classify request through the
// worker (HTTP on loopback, JSON, tokenizing for the budget, the batcher,
// Server-Timing, metrics) with the same call on the session directly, over
// TCP and over a Unix socket (how the router reaches the workers it
// manages). It reports the median latency of each, their ratios (target
// ≤ 1.2), and the worker's own share from its Server-Timing.
func BenchmarkWorkerHTTPOverhead(b *testing.B) {
	for _, bm := range benchModels {
		b.Run(bm.name, func(b *testing.B) { benchOverhead(b, bm.spec) })
	}
}

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
	var d net.Dialer
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", sock) }}}
	return "http://worker", client
}

func benchOverhead(b *testing.B, spec synthetic.Spec) {
	r := openReal(b, map[string]synthetic.Spec{"m": spec})
	url, client := benchServer(b, r, worker.Options{})
	unixURL, unixClient := unixServer(b, r)
	direct := r.direct(b, "m")
	ctx := context.Background()
	const perRound, rounds = 200, 5
	var dl, hl, ul, sTotal, sForward []time.Duration
	b.ResetTimer()
	for range b.N {
		for round := range rounds {
			for i := range perRound {
				text := benchText(round*perRound + i)
				t0 := time.Now()
				if _, err := direct.Classify(ctx, inference.Texts(text), inference.ClassifyOptions{}); err != nil {
					b.Fatal(err)
				}
				dl = append(dl, time.Since(t0))
				t0 = time.Now()
				phases, err := classifyTimed(client, url, text)
				if err != nil {
					b.Fatal(err)
				}
				hl = append(hl, time.Since(t0))
				sTotal, sForward = append(sTotal, phases["total"]), append(sForward, phases["forward"])
				t0 = time.Now()
				if _, err := classifyTimed(unixClient, unixURL, text); err != nil {
					b.Fatal(err)
				}
				ul = append(ul, time.Since(t0))
			}
		}
	}
	md, mh := median(dl), median(hl)
	b.ReportMetric(float64(md.Microseconds()), "direct-µs")
	b.ReportMetric(float64(mh.Microseconds()), "http-µs")
	b.ReportMetric(float64(mh)/float64(md), "http/direct")
	mu := median(ul)
	b.ReportMetric(float64(mu.Microseconds()), "unix-µs")
	b.ReportMetric(float64(mu)/float64(md), "unix/direct")
	// Where the added time goes: the worker's own total (Server-Timing),
	// of which its forward pass; the rest of http-µs is the HTTP exchange.
	b.ReportMetric(float64(median(sTotal).Microseconds()), "server-total-µs")
	b.ReportMetric(float64(median(sForward).Microseconds()), "server-forward-µs")
}

// classifyTimed is classifyOnce returning the Server-Timing phases.
func classifyTimed(client *http.Client, url, text string) (map[string]time.Duration, error) {
	body, _ := json.Marshal(map[string]any{"input": text})
	resp, err := client.Post(url+"/v1/classify", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	phases := map[string]time.Duration{}
	for _, part := range strings.Split(resp.Header.Get("Server-Timing"), ",") {
		name, dur, ok := strings.Cut(strings.TrimSpace(part), ";dur=")
		if !ok {
			continue
		}
		ms, err := strconv.ParseFloat(dur, 64)
		if err != nil {
			return nil, fmt.Errorf("Server-Timing %q: %v", part, err)
		}
		phases[name] = time.Duration(ms * float64(time.Millisecond))
	}
	return phases, nil
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
