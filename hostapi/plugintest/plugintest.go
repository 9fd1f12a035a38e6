package plugintest

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/recipes"
)

// Options change the harness's host.
type Options struct {
	// Limits of the plugin's bindings (zero fields: the host's defaults).
	Limits hostapi.Limits
	// Backends replace the router's defaults field by field (the hashed
	// n-gram embedder, the lexical domain and jailbreak classifiers, an
	// in-memory cache, in-memory vector stores, a retriever searching them by
	// text and an in-memory memory, both embedding with the embedder).
	Backends hostapi.Backends
}

// Plugin is a plugin module loaded into a real host, run through the same
// stage the router uses. Its stores are in memory and can be inspected.
type Plugin struct {
	Host    *hostapi.Host
	Module  *hostapi.Module
	Cache   *memstore.Cache
	Vectors *memstore.Vectors
	// Retriever serves retrieve over Vectors (nil when Options replaced it);
	// its Add puts a passage into a store.
	Retriever *memstore.Retriever
	// Memory serves memory_recall and memory_remember (nil when Options
	// replaced it).
	Memory *memstore.Memory

	mods   *wasm.Modules
	runner *plugin.Stage
	calls  *recorder
}

// New loads wasm (see Build) into a fresh host and fails tb if it does not
// load. The host is closed when the test ends.
func New(tb testing.TB, wasmBytes []byte, opts ...Options) *Plugin {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	ctx := context.Background()
	b, cache, vecs, err := wasm.Backends(nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if o.Backends.Embedder != nil {
		b.Embedder = o.Backends.Embedder
	}
	if o.Backends.Classifier != nil {
		b.Classifier = o.Backends.Classifier
	}
	if o.Backends.Cache != nil {
		b.Cache, cache = o.Backends.Cache, nil
	}
	if o.Backends.Vectors != nil {
		b.Vectors, vecs = o.Backends.Vectors, nil
	}
	var retriever *memstore.Retriever
	switch {
	case o.Backends.Retriever != nil:
		b.Retriever = o.Backends.Retriever
	case vecs != nil:
		retriever = &memstore.Retriever{Vectors: vecs, Embedder: b.Embedder}
		b.Retriever = retriever
	}
	memory := memstore.NewMemory(b.Embedder)
	b.Memory = memory
	if o.Backends.Memory != nil {
		b.Memory, memory = o.Backends.Memory, nil
	}
	if o.Backends.Tokens != nil {
		b.Tokens = o.Backends.Tokens
	}
	if o.Backends.Clock != nil {
		b.Clock = o.Backends.Clock
	}
	rec := &recorder{counts: map[string]int{}}
	b = rec.wrap(b)
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: CacheDir(), Backends: b, Limits: o.Limits})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = host.Close(context.Background()) })
	mod, err := host.Load(ctx, wasmBytes)
	if err != nil {
		tb.Fatalf("loading the plugin: %v", err)
	}
	var reg hostapi.Registry
	if err := reg.Register(mod.Type(), wasmBytes); err != nil {
		tb.Fatal(err)
	}
	mods, err := wasm.Load(ctx, host, &reg, o.Limits)
	if err != nil {
		tb.Fatal(err)
	}
	return &Plugin{Host: host, Module: mod, Cache: cache, Vectors: vecs, Retriever: retriever, Memory: memory, mods: mods, runner: plugin.New(mods), calls: rec}
}

// Fixture is one request for the plugin.
type Fixture struct {
	// Config is the plugin's configuration (JSON; "" is {}).
	Config string
	// Mode is live (default), probe or preview.
	Mode string
	// Body is the chat-completion request body (JSON). Default: one user
	// message "hello".
	Body string
	// Header is the upstream request's headers.
	Header http.Header
	// Decision and Model are what routing chose.
	Decision, Model string
	// Signals are the matched signals.
	Signals []plugin.Signal
	// PII is the personal data routing detected (nil: no pii signal
	// scanned the request).
	PII *PII
	// OnError is the reference's on_error (skip by default).
	OnError string
}

