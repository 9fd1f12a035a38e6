package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/ratelimit/redisstore"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/respcache/rediscache"
	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/recipes"
)

// sharedStateGateway is a gateway whose decision runs the response cache
// (mode exact, natively, as serve runs it) on cache and whose
// global.rate_limits (one limit per model, of requests) count in limiter;
// with cache nil neither is configured.
func sharedStateGateway(t testing.TB, cache respcache.Backend, limiter *ratelimit.Limiter, requests int64, upstream http.RoundTripper) *Server {
	t.Helper()
	ctx := context.Background()
	plugins, limits := "", ""
	if cache != nil {
		plugins = "\n        plugins: [{type: response_cache, configuration: {mode: exact, ttl_seconds: 600}}]"
		limits = "\nglobal: {rate_limits: [{name: per-model, key: model, requests: " + strconv.FormatInt(requests, 10) + ", window: 1h}]}"
	}
	doc, err := recipes.Parse([]byte(benchProviders + limits + `
recipes:
  - name: default
    decisions:
      - name: general
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small, use_reasoning: false}]` + plugins + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	backends, _, _, err := wasm.Backends(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cache != nil {
		backends.Cache = respcache.Scoped{Backend: cache} // as serve wires it (internal/pluginsys)
	}
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: plugintest.CacheDir(), Backends: backends, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(ctx) })
	ups := NewUpstreams(UpstreamOptions{Demo: upstream})
	t.Cleanup(ups.Close)
	return New(Options{
		Listener: doc.Listeners[0], Runtime: engine.NewRuntime(gen), Metrics: metrics.New(prometheus.NewRegistry()),
		Plugins: plugin.New(native.WithHost(host, hostapi.Limits{})), Upstreams: ups, Logger: slog.New(slog.DiscardHandler),
		Limiter: limiter,
	})
}

// countingUpstream answers as fixedUpstream and counts the calls.
type countingUpstream struct {
	fixedUpstream
	n *atomic.Int64
}

func (c countingUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.fixedUpstream.RoundTrip(req)
}

var storableAnswer = []byte(`{"id":"chatcmpl-demo","object":"chat.completion","created":1767225600,"model":"small","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":27,"completion_tokens":2,"total_tokens":29}}` + "\n")

// ask sends question n through gw and returns the recorded answer.
func ask(gw *Server, n int) *httptest.ResponseRecorder {
	body := `{"model":"MoM","messages":[{"role":"user","content":"What is the capital of country number ` + strconv.Itoa(n) + `?"}]}`
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	gw.ServeHTTP(w, req)
	return w
}

// roundTrips counts what a client sends to Redis: each call (one command,
// or one pipeline: one write, one wait on one server) with its commands'
// names, for the commands named in watch.
type roundTrips struct {
	watch []string
	mu    sync.Mutex
	calls [][]string
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.record([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.record(cmds)
		return next(ctx, cmds)
	}
}

func (r *roundTrips) record(cmds []redis.Cmder) {
	var names []string
	for _, c := range cmds {
		if slices.Contains(r.watch, c.Name()) {
			names = append(names, c.Name())
		}
	}
	if len(names) > 0 {
		r.mu.Lock()
		r.calls = append(r.calls, names)
		r.mu.Unlock()
	}
}

func (r *roundTrips) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// With the response cache and the rate limits on one redis-server, a miss
// sends the take with the cache's exact lookup in one round trip, a hit
// sends the take alone; a refused request gets the limit's 429 (headers
// and body as without the cache), never reaches the backend, stores
// nothing and counts no cache lookup.
func TestSharedStateMissIsOneRoundTrip(t *testing.T) {
	c := redistest.StartVolatileServer(t).Client(t)
	rt := &roundTrips{watch: []string{"evalsha", "eval", "get"}}
	c.AddHook(rt)
	cache := rediscache.Open(context.Background(), c, respcache.Options{})
	t.Cleanup(func() { cache.Close() })
	var calls atomic.Int64
	gw := sharedStateGateway(t, cache, ratelimit.New(redisstore.New(c, true), nil), 3, countingUpstream{fixedUpstream{storableAnswer}, &calls})
	rt.take() // the load at open

	for n := range 3 {
		w := ask(gw, n)
		if w.Code != 200 || w.Header().Get("X-Ratelimit-Limit") != "3" || w.Header().Get("X-Ratelimit-Remaining") != strconv.Itoa(2-n) {
			t.Fatalf("question %d: %d %v %s", n, w.Code, w.Header(), w.Body)
		}
		got := rt.take()
		// The first take finds no script on the server: EVAL follows in
		// the same request (go-redis's Run would do the same alone).
		want := [][]string{{"evalsha", "get"}}
		if n == 0 {
			want = append(want, []string{"eval"})
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("question %d (a miss): round trips %v, want %v", n, got, want)
		}
	}
	waitFor(t, "the three answers stored", func() bool { _, n := cache.Counts(); return n == 3 })
	// The in-process store takes before the plugins: its refusal is the
	// one the held-back take must give.
	mem := sharedStateGateway(t, respcache.NewMemory(respcache.Options{}), ratelimit.New(nil, nil), 3, countingUpstream{fixedUpstream{storableAnswer}, &atomic.Int64{}})
	for n := range 3 {
		ask(mem, n)
	}
	want := ask(mem, 0)
	if w := ask(gw, 0); w.Code != 429 || want.Code != 429 || !sameAnswer(w, want) {
		t.Fatalf("a hit over the limit: %d %v %s; the in-process store's refusal: %d %v %s", w.Code, w.Header(), w.Body, want.Code, want.Header(), want.Body)
	} else if got := rt.take(); !slices.EqualFunc(got, [][]string{{"evalsha"}}, slices.Equal) {
		t.Fatalf("a hit: round trips %v, want the take alone", got)
	}
	for n := 3; n < 6; n++ {
		w := ask(gw, n)
		var eb struct {
			Error struct{ Type, Code string }
		}
		if w.Code != 429 || json.Unmarshal(w.Body.Bytes(), &eb) != nil || eb.Error.Type != "rate_limit_error" || eb.Error.Code != "too_many_requests" {
			t.Fatalf("question %d over the limit: %d %s", n, w.Code, w.Body)
		}
		h := w.Header()
		if h.Get("Retry-After") == "" || h.Get("X-Ratelimit-Retry-After") != h.Get("Retry-After") || h.Get("X-Ratelimit-Remaining") != "0" || h.Get("X-Cache-Status") != "miss" {
			t.Fatalf("question %d: 429 headers %v", n, h)
		}
		if got := rt.take(); !slices.EqualFunc(got, [][]string{{"evalsha", "get"}}, slices.Equal) {
			t.Fatalf("question %d refused: round trips %v, want the take with the lookup", n, got)
		}
	}
	time.Sleep(50 * time.Millisecond) // a store would run after the answer
	if n := calls.Load(); n != 3 {
		t.Errorf("the backend got %d requests, want the 3 admitted", n)
	}
	k, entries := cache.Counts()
	if entries != 3 || k.ExactMisses != 3 || k.ExactHits != 0 {
		t.Errorf("cache: %d entries, %d exact misses, %d hits; want 3, 3, 0 (a refused request's lookup is not counted)", entries, k.ExactMisses, k.ExactHits)
	}
	keys, err := c.Keys(context.Background(), c.Prefix+"cache:e:*").Result()
	if err != nil || len(keys) != 3 {
		t.Errorf("Redis holds %d entries (%v), want 3", len(keys), err)
	}
}

// sameAnswer: a and b have the same header names and body, but for the
// request id and the refusal's whole seconds to wait: the two buckets were
// drained at different times, so that number may differ by one when a
// second boundary falls between them (a slow machine), never by more.
func sameAnswer(a, b *httptest.ResponseRecorder) bool {
	names := func(h http.Header) []string {
		k := slices.Collect(maps.Keys(h))
		slices.Sort(k)
		return k
	}
	id := func(w *httptest.ResponseRecorder) string {
		return retryAfterInBody.ReplaceAllString(strings.ReplaceAll(w.Body.String(), w.Header().Get("X-Request-Id"), ""), "retry after N s")
	}
	wait := func(w *httptest.ResponseRecorder) int {
		n, _ := strconv.Atoi(w.Header().Get("Retry-After"))
		return n
	}
	d := wait(a) - wait(b)
	return slices.Equal(names(a.Header()), names(b.Header())) && id(a) == id(b) && d >= -1 && d <= 1 && wait(a) > 0
}

var retryAfterInBody = regexp.MustCompile(`retry after \d+ s`)

// Two replicas on one redis-server, 40 concurrent new questions against a
// shared limit of 15, each take carried by the cache's lookup: exactly 15
// answers, 25 refusals, 15 calls to the backend.
func TestSharedStateCarriedTakesAdmitExactlyTheLimit(t *testing.T) {
	srv := redistest.StartVolatileServer(t)
	first := srv.Client(t)
	var calls atomic.Int64
	var gws []*Server
	for i := range 2 {
		c := first
		if i > 0 {
			var err error
			if c, err = redisstate.New(redisstate.Config{Address: srv.Addr(), KeyPrefix: first.Prefix}, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
		}
		cache := rediscache.Open(context.Background(), c, respcache.Options{})
		t.Cleanup(func() { cache.Close() })
		gws = append(gws, sharedStateGateway(t, cache, ratelimit.New(redisstore.New(c, true), nil), 15, countingUpstream{fixedUpstream{storableAnswer}, &calls}))
	}
	codes := make([]int, 40)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			codes[i] = ask(gws[i%2], 100+i).Code
		}()
	}
	close(start)
	wg.Wait()
	ok, refused := 0, 0
	for _, code := range codes {
		switch code {
		case 200:
			ok++
		case 429:
			refused++
		default:
			t.Errorf("status %d", code)
		}
	}
	if ok != 15 || refused != 25 || calls.Load() != 15 {
		t.Fatalf("%d answered, %d refused, %d backend calls; want 15, 25, 15", ok, refused, calls.Load())
	}
}

// Redis down: the take fails open or closed as configured (counted in
// junction_state_errors_total), the cache degrades to a miss; a request
// refused closed reaches neither the backend nor the cache.
func TestSharedStateRedisDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, failOpen := range []bool{true, false} {
		c, err := redisstate.New(redisstate.Config{Address: addr}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cache := rediscache.Open(context.Background(), c, respcache.Options{})
		t.Cleanup(func() { cache.Close() })
		var calls atomic.Int64
		gw := sharedStateGateway(t, cache, ratelimit.New(redisstore.New(c, failOpen), nil), 1000, countingUpstream{fixedUpstream{storableAnswer}, &calls})
		for n := range 3 {
			w := ask(gw, n)
			if failOpen && w.Code != 200 || !failOpen && (w.Code != 429 || w.Header().Get("Retry-After") != "1") {
				t.Fatalf("fail open %v, question %d: %d %v %s", failOpen, n, w.Code, w.Header(), w.Body)
			}
		}
		if got := c.Errors("rate_limit", "take"); got != 3 {
			t.Errorf("fail open %v: %v take errors counted, want 3", failOpen, got)
		}
		want := int64(0)
		if failOpen {
			want = 3
		}
		time.Sleep(50 * time.Millisecond)
		if _, entries := cache.Counts(); calls.Load() != want || entries != int(want) {
			t.Errorf("fail open %v: %d backend calls, %d entries kept; want %d of each", failOpen, calls.Load(), entries, want)
		}
	}
}

// On a Redis Cluster the take and the lookup go to their keys' nodes in
// one pipeline (in parallel): the limit still holds, a refused request
// reaches neither the backend nor the cache.
func TestSharedStateOnCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3).Client(t)
	cache := rediscache.Open(context.Background(), c, respcache.Options{})
	t.Cleanup(func() { cache.Close() })
	var calls atomic.Int64
	gw := sharedStateGateway(t, cache, ratelimit.New(redisstore.New(c, false), nil), 2, countingUpstream{fixedUpstream{storableAnswer}, &calls})
	var codes []int
	for n := range 4 {
		codes = append(codes, ask(gw, n).Code)
	}
	time.Sleep(100 * time.Millisecond) // a store would run after the answer
	if _, entries := cache.Counts(); !slices.Equal(codes, []int{200, 200, 429, 429}) || calls.Load() != 2 || entries != 2 {
		t.Fatalf("statuses %v, %d backend calls, %d entries; want 200 200 429 429, 2, 2", codes, calls.Load(), entries)
	}
	if got := c.Errors("rate_limit", "take"); got != 0 {
		t.Fatalf("%v take errors on a healthy cluster", got)
	}
}
