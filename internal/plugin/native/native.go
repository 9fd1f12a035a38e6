// Package native runs built-in plugins in the router's process, compiled
// from the same packages as their WebAssembly guests (plugins/<name>) and
// called the way the guest's export calls them: the plugin reads the view of
// the ABI's request record (built from the request's values, without encoding
// the record: sdk.HandleRequest), the answer comes back as the ABI's result,
// and the plugin stage applies it exactly as it applies a module's. There is
// no second implementation of any plugin here.
//
// Without a host (New) it runs the built-ins that call no host function
// (system_prompt, header_mutation, request_params, fast_response): the tests
// of the front ends, `junction route`, and the management API's default
// plugin runtime. With a host (WithHost) it also runs the built-ins whose
// host calls go through the request (response_cache; builtin.Plugin.NeedsHost),
// their host functions served by hostapi's NativeBinding: the same mode gate,
// limits, backend counting and backends as the module would get. serve runs
// the built-ins this way (internal/pluginsys); third-party modules stay in
// the WebAssembly host.
//
// What it must not do: hold plugin behaviour of its own, or serve a host
// function itself (hostapi does).
package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/plugins/builtin"
	"github.com/junction-router/junction/sdk"
)

// Modules implements plugin.Modules for the built-in plugins with a native
// form (builtin.Plugin.Native). It is safe for concurrent use.
type Modules struct {
	factories map[string]sdk.Factory
	response  map[string]bool // the types whose plugin has a response phase
	blind     map[string]bool // the types whose request handler reads nothing of the request (builtin.Plugin.Blind)
	host      *hostapi.Host   // nil: no host functions (New)
	limits    hostapi.Limits

	mu       sync.RWMutex
	bindings map[string]*binding // type + "\x00" + configuration
}

// binding is one (type, configuration): a pool of configured plugins, since
// an SDK plugin value is only ever called by one request at a time, as an
// instance of its module is.
type binding struct {
	once sync.Once
	err  error
	pool sync.Pool
	// host serves the plugin's host functions (WithHost); nil without.
	host *hostapi.NativeBinding
}

// maxBindings bounds the bindings kept; reaching it starts afresh
// (configurations come from documents, so only many reloads reach it).
const maxBindings = 4096

var _ plugin.Modules = (*Modules)(nil)

// New returns the native modules of the built-in plugins that call no host
// function.
func New() *Modules { return newModules(nil, hostapi.Limits{}) }

// WithHost returns the native modules of every built-in plugin with a
// native form, their host functions served by h under limits (zero fields:
// the host's), as h would serve their modules'.
func WithHost(h *hostapi.Host, limits hostapi.Limits) *Modules { return newModules(h, limits) }

func newModules(h *hostapi.Host, limits hostapi.Limits) *Modules {
	m := &Modules{factories: map[string]sdk.Factory{}, response: map[string]bool{}, blind: map[string]bool{}, host: h, limits: limits, bindings: map[string]*binding{}}
	for _, s := range builtin.Sources {
		if s.Native == nil || (s.NeedsHost && h == nil) {
			continue
		}
		m.factories[s.Type] = s.Native
		m.blind[s.Type] = s.Blind
		// A factory returns the same concrete type for every configuration
		// (sdk.Register's rule), so the defaults tell whether it has a
		// response phase.
		if p, err := s.Native([]byte("{}")); err == nil {
			_, m.response[s.Type] = p.(sdk.ResponsePlugin)
		}
	}
	return m
}

// Stage returns a plugin stage running the built-in plugins that call no
// host function natively.
func Stage() *plugin.Stage { return plugin.New(New()) }

// Types are the plugin types New runs natively, in the table's order.
func Types() []string {
	var out []string
	for _, s := range builtin.Sources {
		if s.Native != nil && !s.NeedsHost {
			out = append(out, s.Type)
		}
	}
	return out
}

// Types are the plugin types m runs, in the table's order.
func (m *Modules) Types() []string {
	var out []string
	for _, s := range builtin.Sources {
		if m.Has(s.Type) {
			out = append(out, s.Type)
		}
	}
	return out
}

// Has implements plugin.Modules.
func (m *Modules) Has(typ string) bool {
	_, ok := m.factories[typ]
	return ok
}

// HasResponse implements plugin.Modules.
func (m *Modules) HasResponse(typ string) bool { return m.response[typ] }

// IgnoresRequest implements plugin.BlindModules: typ's request handler reads
// nothing of the request (builtin.Plugin.Blind).
func (m *Modules) IgnoresRequest(typ string) bool { return m.blind[typ] }

// Validate implements plugin.Modules with the plugin's own configuration
// code, as the guest's factory runs it.
func (m *Modules) Validate(typ string, config json.RawMessage) error {
	f, ok := m.factories[typ]
	if !ok {
		return fmt.Errorf("no native plugin implements plugin type %s", typ)
	}
	if _, err := f(configBytes(config)); err != nil {
		return configError(typ, err)
	}
	return nil
}

