// Command junction-extproc-bench measures what Envoy's ext_proc round trip
// adds to a routing decision. It starts `junction serve` (GOMAXPROCS=2 by
// default) with a configuration whose models are answered in-process, and
// at a fixed open-loop rate measures, in alternating rounds:
//
//   - the decision alone, in this process: the request phase every front end
//     runs (internal/dataplane: parse, route, plugins, rewrite);
//   - the decision over ext_proc, as Envoy asks for it: a new stream on a
//     persistent HTTP/2 connection, request headers, the buffered body, and
//     the answer with the mutations (the rest of the stream, the answer's
//     headers and body and the stream's end, follows untimed so the server
//     does a complete request's work);
//   - the same request through the gateway: POST, routed, answered by the
//     in-process demo backend.
//
// It reports the medians of each round's p50 and p99, and what ext_proc
// adds to the decision. With -baseline an older junction binary is served
// beside -bin and its BUFFERED exchange is measured in the same interleaved
// rounds: a before/after comparison in one run. As in junction-bench, the loop never waits for
// answers and latency counts from the actual send, so a slow server cannot
// slow the sender and the sender's own lateness is reported apart.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/internal/plugin/native"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/junction-router/junction/cmd/internal/loadrun"
	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/extproc"
	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/recipes"
)

func main() {
	bin := flag.String("bin", "bin/junction", "junction binary to benchmark")
	baseline := flag.String("baseline", "", "a second junction binary (an older build) served beside -bin; its BUFFERED exchange is measured in the same interleaved rounds")
	rate := flag.Int("rate", 1000, "requests (streams) per second")
	dur := flag.Duration("duration", 5*time.Second, "length of one round")
	rounds := flag.Int("rounds", 3, "alternating rounds per path")
	procs := flag.Int("procs", 2, "GOMAXPROCS of the server")
	conns := flag.Int("conns", 2, "HTTP/2 connections to ext_proc (Envoy opens one per worker thread)")
	floor := flag.String("floor-server", "", "internal: serve an empty ext_proc processor on this address")
	cpus := flag.String("server-cpus", "", "pin Junction and the empty server to these CPUs (taskset list, e.g. 0,1); the bench itself should run elsewhere")
	flag.Parse()
	serverCPUs = *cpus
	if *floor != "" {
		if err := floorServer(*floor); err != nil {
			fmt.Fprintln(os.Stderr, "junction-extproc-bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*bin, *baseline, *rate, *dur, *rounds, *procs, *conns); err != nil {
		fmt.Fprintln(os.Stderr, "junction-extproc-bench:", err)
		os.Exit(1)
	}
}

// serverCPUs is -server-cpus: set once by main before anything starts.
var serverCPUs string

// config is junction-bench's (the example configuration's model-free
// signals), with the models answered in-process.
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
      backend_refs: [{provider: demo}]
    - name: big
      backend_refs: [{provider: demo}]
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability:
      metrics: {address: 127.0.0.1, port: %d}
  extproc: {address: 127.0.0.1, port: %d}
`

// body reaches bench.yaml's refund decision (keyword; pii scanned; a system
// prompt inserted and a header added), as junction-bench's bench scenario.
const body = `{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"I was charged twice for order 1234, can I get a refund? Answer in one word, please."}],"max_tokens":16}`

var answer = []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":1,"total_tokens":21}}`)

// ports hands out free loopback ports, never the same one twice in a run:
// the kernel may offer a port again once its probe listener is closed, and
// the servers bind theirs only later.
type ports map[int]bool

// free is a port no other server of this run got, or 0 (which fails the
// listener that gets it, with an error naming the address) when none can
// be found.
func (ps ports) free() int {
	for range 100 {
		p, err := loadrun.FreePort()
		if err != nil {
			return 0
		}
		if !ps[p] {
			ps[p] = true
			return p
		}
	}
	return 0
}

// junctionServer is a `junction serve` started for the run.
type junctionServer struct {
	cmd                 *exec.Cmd
	cfgText             string
	gwPort, extprocPort int
}

// startJunction serves bin on the bench configuration with fresh ports, in
// its own directory under dir.
func startJunction(ctx context.Context, ps ports, bin, dir string, procs int) (*junctionServer, error) {
	// Every listener on a free port: -baseline's server runs beside -bin's.
	gwPort, mgmtPort, mPort, epPort := ps.free(), ps.free(), ps.free(), ps.free()
	cfgText := fmt.Sprintf(config, gwPort, mgmtPort, mPort, epPort) + recipes.BenchRecipesYAML()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		return nil, err
	}
	srv := loadrun.Pinned(ctx, serverCPUs, bin, "serve", "--config", cfgPath, "--data-dir", filepath.Join(dir, "data"), "--log-level", "error")
	srv.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start %v: %w", srv.Args, err)
	}
	return &junctionServer{cmd: srv, cfgText: cfgText, gwPort: gwPort, extprocPort: epPort}, nil
}

