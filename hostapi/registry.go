package hostapi

import (
	"fmt"
	"slices"
	"sync"
)

// Registry maps plugin types to the modules that implement them. It is a
// value its owner fills (plugins/builtin.Registry makes one holding the
// built-in modules; serve adds --plugin-dir and recipe module files); there is
// no process-wide registry.
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
