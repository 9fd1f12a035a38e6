package extproc_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/plugin/native"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/dataplane/dataplanetest"
	"github.com/junction-router/junction/internal/demobackend"
	"github.com/junction-router/junction/internal/extproc"
	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/recipes"
)

// testConfig is the gateway's test configuration (the front ends' shared
// recipe, dataplanetest.Recipe), with {{upstream}} for the backends' base URL.
var testConfig = `
version: v1
listeners:
  - name: public
    port: 8801
    timeout: 5s
providers:
  defaults: {default_model: small}
  reasoning_families:
    qwen3: {type: chat_template_kwargs, parameter: enable_thinking}
    deepseek: {type: chat_template_kwargs, parameter: thinking}
    gpt: {type: reasoning_effort, parameter: reasoning_effort}
  models:
    - name: small
      reasoning_family: qwen3
      pricing: {currency: USD, prompt_per_1m: 0.10, completion_per_1m: 0.40}
      backend_refs:
        - {base_url: "{{upstream}}/v1", provider: openai}
    - name: big
      reasoning_family: deepseek
      pricing: {currency: USD, prompt_per_1m: 1.00, completion_per_1m: 4.00}
      backend_refs:
        - base_url: "{{upstream}}/v1"
          provider: openai
          extra_headers: {x-team: research}
          api_key_env: EXTPROC_TEST_BIG_KEY
    - name: coder
      reasoning_family: gpt
      backend_refs:
        - {base_url: "{{upstream}}", provider: vllm, chat_path: /openai/v1/chat/completions}
    - name: claude
      api_format: anthropic
      backend_refs:
        - {base_url: "{{upstream}}/v1", provider: anthropic}
` + dataplanetest.Recipe(dataplanetest.RecipeOptions{
	// The code decision mutates headers (the header tests).
	CodePlugins: `          - type: header_mutation
            configuration: {add: [{name: x-route-family, value: code}], delete: [x-debug]}
`,
})

// fixedNow makes the demo backend's answers identical across front ends.
var fixedNow = func() time.Time { return time.Unix(1700000000, 0) }

// env is an ext_proc server on an in-memory connection, with a demo
// backend that stands in for every model's upstream.
type env struct {
	t       testing.TB
	server  *extproc.Server
	client  *envoytest.Client
	reg     *prometheus.Registry
	runtime *engine.Runtime
	doc     *recipes.Document
	backend http.Handler
	url     string // what {{upstream}} became
}

type envOptions struct {
	opts    extproc.Options
	edit    func(string) string
	backend demobackend.Options
	logs    io.Writer // the server's log; discarded when nil
	// plainGRPC registers the server on a grpc.Server of its own instead of
	// NewGRPCServer's (as an embedding program might).
	plainGRPC bool
}

func newEnv(t testing.TB, configure ...func(*envOptions)) *env {
	t.Helper()
	o := envOptions{backend: demobackend.Options{Now: fixedNow}}
	for _, c := range configure {
		c(&o)
	}
	// big's backend takes its key from the environment.
	dataplanetest.KeyEnv(t, "EXTPROC_TEST_BIG_KEY", "sk-env-big")
	e := &env{t: t, url: "http://127.0.0.1:18080", backend: demobackend.New(o.backend)}
	y := testConfig
	if o.edit != nil {
		y = o.edit(y)
	}
	var gen *engine.Generation
	e.doc, gen = dataplanetest.Compile(t, strings.ReplaceAll(y, "{{upstream}}", e.url), engine.Options{})
	e.runtime = engine.NewRuntime(gen)
	e.reg = prometheus.NewRegistry()
	opts := o.opts
	opts.Runtime = e.runtime
	opts.Metrics = metrics.New(e.reg)
	if opts.Plugins == nil {
		opts.Plugins = native.Stage()
	}
	opts.Registerer = e.reg
	if o.logs == nil {
		o.logs = io.Discard
	}
	opts.Logger = slog.New(slog.NewTextHandler(o.logs, nil))
	e.server = extproc.New(opts)
	var gs *grpc.Server
	if o.plainGRPC {
		gs = grpc.NewServer()
		extprocv3.RegisterExternalProcessorServer(gs, e.server)
	} else {
		var err error
		if gs, _, err = extproc.NewGRPCServer(e.server, extproc.GRPCOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lis := bufconn.Listen(1 << 20)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	e.client = envoytest.New(conn)
	return e
}

func parseConfig(t testing.TB, y string) *recipes.Document {
	t.Helper()
	doc, err := recipes.Parse([]byte(y))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return doc
}

func (e *env) open(cfg envoytest.Config) *envoytest.Stream {
	e.t.Helper()
	s, err := e.client.Open(context.Background(), cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// chat is a POST /v1/chat/completions with a JSON body, as a client sends it.
func chat(body string, headers ...string) envoytest.Request {
	h := envoytest.H("content-type", "application/json", "content-length", strconv.Itoa(len(body)))
	id := "req-42"
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "x-request-id" {
			id = headers[i+1]
			continue
		}
		h = append(h, envoytest.Header{Key: headers[i], Value: headers[i+1]})
	}
	h = append(h, envoytest.Header{Key: "x-request-id", Value: id})
	return envoytest.Request{Method: "POST", Path: "/v1/chat/completions", Headers: h, Body: []byte(body)}
}

func userBody(text string, extra ...string) string {
	b := `{"model":"MoM","messages":[{"role":"user","content":"` + text + `"}]`
	for _, x := range extra {
		b += "," + x
	}
	return b + "}"
}

// answer runs the forwarded request through the demo backend and returns
// its answer as the upstream's response, in pieces of at most piece bytes
// (0: one piece).
func (e *env) answer(up *envoytest.Message, piece int) envoytest.Response {
	e.t.Helper()
	// coder's chat_path is /openai/v1/chat/completions; the demo serves /v1/….
	req := httptest.NewRequest("POST", strings.TrimPrefix(up.Headers.Get(":path"), "/openai"), bytes.NewReader(up.Body))
	for _, h := range up.Headers {
		if !strings.HasPrefix(h.Key, ":") {
			req.Header.Add(h.Key, h.Value)
		}
	}
	rec := httptest.NewRecorder()
	e.backend.ServeHTTP(rec, req)
	resp := envoytest.Response{Status: rec.Code}
	for k, vs := range rec.Header() {
		for _, v := range vs {
			resp.Headers = append(resp.Headers, envoytest.Header{Key: strings.ToLower(k), Value: v})
		}
	}
	body := rec.Body.Bytes()
	resp.Headers = append(resp.Headers, envoytest.Header{Key: "content-length", Value: strconv.Itoa(len(body))})
	if piece <= 0 {
		resp.Body = body
		return resp
	}
	for len(body) > 0 {
		n := min(piece, len(body))
		resp.Pieces = append(resp.Pieces, body[:n])
		body = body[n:]
	}
	return resp
}

// scalar sums the series that have labels: counters' and gauges' values,
// histograms' counts.
func (e *env) scalar(name string, labels map[string]string) float64 {
	e.t.Helper()
	return dataplanetest.Metric(e.t, e.reg, name, labels)
}

// eventually polls cond: a stream's metrics are recorded when the server
// sees it end, a moment after the client does.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockedBuffer is a concurrency-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
