package hostapi

import (
	"fmt"
	"slices"
	"sync"
)

// Registry maps plugin types to the modules that implement them. Packages
// holding plugin modules register them (the built-in plugins register into
// Builtins from an init function, the way Caddy modules register themselves);
// the engine loads what is registered when it starts.
type Registry struct {
	mu   sync.RWMutex
	mods map[string]Entry
}

// Entry is a registered module.
type Entry struct {
	Wasm []byte
	// Trusted modules are loaded with Host.LoadTrusted: the built-in ones.
	Trusted bool
}

// Register adds the module implementing typ, untrusted (loaded with
// Host.Load, interruptible at its deadline). Registering a type twice is an
// error: two modules cannot both be the same plugin.
func (r *Registry) Register(typ string, wasm []byte) error {
	return r.register(typ, Entry{Wasm: wasm})
}

// RegisterTrusted adds a module whose code is part of the router (see
// Host.LoadTrusted).
func (r *Registry) RegisterTrusted(typ string, wasm []byte) error {
	return r.register(typ, Entry{Wasm: wasm, Trusted: true})
}

func (r *Registry) register(typ string, e Entry) error {
	wasm := e.Wasm
	if typ == "" || len(wasm) == 0 {
		return fmt.Errorf("registering a plugin module needs a type and the module's bytes")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mods == nil {
		r.mods = make(map[string]Entry)
	}
	if _, ok := r.mods[typ]; ok {
		return fmt.Errorf("plugin type %s is registered twice", typ)
	}
	r.mods[typ] = e
	return nil
}

// Types lists the registered types, sorted.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.mods))
	for t := range r.mods {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Module returns the module registered for typ.
func (r *Registry) Module(typ string) (Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.mods[typ]
	return e, ok
}

// builtins holds the modules compiled into the binary.
var builtins Registry

// RegisterBuiltin registers a module compiled into the binary (call it from
// an init function of the package that embeds the module); it is trusted
// (see Host.LoadTrusted). It panics on a duplicate type, which is a
// programming error.
func RegisterBuiltin(typ string, wasm []byte) {
	if err := builtins.RegisterTrusted(typ, wasm); err != nil {
		panic(err)
	}
}

// Builtins is the registry of modules compiled into the binary.
func Builtins() *Registry { return &builtins }
