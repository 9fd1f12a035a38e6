package gateway

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/dataplane/dataplanetest"
	"github.com/junction-router/junction/internal/demobackend"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/recipes"
)

// testConfig is the configuration the tests route with: the front ends'
// shared recipe (dataplanetest.Recipe) on these models. {{small}}, {{big}},
// {{coder}} and {{claude}} are replaced by the fake upstreams' URLs.
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
        - {base_url: "{{small}}/v1", provider: openai}
    - name: big
      reasoning_family: deepseek
      pricing: {currency: USD, prompt_per_1m: 1.00, completion_per_1m: 4.00, cached_input_per_1m: 0.50}
      backend_refs:
        - base_url: "{{big}}/v1"
          provider: openai
          extra_headers: {x-team: research}
    - name: coder
      reasoning_family: gpt
      backend_refs:
        - {base_url: "{{coder}}", provider: vllm, chat_path: /v1/chat/completions}
    - name: claude
      api_format: anthropic
      reasoning_family: gpt
      pricing: {currency: USD, prompt_per_1m: 3.00, completion_per_1m: 15.00, cached_input_per_1m: 0.30, cache_write_per_1m: 3.75}
      backend_refs:
        - {base_url: "{{claude}}/v1", provider: anthropic, api_key_env: JUNCTION_TEST_ANTHROPIC_KEY}
    - name: demo
      backend_refs:
        - {provider: demo}
` + dataplanetest.Recipe(dataplanetest.RecipeOptions{})

// captured is one request a fake upstream received.
type captured struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

// fakeUpstream is an OpenAI-compatible backend that records what it receives.
// By default it answers like the demo backend; handler replaces that.
type fakeUpstream struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []captured
	handler http.Handler
}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	f := &fakeUpstream{handler: demobackend.New(demobackend.Options{})}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		f.mu.Lock()
		f.reqs = append(f.reqs, captured{Path: r.URL.Path, Header: r.Header.Clone(), Body: m})
		h := f.handler
		f.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUpstream) setHandler(h http.Handler) {
	f.mu.Lock()
	f.handler = h
	f.mu.Unlock()
}

func (f *fakeUpstream) last(t *testing.T) captured {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("upstream received no request")
	}
	return f.reqs[len(f.reqs)-1]
}

func (f *fakeUpstream) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// env is a gateway in front of three fake upstreams.
type env struct {
	t       *testing.T
	gw      *httptest.Server
	server  *Server
	reg     *prometheus.Registry
	metrics *metrics.Metrics
	ups     map[string]*fakeUpstream
	client  openai.Client
	runtime *engine.Runtime
	// busy counts the gateway's handlers still running: an answer is flushed
	// before its bookkeeping (metrics), so a client can read it first.
	busy sync.WaitGroup
}

type envOption func(*envConfig)

type envConfig struct {
	edit    func(yaml string) string
	plugins plugin.Runner
	noRun   bool
	files   dataplane.Files
	store   storage.Responses
	tracer  *tracing.Tracer
	limiter *ratelimit.Limiter
}

// withTracer runs the gateway with tracing on.
func withTracer(t *tracing.Tracer) envOption { return func(c *envConfig) { c.tracer = t } }

// withLimiter applies global.rate_limits with l.
func withLimiter(l *ratelimit.Limiter) envOption { return func(c *envConfig) { c.limiter = l } }

// withResponseStore keeps Responses API answers in r.
func withResponseStore(r storage.Responses) envOption { return func(c *envConfig) { c.store = r } }

// withYAML edits the configuration (before the upstream URLs are filled in).
func withYAML(edit func(string) string) envOption { return func(c *envConfig) { c.edit = edit } }

// withoutPlugins runs the gateway with no plugin runner.
func withoutPlugins() envOption { return func(c *envConfig) { c.noRun = true } }

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	cfg := envConfig{plugins: native.Stage()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.noRun {
		cfg.plugins = nil
	}
	// claude's backend takes its key from the environment.
	dataplanetest.KeyEnv(t, "JUNCTION_TEST_ANTHROPIC_KEY", "sk-ant-env")
	e := &env{t: t, ups: map[string]*fakeUpstream{}}
	yaml := testConfig
	if cfg.edit != nil {
		yaml = cfg.edit(yaml)
	}
	for _, name := range []string{"small", "big", "coder", "claude"} {
		e.ups[name] = newFakeUpstream(t)
		yaml = strings.ReplaceAll(yaml, "{{"+name+"}}", e.ups[name].srv.URL)
	}
	doc, err := recipes.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	upstreams := NewUpstreams(UpstreamOptions{})
	t.Cleanup(upstreams.Close)
	upstreams.Retain(doc)
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{Health: upstreams.Health()})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	e.runtime = engine.NewRuntime(gen)
	e.reg = prometheus.NewRegistry()
	e.metrics = metrics.New(e.reg)
	e.server = New(Options{
		Listener:  doc.Listeners[0],
		Runtime:   e.runtime,
		Metrics:   e.metrics,
		Plugins:   cfg.plugins,
		Upstreams: upstreams,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Files:     cfg.files,
		Responses: cfg.store,
		Tracer:    cfg.tracer,
		Limiter:   cfg.limiter,
	})
	e.gw = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.busy.Add(1)
		defer e.busy.Done()
		e.server.ServeHTTP(w, r)
	}))
	t.Cleanup(e.gw.Close)
	e.client = openai.NewClient(
		option.WithBaseURL(e.gw.URL+"/v1/"),
		option.WithAPIKey("client-key"),
		option.WithMaxRetries(0),
	)
	return e
}

// post sends a raw body to the gateway.
func (e *env) post(path, body string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.gw.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// errorBody decodes an OpenAI-style error body.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
		Details *struct {
			EntitiesFound []string `json:"entities_found"`
			ActionTaken   string   `json:"action_taken"`
		} `json:"details"`
	} `json:"error"`
}

func decodeError(t *testing.T, b []byte) errorBody {
	t.Helper()
	var eb errorBody
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Type == "" {
		t.Fatalf("not an OpenAI-style error body: %s (%v)", b, err)
	}
	return eb
}

// errors reads one llm_request_errors_total series.
func (e *env) errors(model, reason string) float64 {
	return e.scalar("llm_request_errors_total", map[string]string{"model": model, "reason": reason})
}

// scalar reads the value of one counter or gauge series from the registry
// (the sum of the series with those labels; a histogram's sample count).
func (e *env) scalar(name string, labels map[string]string) float64 {
	e.t.Helper()
	e.busy.Wait() // the requests the test made have finished their bookkeeping
	return dataplanetest.Metric(e.t, e.reg, name, labels)
}

// closedURL returns a URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// compileYAML builds a generation from a configuration document.
func compileYAML(t *testing.T, yaml string) *engine.Generation {
	t.Helper()
	_, gen := dataplanetest.Compile(t, yaml, engine.Options{})
	return gen
}
