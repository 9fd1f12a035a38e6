// Package pluginsys is the serve-side plugin system: it decides which plugin
// modules a configuration needs (the built-ins of plugins/builtin, the modules
// of a plugin directory, module files a recipe pins by sha256), loads them into
// one hostapi.Host when a configuration that first needs them is activated,
// and runs them for the gateway, ext_proc and the management API. System
// implements the plugin stage's Runner, the response phase, the engine's
// plugin validator and mgmt.PluginRuntime.
//
// What must not happen here: no listeners, no routing, no configuration
// loading (the caller hands over documents), and no process-wide state: every
// System owns its host and closes it.
package pluginsys

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/inference/worker/client"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/plugins/builtin"
	"github.com/junction-router/junction/recipes"
)

// System is serve's plugin runner across configuration changes. The
// host compiles a module in seconds, so only the plugin types a configuration
// references are loaded, and they are loaded when a configuration that first
// needs them is activated (Prepare, called by the compile step of every
// activation, before the engine validates the plugin configurations): a
// change through the management API that adds a response_cache, say, loads
// that module then. Each load keeps the types loaded before, so a request
// still on an older generation finds its plugins; requests always run on the
// latest load. It implements plugin.Runner, the response phase, the engine's
// validator and the management API's PluginRuntime.
type System struct {
	host   *hostapi.Host
	native *native.Modules   // the built-ins run in process, over host's functions
	cache  respcache.Backend // the response cache behind cache_lookup and cache_store
	base   *hostapi.Registry // the --plugin-dir modules (the built-ins come from plugins/builtin)
	log    *slog.Logger
	mu     sync.Mutex       // serialises loads
	loaded []recipes.Recipe // every recipe a load served, so later loads keep their types
	cur    atomic.Pointer[pluginLoad]
	old    []*wasm.Modules // replaced loads, closed with the system
	stats  *Stats          // live runs by type, across loads
	// recovery keeps what context_compression takes out of live requests
	// (recovery.go).
	recovery respcache.Backend
	// external serves the classify bindings asked of global.external_models
	// entries (external.go); Prepare keeps its entries current.
	external *externalClassifiers
}

type pluginLoad struct {
	runner *plugin.Stage
	mods   *wasm.Modules
	types  map[string]bool
	native map[string]bool // the types run natively (mixed)
}

// Options configure a System.
type Options struct {
	// CacheDir keeps compiled modules across restarts; "" keeps them in
	// memory only (DefaultCacheDir is the binary's default).
	CacheDir string
	// Dir, when set, holds third-party modules (*.wasm), each loaded under
	// the type its descriptor names.
	Dir string
	// Models back the host functions that call model-backed signals.
	Models signal.Models
	// Retriever and Memory back the retrieve, memory_recall and
	// memory_remember host functions (stored data; internal/retrieval); nil
	// leaves those functions unavailable.
	Retriever hostapi.Retriever
	Memory    hostapi.Memory
	// ResponseCache backs cache_lookup and cache_store (each namespace
	// scoped by the call context's respcache.Scope); nil is an in-memory
	// one with the default bounds. The System does not close it.
	ResponseCache respcache.Backend
	// Deployment finds a model deployment's client pool by name, for the
	// nli:<deployment> classify binding (external.go); nil: none.
	Deployment func(name string) *client.Pool
	// Registerer receives the host's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger receives load reports; nil discards them.
	Logger *slog.Logger
}

// New starts a plugin host. No module is compiled until Prepare sees a
// configuration that references one.
func New(ctx context.Context, o Options) (*System, error) {
	cacheDir, pluginDir, models, reg, log := o.CacheDir, o.Dir, o.Models, o.Registerer, o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	backends, mem, _, err := EngineBackends(models)
	if err != nil {
		return nil, fmt.Errorf("plugin host backends: %w", err)
	}
	cache := o.ResponseCache
	if cache == nil {
		cache = respcache.Memory(mem)
	}
	backends.Cache = respcache.Scoped{Backend: cache}
	external := &externalClassifiers{base: backends.Classifier, deployment: o.Deployment}
	backends.Classifier = external
	backends.Retriever, backends.Memory = o.Retriever, o.Memory
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: cacheDir, Backends: backends, Logger: log, Registerer: reg})
	if err != nil {
		return nil, err
	}
	base := &hostapi.Registry{}
	if pluginDir != "" {
		if base, err = withDir(ctx, host, base, pluginDir); err != nil {
			_ = host.Close(ctx)
			return nil, err
		}
	}
	p := &System{host: host, native: native.WithHost(host, hostapi.Limits{}), cache: cache, base: base, log: log, stats: NewStats(time.Now()),
		recovery: respcache.NewMemory(respcache.Options{MaxEntries: RecoveryMaxRecords, MaxBytes: RecoveryMaxBytes}), external: external}
	p.cur.Store(&pluginLoad{runner: native.Stage(), types: map[string]bool{}})
	return p, nil
}

