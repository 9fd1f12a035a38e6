//go:build !race

package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/ratelimit/redisstore"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/respcache/rediscache"
	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// BenchmarkGatewaySharedState is the latency the shared state on Redis
// (global.state.backend: redis) adds to the request path, as a client sees
// it: the time ServeHTTP takes to answer through a gateway with the
// response cache (mode exact, run natively as serve runs it) and a rate
// limit, against the same path with both off (off), with both in process
// (memory: the memory backend and the limiter's local store, so the
// features' own work is apart from Redis's round trips), on one
// redis-server (single) and on a three-node Redis Cluster (cluster), both
// the benchmark's own and without persistence (redistest.StartVolatileServer,
// redistest.StartCluster), and rtt: off behind one bare round trip to the
// single server first (a GET of a missing key on a client of its own,
// built as redisstate builds the stores'), the floor any request-path call
// to Redis pays on this machine at this moment. Each iteration sends one
// request through each of the five gateways, in an order drawn anew each
// time (shuffled), and times each alone; the reported figures are the
// medians of each and of the paired differences with off (single-added-µs,
// cluster-added-µs, rtt-added-µs), so a loaded machine slows each side of a
// pair alike, and of the paired differences with rtt (single-over-rtt-µs,
// cluster-over-rtt-µs): what the shared state costs beyond one unavoidable
// round trip (the features' own work, which memory-added-µs is, included).
//
// miss asks a new question every iteration: the rate-limit take (one
// EVALSHA) and the cache's exact lookup (one GET of the key the index
// lacks), in one pipeline (the take is held back for the lookup to carry). The store of the answer runs in the response phase after the
// answer was sent (not in the figure; BenchmarkHotPath in rediscache times
// it), so in miss it overlaps the requests that follow, as under load,
// and with it the change stream's reads it wakes; miss-nostore gets
// answers the cache refuses (finish_reason content_filter), so nothing is
// stored and the figure is the request path alone. hit asks one question
// again: the take, then a hit from the replica's index (no round trip).
// single-redis-µs is the median wait for the single server's request-path
// calls (the pipeline, or the take alone) inside the gateway, rtt-redis-µs
// the same for rtt's GET.
// (No thread CPU time here, unlike BenchmarkGatewayCacheLatency: on a
// locked thread every wait for Redis becomes two thread switches, which
// would charge the Redis variants a cost serve does not pay.)
func BenchmarkGatewaySharedState(b *testing.B) {
	storable := []byte(`{"id":"chatcmpl-demo","object":"chat.completion","created":1767225600,"model":"small","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":27,"completion_tokens":2,"total_tokens":29}}` + "\n")
	refused := bytes.Replace(storable, []byte(`"stop"`), []byte(`"content_filter"`), 1)
	server := redistest.StartVolatileServer(b)
	single, cluster, bare := server.Client(b), redistest.StartCluster(b, 3).Client(b), server.Client(b)
	redisWait, bareWait := &requestPathTimer{}, &requestPathTimer{}
	single.AddHook(redisWait)
	bare.AddHook(bareWait)
	names := []string{"off", "memory", "single", "cluster", "rtt"}
	const off, memory, onSingle, onCluster, rtt = 0, 1, 2, 3, 4
	caches := []respcache.Backend{respcache.NewMemory(respcache.Options{})}
	for _, c := range []*redisstate.Client{single, cluster} {
		rc := rediscache.Open(context.Background(), c, respcache.Options{})
		b.Cleanup(func() { rc.Close() })
		caches = append(caches, rc)
	}
	set := func(answer []byte) []http.Handler {
		return []http.Handler{
			stateGateway(b, nil, nil, answer),
			stateGateway(b, caches[0], ratelimit.New(nil, nil), answer),
			stateGateway(b, caches[1], ratelimit.New(redisstore.New(single, true), nil), answer),
			stateGateway(b, caches[2], ratelimit.New(redisstore.New(cluster, true), nil), answer),
			roundTripFirst{c: bare, key: bare.Prefix + "absent", next: stateGateway(b, nil, nil, answer)},
		}
	}
	stores, nostores := set(storable), set(refused)
	for _, g := range stores[memory : onCluster+1] { // question 0 cached, for hit
		stateServe(b, g, 0, false)
	}
	time.Sleep(50 * time.Millisecond) // the stores run after the answers
	asked := 0
	for _, kind := range []string{"miss", "miss-nostore", "hit"} {
		b.Run(kind, func(b *testing.B) {
			gws := stores
			if kind == "miss-nostore" {
				gws = nostores
			}
			lat := make([][]float64, len(gws))
			added := make([][]float64, len(gws))
			var overSingle, overCluster []float64
			redisWait.take()
			bareWait.take()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n := 0 // hit: question 0 every time
				if kind != "hit" {
					asked++
					n = 1000000 + asked
				}
				d := make([]time.Duration, len(gws))
				for _, g := range shuffled(i, len(gws)) {
					d[g] = stateServe(b, gws[g], n, kind == "hit" && g >= memory && g <= onCluster)
				}
				overSingle = append(overSingle, us(d[onSingle])-us(d[rtt]))
				overCluster = append(overCluster, us(d[onCluster])-us(d[rtt]))
				for g := range gws {
					lat[g] = append(lat[g], us(d[g]))
					added[g] = append(added[g], us(d[g])-us(d[off]))
				}
			}
			b.StopTimer()
			if d := redisWait.take(); len(d) > 0 {
				b.ReportMetric(median(d), "single-redis-µs")
			}
			if d := bareWait.take(); len(d) > 0 {
				b.ReportMetric(median(d), "rtt-redis-µs")
			}
			b.ReportMetric(median(overSingle), "single-over-rtt-µs")
			b.ReportMetric(median(overCluster), "cluster-over-rtt-µs")
			for g, name := range names {
				b.ReportMetric(median(lat[g]), name+"-µs")
				if g != off {
					b.ReportMetric(median(added[g]), name+"-added-µs")
				}
			}
		})
	}
}