// configError names the plugin type and keeps the field the plugin's
// configuration code blamed, as the stage's own errors do.
func configError(typ string, err error) error {
	var fe interface{ FieldPath() string }
	if !errors.As(err, &fe) {
		return &plugin.ConfigError{Type: typ, Field: "configuration", Message: err.Error()}
	}
	field := fe.FieldPath()
	return &plugin.ConfigError{Type: typ, Field: field, Message: strings.TrimPrefix(err.Error(), field+" ")}
}

// Call implements plugin.Modules: the plugin reads req as it would read its
// record in a module (sdk.HandleRequest).
func (m *Modules) Call(ctx context.Context, typ string, config json.RawMessage, req *abi.Request) (plugin.ModuleResult, error) {
	b, err := m.binding(typ, config)
	if b == nil {
		markSpan(ctx)
		return plugin.ModuleResult{}, err
	}
	return m.call(ctx, typ, config, b, err, req)
}

// Bind implements plugin.BoundModules: Call for (typ, config) with the
// binding looked up once, here (nil for a type without a native plugin,
// which Call reports).
func (m *Modules) Bind(typ string, config json.RawMessage) plugin.BoundCall {
	b, err := m.binding(typ, config)
	if b == nil {
		return nil
	}
	return func(ctx context.Context, req *abi.Request) (plugin.ModuleResult, error) {
		return m.call(ctx, typ, config, b, err, req)
	}
}

// markSpan says on the plugin call's span (internal/plugin) that it ran natively.
func markSpan(ctx context.Context) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(tracing.PluginRuntime.String("native"))
	}
}

// call is Call with the pair's binding b (and the error of its factory).
func (m *Modules) call(ctx context.Context, typ string, config json.RawMessage, b *binding, err error, req *abi.Request) (plugin.ModuleResult, error) {
	markSpan(ctx)
	p, _ := b.pool.Get().(sdk.Plugin)
	if p == nil && err == nil {
		p, err = m.factories[typ](configBytes(config))
	}
	if err != nil {
		// As the guest answers when its factory refuses the configuration.
		return plugin.ModuleResult{Result: abi.Result{Failed: true, Error: "configuration: " + err.Error()}}, nil
	}
	if req.Phase == abi.PhaseResponse && !m.response[typ] {
		b.pool.Put(p)
		return plugin.ModuleResult{}, hostapi.ErrNoResponsePhase
	}
	// The plugin reads req's values as the view of its record
	// (sdk.HandleRequest): no record is encoded and decoded in process.
	if b.host == nil {
		res := sdk.HandleRequest(p, req, nil)
		b.pool.Put(p)
		return plugin.ModuleResult{Result: res}, nil
	}
	c := hostCall{p: p, req: req}
	cr, err := b.host.Call(ctx, req, c.handle)
	b.pool.Put(p) // a plugin value holds its configuration only: a fault does not spoil it
	return plugin.ModuleResult{Result: cr.Result, BackendCalls: cr.BackendCalls, Persisted: cr.Persisted}, err
}

// hostCall is one handler call through a host binding.
type hostCall struct {
	p   sdk.Plugin
	req *abi.Request
}

func (c *hostCall) handle(h *hostapi.HostCalls) abi.Result { return sdk.HandleRequest(c.p, c.req, h) }

// binding returns the binding of (typ, config), checking the configuration
// the first time.
func (m *Modules) binding(typ string, config json.RawMessage) (*binding, error) {
	f, ok := m.factories[typ]
	if !ok {
		return nil, fmt.Errorf("no native plugin implements plugin type %s", typ)
	}
	// The key is built in a stack buffer and looked up as string(key), which
	// the compiler does without a copy: a call allocates no key.
	var buf [256]byte
	key := append(append(append(buf[:0], typ...), 0), config...)
	m.mu.RLock()
	b := m.bindings[string(key)]
	m.mu.RUnlock()
	if b == nil {
		m.mu.Lock()
		if b = m.bindings[string(key)]; b == nil {
			if len(m.bindings) >= maxBindings {
				m.bindings = map[string]*binding{}
			}
			b = &binding{}
			if m.host != nil {
				b.host = m.host.BindNative(typ, configBytes(config), m.limits)
			}
			m.bindings[string(key)] = b
		}
		m.mu.Unlock()
	}
	b.once.Do(func() {
		p, err := f(configBytes(config))
		if err != nil {
			b.err = err
			return
		}
		b.pool.Put(p)
	})
	return b, b.err
}

// configBytes is the configuration a plugin's factory is given: "{}" when the
// recipe gives none, as the host gives a module.
func configBytes(config json.RawMessage) []byte {
	if len(config) == 0 {
		return []byte("{}")
	}
	return config
}