// Outcome is what the stage made of the plugin's result.
type Outcome struct {
	// Report is the plugin's report (status applied, skipped or failed; the
	// host's mode, backend calls and persisted in Report.Module).
	Report plugin.Report
	// Body and Header are the request after the plugin's mutations.
	Body   json.RawMessage
	Header http.Header
	// Immediate is the plugin's answer, if it gave one.
	Immediate   *plugin.Immediate
	CacheStatus string
	// Err is the stage's error (on_error: fail, or a bad configuration).
	Err error
	// HostCalls counts the backend host functions the plugin called during
	// this run, by name (embed, vector_search, cache_lookup, cache_store,
	// classify, retrieve, memory_recall, memory_remember).
	HostCalls map[string]int
	// FreshRetrieves counts the retrieve calls that asked the backend to
	// bypass its result cache (a probe's).
	FreshRetrieves int
}

// Ref is the plugin reference a fixture stands for.
func (p *Plugin) Ref(fx Fixture) recipes.PluginRef {
	ref := recipes.PluginRef{Type: p.Module.Type(), OnError: fx.OnError}
	if fx.Config != "" {
		ref.Configuration = json.RawMessage(fx.Config)
	}
	return ref
}

// Validate checks a configuration the way recipe validation does.
func (p *Plugin) Validate(config string) error {
	return p.runner.Validate(p.Ref(Fixture{Config: config}))
}

func (p *Plugin) request(tb testing.TB, fx Fixture) *plugin.Request {
	tb.Helper()
	body := fx.Body
	if body == "" {
		body = `{"model":"auto","messages":[{"role":"user","content":"hello"}]}`
	}
	c, err := chat.Parse([]byte(body))
	if err != nil {
		tb.Fatalf("fixture body: %v", err)
	}
	h := fx.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	pii, err := fx.PII.locate(c)
	if err != nil {
		tb.Fatalf("fixture PII: %v", err)
	}
	return &plugin.Request{Chat: c, Header: h, Decision: fx.Decision, Model: fx.Model, Mode: fx.Mode, Signals: fx.Signals, PII: pii}
}

// Run runs the request phase on the fixture through the router's plugin
// stage and returns the outcome.
func (p *Plugin) Run(tb testing.TB, fx Fixture) Outcome {
	tb.Helper()
	req := p.request(tb, fx)
	p.calls.reset()
	o, err := p.runner.Request(context.Background(), []recipes.PluginRef{p.Ref(fx)}, req)
	out := Outcome{Header: req.Header, Immediate: o.Immediate, CacheStatus: o.CacheStatus, Err: err, HostCalls: p.calls.snapshot(), FreshRetrieves: p.calls.freshCount()}
	if len(o.Reports) == 1 {
		out.Report = o.Reports[0]
	}
	if b, err := req.Chat.Encode(); err == nil {
		out.Body = b
	}
	return out
}

// Respond runs the response phase on the fixture's request with an upstream
// answer (status and body) and returns the plugin's report.
func (p *Plugin) Respond(tb testing.TB, fx Fixture, status int, body string) (plugin.Report, map[string]int, error) {
	tb.Helper()
	req := p.request(tb, fx)
	p.calls.reset()
	ro, err := p.runner.Response(context.Background(), []recipes.PluginRef{p.Ref(fx)},
		&plugin.Response{Request: req, Status: status, Body: []byte(body)})
	var rep plugin.Report
	if len(ro.Reports) == 1 {
		rep = ro.Reports[0]
	}
	return rep, p.calls.snapshot(), err
}

// Call runs the handler directly with a request record and the host's view
// of the result, mutations unapplied.
func (p *Plugin) Call(tb testing.TB, config string, req *abi.Request) (hostapi.CallResult, error) {
	tb.Helper()
	r, err := p.mods.Call(context.Background(), p.Module.Type(), json.RawMessage(config), req)
	return hostapi.CallResult{Result: r.Result, Mode: req.Mode, BackendCalls: r.BackendCalls, Persisted: r.Persisted}, err
}

// recorder counts backend calls by host function.
type recorder struct {
	mu     sync.Mutex
	counts map[string]int
	fresh  int
}

func (r *recorder) add(name string) {
	r.mu.Lock()
	r.counts[name]++
	r.mu.Unlock()
}

func (r *recorder) reset() {
	r.mu.Lock()
	clear(r.counts)
	r.fresh = 0
	r.mu.Unlock()
}

func (r *recorder) freshCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fresh
}

func (r *recorder) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}