// shuffled is the order of iteration i's requests through n gateways: a
// permutation drawn anew each iteration (seeded by i, so a run repeats), so
// that each gateway follows each other alike. A rotation puts each gateway
// always after the same one, and the work a request leaves to run beside
// the next (its response phase, a cluster's per-node goroutines) is then
// charged to its successor: in a rotation that put rtt after cluster, rtt
// added 15 µs (hit) to 65 µs (miss-nostore) more than an equivalent round
// trip (an empty EVALSHA) placed after a lighter gateway.
func shuffled(i, n int) []int {
	o := make([]int, n)
	for j := range o {
		o[j] = j
	}
	r := rand.New(rand.NewPCG(uint64(i), 18))
	r.Shuffle(n, func(a, b int) { o[a], o[b] = o[b], o[a] })
	return o
}

// roundTripFirst is next behind one bare round trip to Redis: a GET of key
// (absent) on c, a client built as redisstate builds the stores' (the
// benchmark's rtt: the floor a request-path call to Redis cannot go
// below, measured in the same rotation). A Redis that does not answer is
// a 502, which fails the benchmark.
type roundTripFirst struct {
	c    *redisstate.Client
	key  string
	next http.Handler
}

func (h roundTripFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.c.Get(r.Context(), h.key).Err(); !errors.Is(err, redis.Nil) {
		http.Error(w, "redis: "+fmt.Sprint(err), http.StatusBadGateway)
		return
	}
	h.next.ServeHTTP(w, r)
}

// requestPathTimer times the single server's request-path calls (those
// with the take or the lookup's GET: one command alone, or one pipeline),
// for single-redis-µs: the wait for Redis inside the gateway, apart from
// the rest of the request.
type requestPathTimer struct {
	mu sync.Mutex
	d  []float64
}

func (r *requestPathTimer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *requestPathTimer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		r.add([]redis.Cmder{cmd}, time.Since(start))
		return err
	}
}

func (r *requestPathTimer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		r.add(cmds, time.Since(start))
		return err
	}
}

func (r *requestPathTimer) add(cmds []redis.Cmder, d time.Duration) {
	for _, c := range cmds {
		if n := c.Name(); n == "evalsha" || n == "get" {
			r.mu.Lock()
			r.d = append(r.d, us(d))
			r.mu.Unlock()
			return
		}
	}
}

// take returns the times so far and forgets them.
func (r *requestPathTimer) take() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.d
	r.d = nil
	return d
}

// stateGateway is a gateway whose decision runs the response cache (mode
// exact) on cache and whose global.rate_limits (one limit per model, too
// large to refuse) count in limiter; with cache nil neither is configured.
func stateGateway(b *testing.B, cache respcache.Backend, limiter *ratelimit.Limiter, answer []byte) *Server {
	return sharedStateGateway(b, cache, limiter, 1000000000000, fixedUpstream{answer: answer})
}

// stateServe sends question n and returns how long the handler took to
// answer it; hit says the answer must come from the cache.
func stateServe(b *testing.B, gw http.Handler, n int, hit bool) time.Duration {
	body := []byte(`{"model":"MoM","messages":[{"role":"user","content":"What is the capital of ` + word(n) + ` please?"}]}`)
	req := &http.Request{
		Method: http.MethodPost, URL: &url.URL{Path: "/v1/chat/completions"},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: "gateway",
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
	w := &discardWriter{header: http.Header{}}
	start := time.Now()
	gw.ServeHTTP(w, req.WithContext(context.Background()))
	d := time.Since(start)
	if w.status != http.StatusOK || (w.header.Get("x-cache-status") == "hit") != hit {
		b.Fatalf("status %d, x-cache-status %q (want a hit: %v)", w.status, w.header.Get("x-cache-status"), hit)
	}
	return d
}
