// Command junction-bench measures what the gateway adds to a request: it starts
// the demo backend and `junction serve` as separate processes on loopback, sends
// the same chat completion at a fixed open-loop rate first straight to the
// backend and then through the gateway, in alternating rounds, and reports the
// medians of each round's p50 and p99 and the added latency. It then measures
// the gateway's maximum throughput with a closed loop.
//
// The open loop never waits for answers: each request is sent on its own
// goroutine at its scheduled time whether or not earlier ones were answered, so
// a stalled server cannot slow the sender or hide queueing (no coordinated
// omission). Latency is measured from when the request was actually sent: Go's
// timers wake up to a millisecond late (the runtime sleeps in epoll_wait with
// millisecond resolution), and counting that pacing delay would add about half
// a millisecond of the tool's own lateness to every sample of both paths. Each
// round reports that lateness so a sender that fell behind is visible.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/junction-router/junction/cmd/internal/loadrun"
	"github.com/junction-router/junction/recipes"
)

func main() {
	bin := flag.String("bin", "bin/junction", "junction binary to benchmark")
	rate := flag.Int("rate", 1000, "requests per second for the latency runs")
	dur := flag.Duration("duration", 5*time.Second, "length of one latency round")
	rounds := flag.Int("rounds", 3, "alternating rounds per target")
	conc := flag.Int("concurrency", 64, "closed-loop clients for the throughput run")
	tput := flag.Duration("throughput-duration", 5*time.Second, "length of the throughput run")
	gwCPUs := flag.String("server-cpus", "", "pin the gateway to these CPUs (taskset list, e.g. 0,1; GOMAXPROCS follows)")
	upCPUs := flag.String("backend-cpus", "", "pin the demo backend to these CPUs")
	trace := flag.Bool("trace", false, "serve with tracing on (every request sampled), exporting over OTLP/gRPC to a receiver in this process")
	flag.Parse()
	serverCPUs, backendCPUs = *gwCPUs, *upCPUs
	if err := run(*bin, *rate, *dur, *rounds, *conc, *tput, *trace); err != nil {
		fmt.Fprintln(os.Stderr, "junction-bench:", err)
		os.Exit(1)
	}
}

// serverCPUs and backendCPUs are -server-cpus and -backend-cpus: set once by
// main before anything starts.
var serverCPUs, backendCPUs string

// config routes with the model-free signals of the example configuration.
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
    observability:
      metrics: {address: 127.0.0.1, port: %d}
`

const body = `{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"What is the capital of France? Answer in one word, please."}],"max_tokens":16}`

func run(bin string, rate int, dur time.Duration, rounds, conc int, tput time.Duration, traceSpans bool) error {
	var ports [3]int
	for i := range ports {
		p, err := loadrun.FreePort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	upPort, gwPort, metricsPort := ports[0], ports[1], ports[2]
	dir, err := os.MkdirTemp("", "junction-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfgPath := filepath.Join(dir, "bench.yaml")
	cfg := fmt.Sprintf(config, gwPort, upPort, upPort, metricsPort)
	var sink *otlpSink
	if traceSpans {
		if sink, err = startOTLPSink(); err != nil {
			return err
		}
		defer sink.srv.Stop()
		cfg += fmt.Sprintf("      tracing: {enabled: true, exporter: {type: otlp, endpoint: %q}, sampling: {type: always_on}}\n", sink.addr)
		defer func() { fmt.Printf("tracing on: %d spans received over OTLP/gRPC\n", sink.spans.Load()) }()
	}
	if err := os.WriteFile(cfgPath, []byte(cfg+recipes.BenchRecipesYAML()), 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := loadrun.Pinned(ctx, backendCPUs, bin, "demo-backend", "--listen", fmt.Sprintf("127.0.0.1:%d", upPort))
	gw := loadrun.Pinned(ctx, serverCPUs, bin, "serve", "--config", cfgPath, "--data-dir", filepath.Join(dir, "data"), "--log-level", "error", "--extproc=false")
	for _, c := range []*exec.Cmd{up, gw} {
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			return fmt.Errorf("start %v: %w", c.Args, err)
		}
	}
	// Stop both servers and wait for them before returning: cancelling the
	// context only asks os/exec to kill them, and a process that exits right
	// after may leave them running (holding ports, CPU and our stdout).
	defer func() {
		cancel()
		_ = up.Wait()
		_ = gw.Wait()
	}()
	direct := fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", upPort)
	routed := fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", gwPort)
	// Both paths share this client. Compression is off: the backend does not
	// compress, and asking for gzip only adds a header and a wrapper per request.
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024, IdleConnTimeout: time.Minute,
		DisableCompression: true,
	}, Timeout: 10 * time.Second}
	for _, u := range []string{direct, routed} {
		if err := waitUp(client, u); err != nil {
			return err
		}
	}
	// Warm both paths (connections, lazy initialisation) before measuring.
	toDirect := loadrun.Timed(func() bool { return send(client, direct) })
	toGateway := loadrun.Timed(func() bool { return send(client, routed) })
	loadrun.OpenLoop(toDirect, rate, time.Second)
	loadrun.OpenLoop(toGateway, rate, time.Second)

	var dP50, dP99, gP50, gP99, added50, added99 []float64
	for r := 0; r < rounds; r++ {
		d := loadrun.OpenLoop(toDirect, rate, dur)
		g := loadrun.OpenLoop(toGateway, rate, dur)
		if d.Errors > 0 || g.Errors > 0 {
			return fmt.Errorf("round %d: %d direct and %d gateway requests failed", r, d.Errors, g.Errors)
		}
		dP50, dP99 = append(dP50, d.P(0.50)), append(dP99, d.P(0.99))
		gP50, gP99 = append(gP50, g.P(0.50)), append(gP99, g.P(0.99))
		added50 = append(added50, g.P(0.50)-d.P(0.50))
		added99 = append(added99, g.P(0.99)-d.P(0.99))
		fmt.Printf("round %d: direct p50 %.0fµs p99 %.0fµs | gateway p50 %.0fµs p99 %.0fµs | sender lateness p99 %.0fµs / %.0fµs\n",
			r+1, d.P(.5), d.P(.99), g.P(.5), g.P(.99), d.LateP99, g.LateP99)
	}
	gwRPS := loadrun.ClosedLoop(func() bool { return send(client, routed) }, conc, tput)
	dirRPS := loadrun.ClosedLoop(func() bool { return send(client, direct) }, conc, tput)

	fmt.Printf("\nresults (%d rounds of %s at %d req/s; medians of rounds; µs)\n", rounds, dur, rate)
	fmt.Printf("| path | p50 | p99 |\n|---|---|---|\n")
	fmt.Printf("| direct to backend | %.0f | %.0f |\n", loadrun.Median(dP50), loadrun.Median(dP99))
	fmt.Printf("| through gateway | %.0f | %.0f |\n", loadrun.Median(gP50), loadrun.Median(gP99))
	fmt.Printf("| added by gateway | %.0f | %.0f |\n", loadrun.Median(added50), loadrun.Median(added99))
	fmt.Printf("\nmax throughput, %d closed-loop clients for %s: gateway %.0f req/s, backend alone %.0f req/s (ratio %.2f)\n",
		conc, tput, gwRPS, dirRPS, gwRPS/dirRPS)
	return nil
}

func waitUp(c *http.Client, url string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if send(c, url) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer 200 within 20s", url)
}

func send(c *http.Client, url string) bool {
	resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == 200
}
