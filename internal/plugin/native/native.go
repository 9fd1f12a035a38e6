// Package native runs the built-in plugins that call no host function
// (system_prompt, header_mutation, request_params, fast_response) in the
// router's process, compiled from the same packages as their WebAssembly
// guests (plugins/<name>) and called the way the guest's export calls them:
// the request goes in as the ABI's request record, the answer comes back as
// the ABI's result (sdk.Handle), and the plugin stage applies it exactly as it
// applies a module's. There is no second implementation of any plugin here.
//
// It is what the stage runs when no WebAssembly host is wanted: the tests of
// the front ends, `junction route`, and the management API's default plugin
// runtime. serve runs the same plugins as modules in the host.
//
// What it must not do: hold plugin behaviour of its own, or run a plugin that
// calls a host function (it has none to give).
package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"

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
}

// maxBindings bounds the bindings kept; reaching it starts afresh
// (configurations come from documents, so only many reloads reach it).
const maxBindings = 4096

var _ plugin.Modules = (*Modules)(nil)

// New returns the built-in plugins' native modules.
func New() *Modules {
	m := &Modules{factories: map[string]sdk.Factory{}, bindings: map[string]*binding{}}
	for _, s := range builtin.Sources {
		if s.Native != nil {
			m.factories[s.Type] = s.Native
		}
	}
	return m
}

// Stage returns a plugin stage running the built-in plugins natively.
func Stage() *plugin.Stage { return plugin.New(New()) }

// Types are the plugin types run natively, in the table's order.
func Types() []string {
	var out []string
	for _, s := range builtin.Sources {
		if s.Native != nil {
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

// HasResponse implements plugin.Modules: none of these plugins has a
// response phase.
func (m *Modules) HasResponse(string) bool { return false }

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

// Call implements plugin.Modules: req goes through the ABI's request record,
// as it would into a module.
func (m *Modules) Call(ctx context.Context, typ string, config json.RawMessage, req *abi.Request) (plugin.ModuleResult, error) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() { // the plugin call's span (internal/plugin)
		span.SetAttributes(tracing.PluginRuntime.String("native"))
	}
	b, err := m.binding(typ, config)
	if b == nil {
		return plugin.ModuleResult{}, err
	}
	p, _ := b.pool.Get().(sdk.Plugin)
	if p == nil && err == nil {
		p, err = m.factories[typ](configBytes(config))
	}
	if err != nil {
		// As the guest answers when its factory refuses the configuration.
		return plugin.ModuleResult{Result: abi.Result{Failed: true, Error: "configuration: " + err.Error()}}, nil
	}
	// The result may point into the record, so each call has its own.
	res := sdk.Handle(p, req.Append(make([]byte, 0, req.Size())))
	b.pool.Put(p)
	return plugin.ModuleResult{Result: res}, nil
}

// binding returns the binding of (typ, config), checking the configuration
// the first time.
func (m *Modules) binding(typ string, config json.RawMessage) (*binding, error) {
	f, ok := m.factories[typ]
	if !ok {
		return nil, fmt.Errorf("no native plugin implements plugin type %s", typ)
	}
	key := typ + "\x00" + string(config)
	m.mu.RLock()
	b := m.bindings[key]
	m.mu.RUnlock()
	if b == nil {
		m.mu.Lock()
		if b = m.bindings[key]; b == nil {
			if len(m.bindings) >= maxBindings {
				m.bindings = map[string]*binding{}
			}
			b = &binding{}
			m.bindings[key] = b
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