// Cache is the response cache the plugins' cache_lookup and cache_store
// use (the management API's response-cache routes and the router_cache_*
// metrics read it).
func (p *System) Cache() respcache.Backend { return p.cache }

// Prepare loads the modules doc's plugin references need that are not
// loaded yet, and warms an instance pool for each reference.
func (p *System) Prepare(ctx context.Context, doc *recipes.Document) error {
	// The external models the guard and judge bindings ask are the serving
	// configuration's.
	p.external.set(doc.Global.ExternalModels)
	return p.load(ctx, doc)
}

// load is Prepare without taking doc's external models (a preview's
// made-up document has none).
func (p *System) load(ctx context.Context, doc *recipes.Document) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.cur.Load()
	need := referencedTypes(doc)
	missing := false
	for t := range need {
		if !cur.types[t] && p.hasModule(t, doc) {
			missing = true
			break
		}
	}
	if missing {
		union := &recipes.Document{Recipes: append(slices.Clone(p.loaded), doc.Recipes...)}
		// The built-ins that run natively are not compiled: a module costs
		// seconds cold and tens of MB compiled, and serve would never call it.
		native := map[string]bool{}
		for t := range referencedTypes(union) {
			if p.runsNatively(t, union) {
				native[t] = true
			}
		}
		reg, err := registry(withoutTypes(union, native), p.base)
		if err != nil {
			return err
		}
		start := time.Now()
		var mods *wasm.Modules
		if len(reg.Types()) > 0 {
			if mods, err = wasm.Load(ctx, p.host, reg, hostapi.Limits{}); err != nil {
				return err
			}
		}
		next := &pluginLoad{mods: mods, types: map[string]bool{}, native: native}
		for _, t := range reg.Types() {
			next.types[t] = true
		}
		for t := range native {
			next.types[t] = true
		}
		next.runner = plugin.New(mixed{wasm: mods, native: p.native, types: next.native})
		if cur.mods != nil {
			p.old = append(p.old, cur.mods)
		}
		p.cur.Store(next)
		cur = next
		p.log.Info("plugins loaded", "types", strings.Join(slices.Sorted(maps.Keys(next.types)), ","),
			"native", strings.Join(slices.Sorted(maps.Keys(next.native)), ","), "elapsed", time.Since(start).Round(time.Millisecond))
	}
	p.loaded = append(p.loaded, doc.Recipes...)
	if cur.mods == nil {
		return nil
	}
	// Natively run types need no instances.
	if err := cur.mods.Warm(ctx, withoutTypes(doc, cur.native), 2); err != nil {
		return fmt.Errorf("plugin bindings: %w", err)
	}
	return nil
}

// withoutTypes is doc without the plugin references of the given types.
func withoutTypes(doc *recipes.Document, types map[string]bool) *recipes.Document {
	out := &recipes.Document{Recipes: slices.Clone(doc.Recipes)}
	for ri, r := range out.Recipes {
		r.Decisions = slices.Clone(r.Decisions)
		for di, d := range r.Decisions {
			d.Plugins = slices.DeleteFunc(slices.Clone(d.Plugins), func(ref recipes.PluginRef) bool { return types[ref.Type] })
			r.Decisions[di] = d
		}
		out.Recipes[ri] = r
	}
	return out
}

// runsNatively reports whether typ is a built-in serve runs in process: it
// has a native form, and neither a --plugin-dir module nor a module file a
// reference of doc names provides the type.
func (p *System) runsNatively(typ string, doc *recipes.Document) bool {
	if _, fromDir := p.base.Module(typ); fromDir || !p.native.Has(typ) {
		return false
	}
	for _, r := range doc.Recipes {
		for _, d := range r.Decisions {
			for _, ref := range d.Plugins {
				if ref.Type == typ && ref.Module != nil {
					return false
				}
			}
		}
	}
	return true
}

