// Package hostapi runs Junction's plugins: WebAssembly modules that follow the
// ABI of package hostapi/abi, executed with wazero. It compiles each module
// once (through a compilation cache, on disk when a directory is given), reads
// its descriptor, checks binding configurations against the descriptor's JSON
// Schema, keeps a pool of configured instances per binding, and runs handler
// calls under per-binding limits (memory pages, a deadline that closes the
// module when it passes, an output size). The host functions a module imports
// are backed by interfaces the caller supplies (Backends), and each one
// enforces the request's mode: preview calls no backend, probe persists
// nothing, live may do both. The host counts backend calls per handler call.
//
// A fault in a module (a trap, a panic that escapes, the deadline, running out
// of memory, a malformed result) fails that one call: the instance is thrown
// away, the fault is counted, and the caller decides what the request does.
//
// What this package must not do: decide routes, touch the request itself (it
// returns the plugin's mutations for internal/plugin to apply), reach inference
// directly (only through Backends), give a module a file system, network,
// environment or real clock, or log request text.
package hostapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/junction-router/junction/hostapi/abi"
)

// Limits bound one binding's instances. Zero fields take the defaults.
type Limits struct {
	// MemoryPages is the most linear memory an instance may have, in 64 KiB
	// pages. Default 512 (32 MiB).
	MemoryPages uint32
	// CallTimeout is the deadline of one handler call, host calls included;
	// when it passes the instance is closed. Default 250ms.
	CallTimeout time.Duration
	// MaxOutput is the largest result record a handler may return, and the
	// largest answer a host function gives. Default 1 MiB.
	MaxOutput int
	// MaxInstances is how many instances a binding may run at once; a call
	// beyond it waits for one to be free (or for its context). Default 64.
	MaxInstances int
	// MaxHostCalls is how many host functions one handler call may use.
	// Default 256.
	MaxHostCalls int
}

// Defaults.
const (
	DefaultMemoryPages  = 512
	DefaultCallTimeout  = 250 * time.Millisecond
	DefaultMaxOutput    = 1 << 20
	DefaultMaxInstances = 64
	DefaultMaxHostCalls = 256
)

func (l Limits) withDefaults() Limits {
	if l.MemoryPages == 0 {
		l.MemoryPages = DefaultMemoryPages
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = DefaultCallTimeout
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = DefaultMaxOutput
	}
	if l.MaxInstances <= 0 {
		l.MaxInstances = DefaultMaxInstances
	}
	if l.MaxHostCalls <= 0 {
		l.MaxHostCalls = DefaultMaxHostCalls
	}
	return l
}

// Config configures a Host.
type Config struct {
	// CacheDir keeps compiled modules on disk across restarts; empty keeps
	// them in memory for the Host's life.
	CacheDir string
	// Limits are the defaults of every binding.
	Limits Limits
	// Backends serve the host functions; nil fields answer unavailable.
	Backends Backends
	// Logger receives plugin log lines (at most 1 KiB each); nil discards.
	Logger *slog.Logger
	// Registerer receives the host's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Host compiles and runs plugin modules. It is safe for concurrent use.
type Host struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	funcs   map[string]hostFunc // by import name

	mu sync.Mutex
	// caches are the compilation caches of interruptible and trusted code:
	// separate, because wazero's cache key does not tell them apart.
	caches   [2]wazero.CompilationCache
	runtimes map[runtimeKey]*engineRuntime
	closed   bool
}

// runtimeKey picks a wazero runtime: wazero limits memory per runtime, and
// compiles code interruptible (checking for a closed module at every loop
// and call, which costs Go guests a lot) or not, per runtime.
type runtimeKey struct {
	pages   uint32
	trusted bool
}

// engineRuntime is one wazero runtime.
type engineRuntime struct {
	rt      wazero.Runtime
	mu      sync.Mutex
	modules map[string]wazero.CompiledModule // by module hash
}

