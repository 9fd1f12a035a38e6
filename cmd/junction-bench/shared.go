package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/cmd/internal/loadrun"
	"github.com/junction-router/junction/recipes"
)

// The shared scenario (-scenarios shared) is issue 18's figure under load:
// what the shared state on Redis (global.state.backend: redis) adds to a
// request through the response cache (mode exact) and a rate limit. It
// starts a redis-server of its own (no persistence, in a temporary
// directory, on the CPUs of -backend-cpus) and serves the bench recipe with
// a response cache on the refund decision and one rate limit per model (too
// large to refuse during the run) twice: state in memory (the features' own
// work, in process) and state on that redis-server. The bare proxy is the
// floor; -baseline is served the same two ways, under key prefixes of its
// own. Two kinds of request are sent at -rate in the same interleaved
// rounds: miss (every prompt new: the take and the exact lookup's GET on
// the request path, the store of the answer, SET + XADD, in the response
// phase beside the requests that follow, as under real load) and hit (one
// prompt, stored before the rounds: the take, then an answer from the
// replica's index). It reports, per kind, each path's p50 and p99, what
// each variant adds over the floor, and redis − memory: what keeping the
// state on Redis adds, against the goal of ≤ 150 µs p50.

// sharedHead is bench's request up to the end of the user's text: the hit
// kind sends benchBody (sharedHead closed), the miss kind sharedHead with a
// new question number each time, so that each is a new cache entry.
const sharedHead = `{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"I was charged twice for order 1234, can I get a refund? Answer in one word, please.`

const sharedTail = `"}],"max_tokens":16}`

// sharedDefaultEntries is the cache's default bound per replica (its index):
// a run that stores more misses than this on one path evicts, which the
// figure should not include.
const sharedDefaultEntries = 100000

// sharedPath is a path of the shared scenario: Junction's paths check on
// every answer that the cache said what the kind expects.
type sharedPath struct {
	path
	junction bool
	redis    string // the key prefix of a path whose state is on Redis
}

