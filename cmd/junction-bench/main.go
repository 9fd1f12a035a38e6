// Command junction-bench measures what the gateway adds to a request, against
// the floor a hop cannot go under on the same machine. It starts the demo
// backend, a bare net/http httputil.ReverseProxy (this binary, re-run with
// -floor-proxy: a forwarder that does nothing else) and `junction serve` as
// separate processes on loopback, and for each scenario sends the same chat
// completion at a fixed open-loop rate straight to the backend, through the
// bare proxy and through Junction, in interleaved rounds. It reports the
// medians of each round's p50 and p99, Junction minus the bare proxy (its own
// cost) and the CPU each server spent per request; then the maximum
// throughput of each path with closed-loop clients, and Junction's ratio to
// the bare proxy. With -baseline an older junction binary is served beside
// -bin and measured in the same rounds: a before/after comparison in one run.
//
// The scenarios (-scenarios): "bench" routes with recipes/examples/bench.yaml
// (keyword, pii and context signals; the request reaches the refund decision,
// which inserts a system prompt and adds a header); "example" serves a copy of
// the example configuration (-example, ports and backends rewritten to this
// run's) with --signal-models lexical, and the request reaches urgent_support:
// the example configuration's model-free path; "shared" (shared.go, not run
// by default: it needs redis-server) is issue 18's figure: bench.yaml with an
// exact response cache and a rate limit, its state in memory and on a
// redis-server the run starts, served side by side, each answering new
// questions (misses, each stored) and one repeated question (hits); it reports
// what each adds over the bare proxy and what Redis adds over memory, against
// the goal of ≤ 150 µs p50 (no throughput runs).
//
// The open loop never waits for answers: each request is sent on its own
// goroutine at its scheduled time whether or not earlier ones were answered, so
// a stalled server cannot slow the sender or hide queueing (no coordinated
// omission). Latency is measured from when the request was actually sent: Go's
// timers wake up to a millisecond late (the runtime sleeps in epoll_wait with
// millisecond resolution), and counting that pacing delay would add about half
// a millisecond of the tool's own lateness to every sample of every path. Each
// round reports that lateness so a sender that fell behind is visible.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/junction-router/junction/cmd/internal/loadrun"
	"github.com/junction-router/junction/recipes"
)