func run(bin, baseline string, rate int, dur time.Duration, rounds, procs, nconns int) error {
	dir, err := os.MkdirTemp("", "junction-extproc-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	ps := ports{}
	js, err := startJunction(ctx, ps, bin, filepath.Join(dir, "new"), procs)
	if err != nil {
		cancel()
		return err
	}
	srv, cfgText, gwPort, epPort := js.cmd, js.cfgText, js.gwPort, js.extprocPort
	defer func() {
		cancel()
		_ = srv.Wait()
	}()
	var base *junctionServer
	if baseline != "" {
		if base, err = startJunction(ctx, ps, baseline, filepath.Join(dir, "baseline"), procs); err != nil {
			return err
		}
		defer func() {
			cancel()
			_ = base.cmd.Wait()
		}()
	}
	// An ext_proc server that does nothing but answer, in its own process
	// with the same GOMAXPROCS: the protocol's own cost on this machine.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	floorPort := ps.free()
	floorSrv := loadrun.Pinned(ctx, serverCPUs, self, "-floor-server", fmt.Sprintf("127.0.0.1:%d", floorPort))
	floorSrv.Env = srv.Env
	floorSrv.Stderr = os.Stderr
	if err := floorSrv.Start(); err != nil {
		return fmt.Errorf("start the floor server: %w", err)
	}
	defer func() {
		cancel() // before waiting: the servers only end when killed
		_ = floorSrv.Wait()
	}()

	// The decision in this process, on the same configuration.
	doc, err := recipes.Parse([]byte(cfgText))
	if err != nil {
		return err
	}
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		return err
	}
	plane := dataplane.New(dataplane.Config{Metrics: metrics.New(prometheus.NewRegistry()), Plugins: native.Stage(),
		Logger: slog.New(slog.DiscardHandler)})
	decide := func() bool {
		out := plane.Run(context.Background(), &dataplane.Request{Gen: gen, ID: "bench", Start: time.Now(), Body: []byte(body)})
		return out.Answer == nil && !out.Cancelled
	}

	// ext_proc, over persistent HTTP/2 connections as Envoy keeps them.
	dial := func(port int) ([]extprocv3.ExternalProcessorClient, error) {
		var clients []extprocv3.ExternalProcessorClient
		for i := 0; i < nconns; i++ {
			conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return nil, err
			}
			clients = append(clients, extprocv3.NewExternalProcessorClient(conn))
		}
		return clients, nil
	}
	junction, err := dial(epPort)
	if err != nil {
		return err
	}
	empty, err := dial(floorPort)
	if err != nil {
		return err
	}
	var next atomic.Uint64
	pick := func(cs []extprocv3.ExternalProcessorClient) extprocv3.ExternalProcessorClient {
		return cs[next.Add(1)%uint64(len(cs))]
	}
	buffered, duplex := messages(false), messages(true)
	extproc := func() (time.Duration, bool) { return roundTrip(pick(junction), buffered, false, true) }
	extprocDuplex := func() (time.Duration, bool) { return roundTrip(pick(junction), duplex, true, true) }
	floorTrip := func() (time.Duration, bool) { return roundTrip(pick(empty), buffered, false, false) }
	var baseTrip func() (time.Duration, bool)
	if base != nil {
		bc, err := dial(base.extprocPort)
		if err != nil {
			return err
		}
		baseTrip = func() (time.Duration, bool) { return roundTrip(pick(bc), buffered, false, true) }
	}

	// The gateway.
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", gwPort)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024,
		IdleConnTimeout: time.Minute, DisableCompression: true}, Timeout: 10 * time.Second}
	gateway := func() bool {
		resp, err := client.Post(url, "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200
	}

	trips := []func() (time.Duration, bool){extproc, floorTrip}
	if baseTrip != nil {
		trips = append(trips, baseTrip)
	}
	if err := waitUp(gateway, trips...); err != nil {
		return err
	}
	jpid, fpid := srv.Process.Pid, floorSrv.Process.Pid
	paths := []benchPath{
		{"decision in process", loadrun.Timed(decide), 0},
		{"decision over ext_proc, BUFFERED", extproc, jpid},
		{"decision over ext_proc, FULL_DUPLEX_STREAMED", extprocDuplex, jpid},
		{"empty ext_proc server, BUFFERED", floorTrip, fpid},
		{"through the gateway", loadrun.Timed(gateway), jpid},
	}
	if baseTrip != nil {
		// Index 5: the baseline's BUFFERED exchange.
		paths = append(paths, benchPath{"-baseline: decision over ext_proc, BUFFERED", baseTrip, base.cmd.Process.Pid})
	}
	for _, p := range paths {
		loadrun.OpenLoop(p.f, rate, time.Second) // warm connections and lazy initialisation
	}
	p50 := make([][]float64, len(paths))
	p99 := make([][]float64, len(paths))
	var added50, added99, addedDuplex50, addedDuplex99, own50, own99, base50, base99, vsBase50 []float64
	cpu := make([][]float64, len(paths))
	for r := 0; r < rounds; r++ {
		var line string
		res := make([]sample, len(paths))
		// Each round starts with a different path, so that none is always
		// measured right after the same one.
		for k := range paths {
			i := (r + k) % len(paths)
			p := paths[i]
			sc0, dc0 := loadrun.ProcCPU(p.pid), selfCPU()
			s := sample{Sample: loadrun.OpenLoop(p.f, rate, dur)}
			sc1, dc1 := loadrun.ProcCPU(p.pid), selfCPU()
			n := float64(len(s.Lat))
			s.serverCPU, s.driverCPU = float64((sc1-sc0).Microseconds())/n, float64((dc1-dc0).Microseconds())/n
			if s.Errors > 0 {
				return fmt.Errorf("round %d, %s: %d of %d failed", r+1, p.name, s.Errors, len(s.Lat))
			}
			res[i] = s
			cpu[i] = append(cpu[i], s.serverCPU)
			p50[i] = append(p50[i], s.P(.5))
			p99[i] = append(p99[i], s.P(.99))
		}
		for i, p := range paths {
			s := res[i]
			line += fmt.Sprintf("\n  %-45s p50 %5.0fµs p99 %6.0fµs  (sender late p99 %.0fµs; CPU per request: server %.0fµs, this process %.0fµs)",
				p.name, s.P(.5), s.P(.99), s.LateP99, s.serverCPU, s.driverCPU)
		}
		added50 = append(added50, res[1].P(.5)-res[0].P(.5))
		added99 = append(added99, res[1].P(.99)-res[0].P(.99))
		addedDuplex50 = append(addedDuplex50, res[2].P(.5)-res[0].P(.5))
		addedDuplex99 = append(addedDuplex99, res[2].P(.99)-res[0].P(.99))
		own50 = append(own50, res[1].P(.5)-res[3].P(.5))
		own99 = append(own99, res[1].P(.99)-res[3].P(.99))
		if baseTrip != nil {
			base50 = append(base50, res[5].P(.5)-res[3].P(.5))
			base99 = append(base99, res[5].P(.99)-res[3].P(.99))
			vsBase50 = append(vsBase50, res[1].P(.5)-res[5].P(.5))
		}
		fmt.Printf("round %d:%s\n", r+1, line)
	}
	fmt.Printf("\nresults (%d rounds of %s at %d streams/s, server GOMAXPROCS=%d; medians of rounds; µs)\n", rounds, dur, rate, procs)
	fmt.Printf("| path | p50 | p99 |\n|---|---:|---:|\n")
	for i, p := range paths {
		fmt.Printf("| %s | %.0f | %.0f |\n", p.name, loadrun.Median(p50[i]), loadrun.Median(p99[i]))
	}
	fmt.Printf("| added by ext_proc to the decision, BUFFERED | %.0f | %.0f |\n", loadrun.Median(added50), loadrun.Median(added99))
	fmt.Printf("| added by ext_proc to the decision, FULL_DUPLEX_STREAMED | %.0f | %.0f |\n", loadrun.Median(addedDuplex50), loadrun.Median(addedDuplex99))
	fmt.Printf("| **Junction − empty ext_proc server, BUFFERED** | **%.0f** | **%.0f** |\n", loadrun.Median(own50), loadrun.Median(own99))
	if baseTrip != nil {
		fmt.Printf("| -baseline − empty ext_proc server, BUFFERED | %.0f | %.0f |\n", loadrun.Median(base50), loadrun.Median(base99))
		fmt.Printf("| Junction − -baseline, BUFFERED (median of the rounds' differences) | %.0f | |\n", loadrun.Median(vsBase50))
		fmt.Printf("server CPU per stream, BUFFERED (median of rounds): Junction %.0f µs, -baseline %.0f µs, empty server %.0f µs\n",
			loadrun.Median(cpu[1]), loadrun.Median(cpu[5]), loadrun.Median(cpu[3]))
	} else {
		fmt.Printf("server CPU per stream, BUFFERED (median of rounds): Junction %.0f µs, empty server %.0f µs\n",
			loadrun.Median(cpu[1]), loadrun.Median(cpu[3]))
	}
	if m := loadrun.Median(own50); m <= 50 {
		fmt.Printf("goal: Junction's share over the empty server %.0f µs p50 (≤ 50): met\n", m)
	} else {
		fmt.Printf("goal: Junction's share over the empty server %.0f µs p50 (≤ 50): not met\n", m)
	}
	return nil
}