func runShared(ctx context.Context, o options, client *http.Client, upPort, floorPort int, floor *exec.Cmd) error {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return fmt.Errorf("the shared scenario starts a redis-server of its own, and none is on PATH (install it: apt-get install redis-server): %w", err)
	}
	// Per path: the rounds' misses, the warm-up's second and the check's one.
	if misses := int(float64(o.rate)*o.dur.Seconds())*o.rounds + o.rate + 1; misses > sharedDefaultEntries {
		fmt.Printf("note: about %d misses per path, more than the cache's %d entries: the last rounds' stores evict\n", misses, sharedDefaultEntries)
	}
	dir, err := os.MkdirTemp("", "junction-bench-shared")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rs, err := startRedis(ctx, o.backendCPUs, filepath.Join(dir, "redis"))
	if err != nil {
		return err
	}
	defer rs.stop()
	tracing, stopTracing, err := startTracing(o)
	if err != nil {
		return err
	}
	defer stopTracing()

	paths := []sharedPath{{path: path{"bare ReverseProxy", fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", floorPort), floor}}}
	bins := []string{o.bin}
	if o.baseline != "" {
		bins = append(bins, o.baseline)
	}
	for k, bin := range bins {
		for _, onRedis := range []bool{false, true} {
			name, state, prefix := "Junction, state in memory", "{backend: memory}", ""
			if onRedis {
				prefix = fmt.Sprintf("bench%d:", k)
				name, state = "Junction, state on Redis", fmt.Sprintf(`{backend: redis, redis: {address: "%s", key_prefix: "%s"}}`, rs.addr, prefix)
			}
			if k > 0 {
				name += ", -baseline"
			}
			gwPort, err := loadrun.FreePort()
			if err != nil {
				return err
			}
			cfg, err := sharedConfig(gwPort, upPort, tracing, state)
			if err != nil {
				return err
			}
			gw, stop, err := startServe(ctx, o.serverCPUs, bin, dir, fmt.Sprintf("%d-%v", k, onRedis), cfg, os.Stderr, "--log-level", "error")
			if err != nil {
				return err
			}
			defer stop()
			paths = append(paths, sharedPath{path: path{name, fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", gwPort), gw}, junction: true, redis: prefix})
		}
	}

	var asked atomic.Int64
	miss := func() string {
		return sharedHead + " (question " + strconv.FormatInt(asked.Add(1), 10) + ")" + sharedTail
	}
	hit := func() string { return benchBody }
	// waitUp's requests are hit's prompt: the first one through each
	// Junction stores it.
	for _, p := range paths {
		if err := waitUp(client, p.url, hit()); err != nil {
			return err
		}
	}
	for _, p := range paths[1:] {
		if err := checkShared(client, p.url, miss(), hit()); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if p.redis != "" {
			if err := rs.holds(ctx, p.redis); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
	}
	kinds := []struct {
		name string
		body func() string
	}{{"miss", miss}, {"hit", hit}}
	send := func(p sharedPath, kind string, body func() string) func() (time.Duration, bool) {
		want := ""
		if p.junction {
			want = kind
		}
		return loadrun.Timed(func() bool { return postCache(client, p.url, body(), want) })
	}
	for _, k := range kinds {
		for _, p := range paths {
			loadrun.OpenLoop(send(p, k.name, k.body), o.rate, time.Second)
		}
	}

	fmt.Printf("\n### shared state: response cache (exact) and a rate limit, state in memory and on a redis-server\n\n")
	n := len(paths)
	type series struct{ p50, p99, add50, add99, cpu, redisCPU []float64 }
	res := make([][]series, len(kinds))
	// shared[kind][v]: redis − memory of variant v (-bin, -baseline), p50 and p99.
	shared50, shared99 := make([][][]float64, len(kinds)), make([][][]float64, len(kinds))
	for ki := range kinds {
		res[ki] = make([]series, n)
		shared50[ki], shared99[ki] = make([][]float64, len(bins)), make([][]float64, len(bins))
	}
	for r := 0; r < o.rounds; r++ {
		for ki, k := range kinds {
			got := make([]loadrun.Sample, n)
			line := fmt.Sprintf("round %d, %s:", r+1, k.name)
			// Each round and kind starts with a different path, so that none
			// is always measured right after the same one.
			for j := 0; j < n; j++ {
				i := (r + ki + j) % n
				p := paths[i]
				pid := 0
				if p.proc != nil {
					pid = p.proc.Process.Pid
				}
				c0, rc0 := loadrun.ProcCPU(pid), loadrun.ProcCPU(rs.cmd.Process.Pid)
				s := loadrun.OpenLoop(send(p, k.name, k.body), o.rate, o.dur)
				c1, rc1 := loadrun.ProcCPU(pid), loadrun.ProcCPU(rs.cmd.Process.Pid)
				if s.Errors > 0 {
					what := "failed"
					if p.junction {
						what = "failed or were not a cache " + k.name
					}
					return fmt.Errorf("round %d, %s, %s: %d of %d requests %s", r+1, k.name, p.name, s.Errors, len(s.Lat), what)
				}
				got[i] = s
				perReq := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(len(s.Lat)) }
				res[ki][i].cpu = append(res[ki][i].cpu, perReq(c1-c0))
				if p.redis != "" {
					res[ki][i].redisCPU = append(res[ki][i].redisCPU, perReq(rc1-rc0))
				}
			}
			for i, p := range paths {
				s := &res[ki][i]
				s.p50, s.p99 = append(s.p50, got[i].P(.5)), append(s.p99, got[i].P(.99))
				s.add50, s.add99 = append(s.add50, got[i].P(.5)-got[0].P(.5)), append(s.add99, got[i].P(.99)-got[0].P(.99))
				line += fmt.Sprintf(" %s p50 %.0f p99 %.0f (late p99 %.0f) |", p.name, got[i].P(.5), got[i].P(.99), got[i].LateP99)
			}
			for v := range bins {
				mem, red := got[1+2*v], got[2+2*v]
				shared50[ki][v] = append(shared50[ki][v], red.P(.5)-mem.P(.5))
				shared99[ki][v] = append(shared99[ki][v], red.P(.99)-mem.P(.99))
			}
			fmt.Println(strings.TrimSuffix(line, " |"))
		}
	}

	med := loadrun.Median
	fmt.Printf("\n%d interleaved rounds of %s at %d req/s per path and kind, open loop; medians of rounds; µs; added: over the bare proxy\n\n", o.rounds, o.dur, o.rate)
	fmt.Printf("| path | kind | p50 | p99 | added p50 | added p99 | server CPU per request | redis-server CPU per request |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for ki, k := range kinds {
		for i, p := range paths {
			s := res[ki][i]
			if i == 0 {
				fmt.Printf("| %s | %s | %.0f | %.0f | | | %.0f | |\n", p.name, k.name, med(s.p50), med(s.p99), med(s.cpu))
				continue
			}
			rc := ""
			if p.redis != "" {
				rc = fmt.Sprintf("%.0f", med(s.redisCPU))
			}
			fmt.Printf("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s |\n", p.name, k.name, med(s.p50), med(s.p99), med(s.add50), med(s.add99), med(s.cpu), rc)
		}
		for v := range bins {
			name, bold := "**Redis − memory (what the shared state adds)**", "**"
			if v > 0 {
				name, bold = "Redis − memory, -baseline", ""
			}
			mem, red := res[ki][1+2*v], res[ki][2+2*v]
			fmt.Printf("| %s | %s | | | %s%.0f%s | %s%.0f%s | %.0f | |\n", name, k.name, bold, med(shared50[ki][v]), bold, bold, med(shared99[ki][v]), bold,
				med(red.cpu)-med(mem.cpu))
		}
	}
	for v := range bins {
		label := "goals"
		if v > 0 {
			label = "-baseline"
		}
		var parts []string
		for ki, k := range kinds {
			d := med(shared50[ki][v])
			parts = append(parts, fmt.Sprintf("%s %.0f µs (≤ 150 µs: %s)", k.name, d, met(d <= 150)))
		}
		fmt.Printf("%s: what the shared state adds (Redis − memory), p50: %s\n", label, strings.Join(parts, ", "))
	}
	return nil
}

// sharedConfig serves the bench recipe on gwPort with a response cache in
// mode exact on the refund decision (the one the requests reach), one rate
// limit per model that the run cannot exhaust, and global.state as state
// says; tracing is -trace's lines or "".
func sharedConfig(gwPort, upPort int, tracing, state string) (string, error) {
	head, err := benchHead(gwPort, upPort)
	if err != nil {
		return "", err
	}
	// The cache is the last of refund's plugins, after those that change
	// the request (plugins/responsecache: its key covers the request as
	// sent), so it is inserted before the decision that follows refund.
	rec := recipes.BenchRecipesYAML()
	const after = "            configuration: {add: [{name: x-route-family, value: billing}]}\n      - name: private_data\n"
	if strings.Count(rec, after) != 1 {
		return "", fmt.Errorf("the bench recipe no longer ends the refund decision's plugins with header_mutation before private_data: update sharedConfig in cmd/junction-bench")
	}
	rec = strings.Replace(rec, after, "            configuration: {add: [{name: x-route-family, value: billing}]}\n"+
		"          - {type: response_cache, configuration: {mode: exact, ttl_seconds: 3600}}\n      - name: private_data\n", 1)
	return head + tracing +
		"  rate_limits:\n    - {name: per-model, key: model, requests: 1000000000000, window: 1h}\n" +
		"  state: " + state + "\n" + rec, nil
}

// checkShared fails unless a new question (miss) reaches the refund decision
// and is answered by the backend (the demo echoes the question's own number,
// which no cached answer holds) and hit's prompt, stored by the requests
// before, is then answered from the cache (an exact hit; the store runs
// after the answer, so it is allowed 5 s to arrive).
func checkShared(c *http.Client, url, miss, hit string) error {
	h, body, err := ask(c, url, miss)
	if err != nil {
		return err
	}
	if got := h.Get("X-Junction-Decision"); got != "refund" {
		return fmt.Errorf("a new question reached decision %q, not refund (whose response cache the scenario measures)", got)
	}
	if st, kind := h.Get("X-Cache-Status"), h.Get("X-Cache-Hit"); st != "miss" || kind != "" {
		return fmt.Errorf("a new question was not a cache miss (x-cache-status %q, x-cache-hit %q)", st, kind)
	}
	num := miss[len(sharedHead) : len(miss)-len(sharedTail)] // " (question N)"
	if !strings.Contains(body, strings.TrimSpace(num)) {
		return fmt.Errorf("a new question's answer does not echo it (%.200s): it did not come from the backend", body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		h, _, err := ask(c, url, hit)
		if err != nil {
			return err
		}
		if h.Get("X-Cache-Status") == "hit" && h.Get("X-Cache-Hit") == "exact" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a repeated question was not an exact cache hit within 5 s (x-cache-status %q, x-cache-hit %q)", h.Get("X-Cache-Status"), h.Get("X-Cache-Hit"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ask sends body and returns the answer's headers and body, failing on a
// status other than 200.
func ask(c *http.Client, url, body string) (http.Header, string, error) {
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("%s answered %d: %.200s", url, resp.StatusCode, b)
	}
	return resp.Header, string(b), nil
}

// postCache is post, and with want set also fails unless x-cache-status
// says want (hit or miss): a hit kind that missed would measure the other
// path.
func postCache(c *http.Client, url, body, want string) bool {
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == 200 && (want == "" || resp.Header.Get("X-Cache-Status") == want)
}

// redisServer is the shared scenario's own redis-server.
type redisServer struct {
	cmd    *exec.Cmd
	addr   string
	client *redis.Client
	exited chan error
}

// startRedis starts redis-server on a free port of 127.0.0.1 without
// persistence, in dir, and waits until it answers PING.
func startRedis(ctx context.Context, cpus, dir string) (*redisServer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	port, err := loadrun.FreePort()
	if err != nil {
		return nil, err
	}
	rs := &redisServer{addr: fmt.Sprintf("127.0.0.1:%d", port), exited: make(chan error, 1)}
	rs.cmd = loadrun.Pinned(context.WithoutCancel(ctx), cpus, "redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	rs.cmd.Dir = dir
	logs := &lockedBuffer{}
	rs.cmd.Stdout, rs.cmd.Stderr = logs, logs
	if err := rs.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %v: %w", rs.cmd.Args, err)
	}
	go func() { rs.exited <- rs.cmd.Wait() }()
	rs.client = redis.NewClient(&redis.Options{Addr: rs.addr})
	deadline := time.Now().Add(10 * time.Second)
	for rs.client.Ping(ctx).Err() != nil {
		select {
		case err := <-rs.exited:
			rs.exited <- err
			rs.stop()
			return nil, fmt.Errorf("%v exited (%v): %s", rs.cmd.Args, err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			rs.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer PING within 10 s: %s", rs.addr, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return rs, nil
}

// holds fails unless the server holds keys under prefix: the server whose
// state is on Redis keeps it there.
func (rs *redisServer) holds(ctx context.Context, prefix string) error {
	keys, err := rs.client.Keys(ctx, prefix+"*").Result()
	if err != nil {
		return fmt.Errorf("read the redis-server's keys: %w", err)
	}
	if len(keys) == 0 {
		return errors.New("no keys under its key prefix on the redis-server after its first answers: its state is not on Redis")
	}
	return nil
}

// stop ends the server (SIGTERM, SIGKILL after 5 s) and waits for it.
func (rs *redisServer) stop() {
	_ = rs.client.Close()
	_ = rs.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-rs.exited:
	case <-time.After(5 * time.Second):
		_ = rs.cmd.Process.Kill()
		<-rs.exited
	}
}