func main() {
	bin := flag.String("bin", "bin/junction", "junction binary to benchmark")
	baseline := flag.String("baseline", "", "a second junction binary (an older build) served beside -bin and measured in the same interleaved rounds")
	rate := flag.Int("rate", 1000, "requests per second for the latency runs")
	dur := flag.Duration("duration", 5*time.Second, "length of one latency round")
	rounds := flag.Int("rounds", 3, "interleaved rounds per path")
	conc := flag.Int("concurrency", 64, "closed-loop clients for the throughput runs")
	tput := flag.Duration("throughput-duration", 3*time.Second, "length of one throughput run")
	tputRounds := flag.Int("throughput-rounds", 3, "interleaved throughput runs per path")
	scenarios := flag.String("scenarios", "bench,example", "comma-separated: bench (recipes/examples/bench.yaml, refund decision), example (the example configuration, --signal-models lexical), "+
		"shared (issue 18: bench.yaml with an exact response cache and a rate limit, state in memory and on a redis-server this run starts; "+
		"new questions (miss) and one repeated (hit), Redis − memory against ≤ 150 µs p50; needs redis-server on PATH)")
	example := flag.String("example", "recipes/testdata/example-config.yaml", "the example configuration the example scenario copies (ports and backends rewritten)")
	gwCPUs := flag.String("server-cpus", "", "pin Junction and the bare proxy to these CPUs (taskset list, e.g. 0,1; GOMAXPROCS follows)")
	upCPUs := flag.String("backend-cpus", "", "pin the demo backend (and the shared scenario's redis-server) to these CPUs")
	trace := flag.Bool("trace", false, "serve with tracing on (every request sampled), exporting over OTLP/gRPC to a receiver in this process (bench and shared scenarios: the example configuration declares its own tracing)")
	floorAddr := flag.String("floor-proxy", "", "internal: serve the bare reverse proxy on this address, forwarding to -floor-upstream")
	floorUp := flag.String("floor-upstream", "", "internal: the bare reverse proxy's upstream base URL")
	flag.Parse()
	if *floorAddr != "" {
		if err := bareProxy(*floorAddr, *floorUp); err != nil {
			fmt.Fprintln(os.Stderr, "junction-bench:", err)
			os.Exit(1)
		}
		return
	}
	if *semantic {
		if err := runSemantic(options{bin: *bin, baseline: *baseline, rate: *rate, dur: *dur, rounds: *rounds, example: *example,
			serverCPUs: *gwCPUs, backendCPUs: *upCPUs}); err != nil {
			fmt.Fprintln(os.Stderr, "junction-bench:", err)
			os.Exit(1)
		}
		return
	}
	o := options{bin: *bin, baseline: *baseline, rate: *rate, dur: *dur, rounds: *rounds, conc: *conc, tput: *tput, tputRounds: *tputRounds,
		example: *example, serverCPUs: *gwCPUs, backendCPUs: *upCPUs, trace: *trace}
	if err := run(o, strings.Split(*scenarios, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "junction-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	bin, baseline           string
	rate                    int
	dur                     time.Duration
	rounds, conc            int
	tput                    time.Duration
	tputRounds              int
	example                 string
	serverCPUs, backendCPUs string
	trace                   bool
}

// config routes with recipes/examples/bench.yaml.
const config = `version: v1
listeners:
  - {name: bench, address: 127.0.0.1, port: %d, timeout: 30s}
providers:
  defaults: {default_model: small}
  reasoning_families:
    qwen3: {type: chat_template_kwargs, parameter: enable_thinking}
  models:
    - name: small
      reasoning_family: qwen3
      pricing: {currency: USD, prompt_per_1m: 0.10, completion_per_1m: 0.40}
      backend_refs: [{base_url: "http://127.0.0.1:%d/v1", provider: openai}]
    - name: big
      backend_refs: [{base_url: "http://127.0.0.1:%d/v1", provider: openai}]
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability:
      metrics: {address: 127.0.0.1, port: %d}
`

// scenario is one configuration Junction serves, the request sent on every
// path, and the decision that request must reach through Junction.
type scenario struct {
	name, decision string
	body           string
	// config is the document Junction serves; tracing is -trace's lines
	// (under global.services.observability) or "".
	config    func(gwPort, upPort int, tracing string) (string, error)
	serveArgs []string
	// shared is the shared scenario (shared.go), which serves and sends
	// its own way.
	shared bool
}

// A chat completion that reaches bench.yaml's refund decision (keyword
// refund; pii scanned; system_prompt and header_mutation applied).
const benchBody = `{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"I was charged twice for order 1234, can I get a refund? Answer in one word, please."}],"max_tokens":16}`

// A chat completion that reaches the example configuration's urgent_support
// decision (keyword urgent) and not general, whose response cache would
// answer repeated requests without the backend.
const exampleBody = `{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"Urgent: where is my parcel? Answer in one word, please."}],"max_tokens":16}`

// benchHead is config with its ports: the listener on gw, both models' backend on up, the management API and
// metrics on free ports.
func benchHead(gw, up int) (string, error) {
	mgmtPort, err := loadrun.FreePort()
	if err != nil {
		return "", err
	}
	metricsPort, err := loadrun.FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(config, gw, up, up, mgmtPort, metricsPort), nil
}

func scenarios(o options, names []string) ([]scenario, error) {
	var out []scenario
	for _, n := range names {
		switch strings.TrimSpace(n) {
		case "bench":
			out = append(out, scenario{name: "bench (keyword + pii signals, refund decision with system_prompt and header_mutation)",
				decision: "refund", body: benchBody,
				config: func(gw, up int, tracing string) (string, error) {
					head, err := benchHead(gw, up)
					if err != nil {
						return "", err
					}
					return head + tracing + recipes.BenchRecipesYAML(), nil
				}})
		case "example":
			src, err := os.ReadFile(o.example)
			if err != nil {
				return nil, fmt.Errorf("the example scenario reads the example configuration (-example): %w", err)
			}
			out = append(out, scenario{name: "example configuration, --signal-models lexical (urgent_support)",
				decision: "urgent_support", body: exampleBody, serveArgs: []string{"--signal-models", "lexical"},
				config: func(gw, up int, tracing string) (string, error) {
					if tracing != "" {
						return "", fmt.Errorf("-trace: the example configuration declares tracing already (disabled); trace the bench scenario")
					}
					return exampleConfig(string(src), gw, up)
				}})
		case "shared":
			out = append(out, scenario{name: "shared state: response cache and rate limit, state in memory and on Redis (issue 18)", shared: true})
		default:
			return nil, fmt.Errorf("unknown scenario %q: use bench, example or shared", n)
		}
	}
	return out, nil
}

// exampleConfig is the example configuration with its listener on gwPort,
// every backend on the demo backend at upPort and its other listeners
// (management API, metrics, ext_proc) on free ports. Each rewrite must find
// its text, so a changed example fails here instead of measuring something
// else.
func exampleConfig(src string, gwPort, upPort int) (string, error) {
	up := fmt.Sprintf("http://127.0.0.1:%d", upPort)
	rewrites := [][2]string{
		{"port: 8801", fmt.Sprintf("port: %d", gwPort)},
		{"http://127.0.0.1:18001/v1", up + "/v1"},
		{"http://127.0.0.1:18002/v1", up + "/v1"},
		{"http://127.0.0.1:18003", up},
	}
	for _, old := range []string{"port: 8080", "port: 9190", "port: 50051"} {
		p, err := loadrun.FreePort()
		if err != nil {
			return "", err
		}
		rewrites = append(rewrites, [2]string{old, fmt.Sprintf("port: %d", p)})
	}
	for _, r := range rewrites {
		if !strings.Contains(src, r[0]) {
			return "", fmt.Errorf("the example configuration no longer holds %q: update exampleConfig in cmd/junction-bench", r[0])
		}
		src = strings.ReplaceAll(src, r[0], r[1])
	}
	return src, nil
}

// bareProxy serves a net/http httputil.ReverseProxy to upstream and nothing
// else: no routing, no body read, no metrics. Its transport keeps as many idle
// connections per host as Junction's upstream client does, so neither path
// pays for new connections under load.
func bareProxy(addr, upstream string) error {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-floor-upstream %q is not a URL", upstream)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024, IdleConnTimeout: time.Minute,
		DisableCompression: true}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return (&http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}).Serve(lis)
}

