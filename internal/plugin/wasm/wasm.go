// Package wasm connects the plugin stage (internal/plugin) to the WebAssembly
// plugin host (hostapi): it loads every registered module once, validates
// recipe configurations against the modules' schemas, keeps one binding (a
// pool of configured instances) per plugin type and configuration, and runs
// handler calls for the stage. It also supplies the host functions' backends
// (Backends): an embedder and classifiers given as small interfaces (the
// model-free ones of internal/lexical where none is given), an in-memory
// response cache and in-memory vector stores.
//
// What it must not do: apply mutations (the stage does), decide routes,
// make instances on the request path once Warm has run for a document, or
// import the serving engine (engine/...): the plugin author harness
// (hostapi/plugintest) builds on it, and the serve side (internal/pluginsys)
// adapts the engine's models to it.
package wasm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/recipes"
)

// Modules implements plugin.Modules over a hostapi.Host. It is safe for
// concurrent use.
type Modules struct {
	host   *hostapi.Host
	limits hostapi.Limits
	mods   map[string]*hostapi.Module

	mu       sync.RWMutex
	bindings map[string]map[string]*bindingSlot // type → configuration → binding
	count    int
}

// bindingSlot makes its binding once, even when many requests need it at once.
type bindingSlot struct {
	once sync.Once
	b    *hostapi.Binding
	err  error
}

// maxBindings bounds the bindings kept; past it, new configurations are
// refused until a restart (configurations come from documents, so only a
// great many reloads reach it).
const maxBindings = 4096

var _ plugin.Modules = (*Modules)(nil)

// Load compiles every module of reg on host and checks that each describes
// the type it was registered under. limits are the bindings' limits (zero
// fields: the host's).
func Load(ctx context.Context, host *hostapi.Host, reg *hostapi.Registry, limits hostapi.Limits) (*Modules, error) {
	m := &Modules{host: host, limits: limits, mods: make(map[string]*hostapi.Module), bindings: make(map[string]map[string]*bindingSlot)}
	var errs []error
	for _, typ := range reg.Types() {
		e, _ := reg.Module(typ)
		load := host.Load
		if e.Trusted {
			load = host.LoadTrusted
		}
		mod, err := load(ctx, e.Wasm)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin module %s: %w", typ, err))
			continue
		}
		if mod.Type() != typ {
			errs = append(errs, fmt.Errorf("plugin module registered as %s describes itself as %s", typ, mod.Type()))
			continue
		}
		m.mods[typ] = mod
	}
	return m, errors.Join(errs...)
}

// Module returns the loaded module of typ.
func (m *Modules) Module(typ string) (*hostapi.Module, bool) {
	mod, ok := m.mods[typ]
	return mod, ok
}

// Descriptors are the loaded modules' descriptors, by type.
func (m *Modules) Descriptors() map[string]abi.Descriptor {
	out := make(map[string]abi.Descriptor, len(m.mods))
	for t, mod := range m.mods {
		out[t] = mod.Descriptor()
	}
	return out
}

// Has implements plugin.Modules.
func (m *Modules) Has(typ string) bool {
	_, ok := m.mods[typ]
	return ok
}

// HasResponse implements plugin.Modules.
func (m *Modules) HasResponse(typ string) bool {
	mod, ok := m.mods[typ]
	return ok && mod.HasResponsePhase()
}

// Validate implements plugin.Modules.
func (m *Modules) Validate(typ string, config json.RawMessage) error {
	mod, ok := m.mods[typ]
	if !ok {
		return fmt.Errorf("no module implements plugin type %s", typ)
	}
	return mod.ValidateConfig(config)
}

// Call implements plugin.Modules.
func (m *Modules) Call(ctx context.Context, typ string, config json.RawMessage, req *abi.Request) (plugin.ModuleResult, error) {
	b, err := m.binding(ctx, typ, config)
	if err != nil {
		return plugin.ModuleResult{}, err
	}
	res, err := b.Call(ctx, req)
	if span := trace.SpanFromContext(ctx); span.IsRecording() { // the plugin call's span (internal/plugin)
		span.SetAttributes(tracing.PluginRuntime.String("wasm"))
	}
	return plugin.ModuleResult{Result: res.Result, BackendCalls: res.BackendCalls, Persisted: res.Persisted}, err
}

func (m *Modules) binding(ctx context.Context, typ string, config json.RawMessage) (*hostapi.Binding, error) {
	m.mu.RLock()
	slot := m.bindings[typ][string(config)]
	m.mu.RUnlock()
	if slot == nil {
		mod, ok := m.mods[typ]
		if !ok {
			return nil, fmt.Errorf("no module implements plugin type %s", typ)
		}
		m.mu.Lock()
		byConfig := m.bindings[typ]
		if byConfig == nil {
			byConfig = make(map[string]*bindingSlot)
			m.bindings[typ] = byConfig
		}
		slot = byConfig[string(config)]
		if slot == nil {
			if m.count >= maxBindings {
				m.mu.Unlock()
				return nil, fmt.Errorf("too many plugin bindings (%d): restart to drop old configurations", maxBindings)
			}
			slot = &bindingSlot{}
			byConfig[string(bytes.Clone(config))] = slot
			m.count++
		}
		m.mu.Unlock()
		slot.once.Do(func() {
			// The binding outlives this request: do not let its cancellation
			// abort making the first instance.
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			slot.b, slot.err = m.host.Bind(bctx, mod, config, m.limits)
		})
	}
	return slot.b, slot.err
}

// Warm binds every plugin reference of doc that a module implements and makes
// instances instances of each, so requests find them ready.
func (m *Modules) Warm(ctx context.Context, doc *recipes.Document, instances int) error {
	var errs []error
	for _, r := range doc.Recipes {
		for _, d := range r.Decisions {
			for _, p := range d.Plugins {
				if !m.Has(p.Type) || m.Validate(p.Type, p.Configuration) != nil {
					continue // recipe validation reports a bad configuration, with its path
				}
				b, err := m.binding(ctx, p.Type, p.Configuration)
				if err == nil {
					err = b.Warm(ctx, instances)
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("recipe %s, decision %s, plugin %s: %w", r.Name, d.Name, p.Type, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Close closes every binding's idle instances.
func (m *Modules) Close(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, byConfig := range m.bindings {
		for _, s := range byConfig {
			if s.b != nil {
				s.b.Close(ctx)
			}
		}
	}
}

// Binding returns (making it if needed) the binding of typ with config.
func (m *Modules) Binding(ctx context.Context, typ string, config json.RawMessage) (*hostapi.Binding, error) {
	return m.binding(ctx, typ, config)
}

// BindingInfo describes one active binding: a plugin type with one
// configuration, and its instance pool.
type BindingInfo struct {
	Type          string          `json:"type"`
	Configuration json.RawMessage `json:"configuration"`
	// Instances is how many instances the binding has made; Err is why it
	// could not be made, if it could not.
	Instances int64  `json:"instances"`
	Err       string `json:"error,omitempty"`
}

// Bindings lists the active bindings of typ ("" for all), sorted by type
// and configuration.
func (m *Modules) Bindings(typ string) []BindingInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []BindingInfo
	for t, byConfig := range m.bindings {
		if typ != "" && t != typ {
			continue
		}
		for cfg, slot := range byConfig {
			info := BindingInfo{Type: t, Configuration: json.RawMessage(cfg)}
			switch {
			case slot.b != nil:
				info.Instances = slot.b.Instances()
			case slot.err != nil:
				info.Err = slot.err.Error()
			}
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b BindingInfo) int {
		if c := cmp.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return bytes.Compare(a.Configuration, b.Configuration)
	})
	return out
}