// messages are one request's ext_proc messages, as Envoy sends them with
// examples/envoy/envoy.yaml (BUFFERED request bodies), or with
// request_body_mode FULL_DUPLEX_STREAMED.
func messages(duplex bool) [4]*extprocv3.ProcessingRequest {
	cfg := envoytest.Standard
	if duplex {
		cfg.RequestBody = envoytest.FullDuplex
	}
	return [4]*extprocv3.ProcessingRequest{
		{
			ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: cfg.RequestBody, ResponseBodyMode: cfg.ResponseBody},
			Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: envoytest.H(
				":method", "POST", ":path", "/v1/chat/completions", ":authority", "localhost:8801", ":scheme", "http",
				"content-type", "application/json", "content-length", strconv.Itoa(len(body)), "x-forwarded-proto", "http",
				"x-request-id", "5f0c7a7e-bench").Proto()}},
		},
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true}}},
		{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: envoytest.H(
			":status", "200", "content-type", "application/json", "content-length", strconv.Itoa(len(answer))).Proto()}}},
		{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: answer, EndOfStream: true}}},
	}
}

// roundTrip plays one request; decision is the time from opening the
// stream to the answer to the body (the routing decision with its
// mutations). In BUFFERED mode Envoy waits for the headers' answer before
// it sends the body (two round trips); in full duplex it sends both at once.
// routed checks that the request was routed (x-selected-model set).
func roundTrip(c extprocv3.ExternalProcessorClient, m [4]*extprocv3.ProcessingRequest, duplex, routed bool) (decision time.Duration, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	s, err := c.Process(ctx)
	if err != nil {
		return 0, false
	}
	var got []*extprocv3.ProcessingResponse
	exchange := func(msgs ...*extprocv3.ProcessingRequest) bool {
		for _, req := range msgs {
			if s.Send(req) != nil {
				return false
			}
		}
		for range msgs {
			r, err := s.Recv()
			if err != nil {
				return false
			}
			got = append(got, r)
		}
		return true
	}
	if duplex {
		ok = exchange(m[0], m[1])
	} else {
		ok = exchange(m[0]) && exchange(m[1])
	}
	if !ok {
		return 0, false
	}
	decision = time.Since(start)
	if routed && !selected(got) {
		return 0, false
	}
	if !exchange(m[2]) || !exchange(m[3]) || s.CloseSend() != nil {
		return 0, false
	}
	if _, err := s.Recv(); err != io.EOF {
		return 0, false
	}
	return decision, true
}