// path is one way to the backend: its URL and the process that serves it
// (whose CPU time per request is reported; nil for the backend itself).
type path struct {
	name string
	url  string
	proc *exec.Cmd
}

func run(o options, names []string) error {
	scs, err := scenarios(o, names)
	if err != nil {
		return err
	}
	upPort, err := loadrun.FreePort()
	if err != nil {
		return err
	}
	floorPort, err := loadrun.FreePort()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := loadrun.Pinned(ctx, o.backendCPUs, o.bin, "demo-backend", "--listen", fmt.Sprintf("127.0.0.1:%d", upPort))
	floor := loadrun.Pinned(ctx, o.serverCPUs, self, "-floor-proxy", fmt.Sprintf("127.0.0.1:%d", floorPort),
		"-floor-upstream", fmt.Sprintf("http://127.0.0.1:%d", upPort))
	for _, c := range []*exec.Cmd{up, floor} {
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			return fmt.Errorf("start %v: %w", c.Args, err)
		}
	}
	// Stop the servers and wait for them before returning: cancelling the
	// context only asks os/exec to kill them, and a process that exits right
	// after may leave them running (holding ports, CPU and our stdout).
	defer func() {
		cancel()
		_ = up.Wait()
		_ = floor.Wait()
	}()
	// Every path shares this client. Compression is off: the backend does not
	// compress, and asking for gzip only adds a header and a wrapper per request.
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024, IdleConnTimeout: time.Minute,
		DisableCompression: true,
	}, Timeout: 10 * time.Second}
	for _, sc := range scs {
		var err error
		if sc.shared {
			err = runShared(ctx, o, client, upPort, floorPort, floor)
		} else {
			err = runScenario(ctx, o, sc, client, upPort, floorPort, floor)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
	}
	return nil
}