// hasModule reports whether typ is run by a module: a built-in, a
// plugin directory module, or a module file a reference of doc names.
func (p *System) hasModule(typ string, doc *recipes.Document) bool {
	if _, ok := p.base.Module(typ); ok || slices.Contains(builtin.Types(), typ) {
		return true
	}
	for _, r := range doc.Recipes {
		for _, d := range r.Decisions {
			for _, ref := range d.Plugins {
				if ref.Type == typ && ref.Module != nil {
					return true
				}
			}
		}
	}
	return false
}

func (p *System) runner() *plugin.Stage { return p.cur.Load().runner }

// Request implements plugin.Runner; live runs are counted in Stats.
func (p *System) Request(ctx context.Context, refs []recipes.PluginRef, req *plugin.Request) (plugin.Outcome, error) {
	live := req.Mode == plugin.ModeLive
	var before json.RawMessage
	if live && req.Chat != nil && compresses(refs) {
		before = req.Chat.Fields["messages"] // the stage replaces it, never edits it in place
	}
	out, err := p.runner().Request(ctx, refs, req)
	if live {
		p.stats.Record(out.Reports)
		if err == nil && before != nil {
			_, _ = p.keepRecovery(ctx, req, before, out.Reports)
		}
	}
	return out, err
}

// PluginStats implements mgmt.PluginStatsReader: typ's live request-phase
// runs since the system started.
func (p *System) PluginStats(typ string) (mgmt.PluginRunStats, time.Time) { return p.stats.Type(typ) }

// Validate checks a reference with the latest load (module schemas for
// module types) and the built-in plugins' own configuration code.
func (p *System) Validate(ref recipes.PluginRef) error {
	if ref.Module != nil {
		return p.runner().Validate(ref)
	}
	return ModuleAware{p.runner()}.Validate(ref)
}

// HasResponsePhase and Response run the response phase (dataplane).
func (p *System) HasResponsePhase(refs []recipes.PluginRef) bool {
	return p.runner().HasResponsePhase(refs)
}

func (p *System) Response(ctx context.Context, refs []recipes.PluginRef, resp *plugin.Response) (plugin.ResponseOutcome, error) {
	return p.runner().Response(ctx, refs, resp)
}

// Types implements mgmt.PluginRuntime: the built-in types (native when the
// latest load runs them in process, else wasm), any other loaded module
// type, and the known types nothing implements (unavailable).
func (p *System) Types() []mgmt.PluginType {
	seen := map[string]bool{}
	var out []mgmt.PluginType
	add := func(t, rt string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, mgmt.PluginType{Type: t, Runtime: rt, Available: true})
		}
	}
	cur := p.cur.Load()
	for _, t := range builtin.Types() {
		if cur.native[t] {
			add(t, "native")
		}
		add(t, "wasm")
	}
	for _, t := range p.base.Types() {
		add(t, "wasm")
	}
	for t := range cur.types {
		add(t, "wasm")
	}
	for _, t := range plugin.HostSideTypes() {
		add(t, "host") // unless a --plugin-dir module took the name
	}
	for _, t := range plugin.Types {
		if !seen[t] {
			seen[t] = true
			out = append(out, mgmt.PluginType{Type: t, Runtime: "wasm",
				Reason: "no module implements the " + t + " plugin type in this build; load one with --plugin-dir or a recipe's module: {path, sha256}"})
		}
	}
	slices.SortFunc(out, func(a, b mgmt.PluginType) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// Preview implements mgmt.PluginRuntime: it loads the modules refs need (a
// candidate configuration may name a type the serving configuration does
// not use), then runs them in the request's mode.
func (p *System) Preview(ctx context.Context, refs []recipes.PluginRef, req *plugin.Request) (plugin.Outcome, error) {
	doc := &recipes.Document{Recipes: []recipes.Recipe{{Name: "preview", Decisions: []recipes.Decision{{Name: "preview", Plugins: refs}}}}}
	if err := p.load(ctx, doc); err != nil {
		return plugin.Outcome{}, err
	}
	return p.Request(ctx, refs, req)
}

// Close frees the host and every load's instances.
func (p *System) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if m := p.cur.Load().mods; m != nil {
		m.Close(ctx)
	}
	for _, m := range p.old {
		m.Close(ctx)
	}
	_ = p.host.Close(ctx)
}