// selected reports whether the answers set x-selected-model.
func selected(rs []*extprocv3.ProcessingResponse) bool {
	for _, r := range rs {
		cr := r.GetRequestHeaders().GetResponse()
		if cr == nil {
			cr = r.GetRequestBody().GetResponse()
		}
		for _, h := range cr.GetHeaderMutation().GetSetHeaders() {
			if h.GetHeader().GetKey() == "x-selected-model" {
				return true
			}
		}
	}
	return false
}

// floorServer answers every ext_proc message at once with an empty answer
// of the matching kind: the least any processor can do. It keeps stream
// workers as Junction's server does (extproc.DefaultStreamWorkers): without
// them each stream starts on a fresh goroutine whose stack grows, work the
// floor would count and Junction does not do, understating Junction's share.
func floorServer(addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	gs := grpc.NewServer(grpc.NumStreamWorkers(uint32(extproc.DefaultStreamWorkers())))
	extprocv3.RegisterExternalProcessorServer(gs, extproc.EmptyProcessor{})
	return gs.Serve(lis)
}

func waitUp(gateway func() bool, trips ...func() (time.Duration, bool)) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		up := gateway()
		for _, t := range trips {
			_, ok := t()
			up = up && ok
		}
		if up {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("junction serve (gateway and ext_proc) and the floor server did not answer within 20s")
}

// benchPath is one measured path.
type benchPath struct {
	name string
	f    func() (time.Duration, bool)
	pid  int // the server whose CPU the path uses; 0: this process
}

// sample is a round of the open loop with the CPU time per request of the
// server process and of this one, µs.
type sample struct {
	loadrun.Sample
	serverCPU, driverCPU float64
}

func selfCPU() time.Duration { return loadrun.ProcCPU(os.Getpid()) }