func runScenario(ctx context.Context, o options, sc scenario, client *http.Client, upPort, floorPort int, floor *exec.Cmd) error {
	dir, err := os.MkdirTemp("", "junction-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tracing, stopTracing, err := startTracing(o)
	if err != nil {
		return err
	}
	defer stopTracing()
	paths := []path{
		{"direct to backend", fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", upPort), nil},
		{"bare ReverseProxy", fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", floorPort), floor},
	}
	bins := []string{o.bin}
	if o.baseline != "" {
		bins = append(bins, o.baseline)
	}
	for k, bin := range bins {
		gwPort, err := loadrun.FreePort()
		if err != nil {
			return err
		}
		cfg, err := sc.config(gwPort, upPort, tracing)
		if err != nil {
			return err
		}
		gw, stop, err := startServe(ctx, o.serverCPUs, bin, dir, fmt.Sprint(k), cfg, os.Stderr, append([]string{"--log-level", "error"}, sc.serveArgs...)...)
		if err != nil {
			return err
		}
		defer stop()
		name := "Junction"
		if k > 0 {
			name = "Junction, -baseline"
		}
		paths = append(paths, path{name, fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", gwPort), gw})
	}
	for _, p := range paths {
		if err := waitUp(client, p.url, sc.body); err != nil {
			return err
		}
	}
	for _, p := range paths[2:] {
		if err := checkDecision(client, p.url, sc.body, sc.decision); err != nil {
			return err
		}
	}
	send := func(url string) func() bool { return func() bool { return post(client, url, sc.body) } }
	// Warm every path (connections, lazy initialisation) before measuring.
	for _, p := range paths {
		loadrun.OpenLoop(loadrun.Timed(send(p.url)), o.rate, time.Second)
	}

	fmt.Printf("\n### %s\n\n", sc.name)
	n := len(paths)
	p50, p99, cpu := make([][]float64, n), make([][]float64, n), make([][]float64, n)
	var own50, own99, floor50, floor99, base50, base99 []float64
	for r := 0; r < o.rounds; r++ {
		res := make([]loadrun.Sample, n)
		line := fmt.Sprintf("round %d:", r+1)
		// Each round starts with a different path, so that none is always
		// measured right after the same one.
		for k := 0; k < n; k++ {
			i := (r + k) % n
			pid := 0
			if paths[i].proc != nil {
				pid = paths[i].proc.Process.Pid
			}
			c0 := loadrun.ProcCPU(pid)
			s := loadrun.OpenLoop(loadrun.Timed(send(paths[i].url)), o.rate, o.dur)
			c1 := loadrun.ProcCPU(pid)
			if s.Errors > 0 {
				return fmt.Errorf("round %d, %s: %d of %d requests failed", r+1, paths[i].name, s.Errors, len(s.Lat))
			}
			res[i] = s
			p50[i], p99[i] = append(p50[i], s.P(.5)), append(p99[i], s.P(.99))
			cpu[i] = append(cpu[i], float64((c1-c0).Microseconds())/float64(len(s.Lat)))
		}
		for i, p := range paths {
			line += fmt.Sprintf(" %s p50 %.0f p99 %.0f (late p99 %.0f) |", p.name, res[i].P(.5), res[i].P(.99), res[i].LateP99)
		}
		fmt.Println(strings.TrimSuffix(line, " |"))
		own50, own99 = append(own50, res[2].P(.5)-res[1].P(.5)), append(own99, res[2].P(.99)-res[1].P(.99))
		floor50, floor99 = append(floor50, res[1].P(.5)-res[0].P(.5)), append(floor99, res[1].P(.99)-res[0].P(.99))
		if n > 3 {
			base50, base99 = append(base50, res[3].P(.5)-res[1].P(.5)), append(base99, res[3].P(.99)-res[1].P(.99))
		}
	}
	tp := make([][]float64, n)
	var ratios, baseRatios []float64
	for r := 0; r < o.tputRounds; r++ {
		got := make([]float64, n)
		for k := 0; k < n; k++ {
			i := (r + k) % n
			got[i] = loadrun.ClosedLoop(send(paths[i].url), o.conc, o.tput)
			tp[i] = append(tp[i], got[i])
		}
		ratios = append(ratios, got[2]/got[1])
		line := fmt.Sprintf("throughput run %d: direct %.0f req/s, bare proxy %.0f req/s, Junction %.0f req/s (Junction/bare %.2f)",
			r+1, got[0], got[1], got[2], got[2]/got[1])
		if n > 3 {
			baseRatios = append(baseRatios, got[3]/got[1])
			line += fmt.Sprintf(", baseline %.0f req/s (%.2f)", got[3], got[3]/got[1])
		}
		fmt.Println(line)
	}

	med := loadrun.Median
	fmt.Printf("\n%d interleaved rounds of %s at %d req/s, open loop; medians of rounds; µs\n\n", o.rounds, o.dur, o.rate)
	fmt.Printf("| path | p50 | p99 | server CPU per request |\n|---|---:|---:|---:|\n")
	for i, p := range paths {
		c := "—"
		if p.proc != nil {
			c = fmt.Sprintf("%.0f", med(cpu[i]))
		}
		fmt.Printf("| %s | %.0f | %.0f | %s |\n", p.name, med(p50[i]), med(p99[i]), c)
	}
	fmt.Printf("| bare proxy − direct (the floor of a hop) | %.0f | %.0f | |\n", med(floor50), med(floor99))
	fmt.Printf("| **Junction − bare proxy** | **%.0f** | **%.0f** | %.0f |\n", med(own50), med(own99), med(cpu[2])-med(cpu[1]))
	if n > 3 {
		fmt.Printf("| Junction, -baseline − bare proxy | %.0f | %.0f | %.0f |\n", med(base50), med(base99), med(cpu[3])-med(cpu[1]))
	}
	fmt.Printf("\nthroughput, %d closed-loop clients, %d runs of %s (medians): direct %.0f req/s, bare proxy %.0f req/s, Junction %.0f req/s; Junction/bare %.2f\n",
		o.conc, o.tputRounds, o.tput, med(tp[0]), med(tp[1]), med(tp[2]), med(ratios))
	if n > 3 {
		fmt.Printf("baseline: %.0f req/s; baseline/bare %.2f\n", med(tp[3]), med(baseRatios))
	}
	fmt.Printf("goals: Junction − bare p50 %.0f µs (≤ 50: %s), p99 %.0f µs (≤ 300: %s), throughput ratio %.2f (≥ 0.8: %s)\n",
		med(own50), met(med(own50) <= 50), med(own99), met(med(own99) <= 300), med(ratios), met(med(ratios) >= 0.8))
	return nil
}

// startTracing starts -trace's OTLP receiver and returns the configuration
// lines that export to it (under global.services.observability) and what
// stops it and says how many spans it received; without -trace, "" and a
// no-op.
func startTracing(o options) (string, func(), error) {
	if !o.trace {
		return "", func() {}, nil
	}
	sink, err := startOTLPSink()
	if err != nil {
		return "", nil, err
	}
	lines := fmt.Sprintf("      tracing: {enabled: true, exporter: {type: otlp, endpoint: %q}, sampling: {type: always_on}}\n", sink.addr)
	return lines, func() {
		fmt.Printf("tracing on: %d spans received over OTLP/gRPC\n", sink.spans.Load())
		sink.srv.Stop()
	}, nil
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

func waitUp(c *http.Client, url, body string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if post(c, url, body) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within 30s", url)
}

// checkDecision fails unless Junction routes body to the decision the
// scenario measures, and answers from the backend (not a cache).
func checkDecision(c *http.Client, url, body, decision string) error {
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := resp.Header.Get("X-Junction-Decision"); got != decision {
		return fmt.Errorf("the request reached decision %q, not %q: the scenario would measure another path", got, decision)
	}
	if hit := resp.Header.Get("X-Cache-Hit"); hit != "" {
		return fmt.Errorf("the answer came from the response cache (%s), not the backend", hit)
	}
	return nil
}

func post(c *http.Client, url, body string) bool {
	resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == 200
}

// startServe writes cfg to dir as junction-<id>.yaml and starts bin's serve on it, pinned to cpus, with a data
// directory of its own and no ext_proc listener, its stderr to stderr, then args. stop ends the process and waits
// for it; the process also ends with ctx.
func startServe(ctx context.Context, cpus, bin, dir, id, cfg string, stderr io.Writer, args ...string) (gw *exec.Cmd, stop func(), err error) {
	cfgPath := filepath.Join(dir, "junction-"+id+".yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	gw = loadrun.Pinned(sctx, cpus, bin, append([]string{"serve", "--config", cfgPath, "--data-dir", filepath.Join(dir, "data-"+id),
		"--extproc=false"}, args...)...)
	gw.Stderr = stderr
	if err := gw.Start(); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("start %v: %w", gw.Args, err)
	}
	return gw, func() { cancel(); _ = gw.Wait() }, nil
}