// New returns a Host. Close it to free its runtimes and cache.
func New(ctx context.Context, cfg Config) (*Host, error) {
	cfg.Limits = cfg.Limits.withDefaults()
	h := &Host{cfg: cfg, log: cfg.Logger, runtimes: make(map[runtimeKey]*engineRuntime)}
	h.funcs = h.hostFuncs()
	for i, sub := range []string{"interruptible", "trusted"} {
		if cfg.CacheDir == "" {
			h.caches[i] = wazero.NewCompilationCache()
			continue
		}
		dir := filepath.Join(cfg.CacheDir, sub)
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("plugin compilation cache in %s: %w (set another directory, or none to cache in memory)", dir, err)
		}
		h.caches[i] = c
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	h.metrics = m
	return h, nil
}

// Close closes every runtime (and with them every instance) and the cache.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	for _, r := range h.runtimes {
		errs = append(errs, r.rt.Close(ctx))
	}
	for _, c := range h.caches {
		errs = append(errs, c.Close(ctx))
	}
	return errors.Join(errs...)
}

// runtime returns the runtime for a key, making it on first use.
func (h *Host) runtime(ctx context.Context, key runtimeKey) (*engineRuntime, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("the plugin host is closed")
	}
	if r := h.runtimes[key]; r != nil {
		return r, nil
	}
	cache := h.caches[0]
	if key.trusted {
		cache = h.caches[1]
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithMemoryLimitPages(key.pages).
		WithCloseOnContextDone(!key.trusted)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("plugin runtime: WASI: %w", err)
	}
	if err := h.instantiateHostModule(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("plugin runtime: host functions: %w", err)
	}
	r := &engineRuntime{rt: rt, modules: make(map[string]wazero.CompiledModule)}
	h.runtimes[key] = r
	return r, nil
}

// compile returns the compiled form of wasm in r, compiling it once.
func (r *engineRuntime) compile(ctx context.Context, hash string, wasm []byte) (wazero.CompiledModule, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.modules[hash]; c != nil {
		return c, nil
	}
	c, err := r.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, err
	}
	r.modules[hash] = c
	return c, nil
}

func moduleHash(wasm []byte) string {
	s := sha256.Sum256(wasm)
	return hex.EncodeToString(s[:])
}

// checkImports refuses a module importing anything the host does not give.
func checkImports(c wazero.CompiledModule) error {
	known := make(map[string]bool, len(abi.Imports))
	for _, n := range abi.Imports {
		known[n] = true
	}
	var bad []string
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch {
		case mod == abi.ImportModule && known[name]:
		case mod == wasi_snapshot_preview1.ModuleName:
		default:
			bad = append(bad, mod+"."+name)
		}
	}
	for _, m := range c.ImportedMemories() {
		mod, name, _ := m.Import()
		bad = append(bad, "memory "+mod+"."+name)
	}
	if len(bad) > 0 {
		return fmt.Errorf("the module imports %v, which the host does not provide (it gives %s.{%v} and WASI preview 1)", bad, abi.ImportModule, abi.Imports)
	}
	for _, need := range []string{abi.ExportABIVersion, abi.ExportAlloc, abi.ExportDescriptor, abi.ExportOnRequest} {
		if _, ok := c.ExportedFunctions()[need]; !ok {
			return fmt.Errorf("the module does not export %s (see docs/plugin-abi.md)", need)
		}
	}
	if _, ok := c.ExportedMemories()["memory"]; !ok {
		return errors.New(`the module does not export its memory as "memory"`)
	}
	return nil
}

// exports are an instance's functions, looked up once.
type exports struct {
	alloc, onRequest, onResponse, descriptor api.Function
}

func lookupExports(m api.Module) exports {
	return exports{
		alloc:      m.ExportedFunction(abi.ExportAlloc),
		onRequest:  m.ExportedFunction(abi.ExportOnRequest),
		onResponse: m.ExportedFunction(abi.ExportOnResponse),
		descriptor: m.ExportedFunction(abi.ExportDescriptor),
	}
}
