package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/junction-router/junction/recipes"
)

// Stage runs a decision's plugins: each type its Modules implement (the
// WebAssembly host, or the built-in plugins compiled natively: package
// internal/plugin/native), the others reported unavailable. It is safe for
// concurrent use.
//
// Configurations are compiled once: Request keeps the compiled form of each
// (type, configuration bytes) pair it has seen, so a request decodes no plugin
// configuration. Prepare compiles a decision's plugins ahead of time instead.
type Stage struct {
	// mods runs the types that have a module; nil: none.
	mods  Modules
	mu    sync.RWMutex
	cache map[string]map[string]compiled // type → configuration bytes → compiled
	size  int
}

// maxCached bounds the compile cache; reaching it starts the cache afresh
// (configurations come from a document, so this is only reached across many
// reloads).
const maxCached = 1024

// compiled is a plugin configuration made ready to run.
type compiled struct {
	inst instance
	// unavailable: no module implements the type (err says why when the type
	// is not even known).
	unavailable bool
	err         error
}

// New returns a stage running the types mods implements (none when mods is
// nil: every type reports unavailable).
func New(mods Modules) *Stage {
	return &Stage{mods: mods, cache: make(map[string]map[string]compiled)}
}

var _ Runner = (*Stage)(nil)

// Validate checks one plugin reference: its type is known, on_error is skip or
// fail, and the configuration of a type with a module passes the module's
// check. Errors are *ConfigError or the module's. A known type without a
// module is accepted (its configuration cannot be checked here).
func (n *Stage) Validate(ref recipes.PluginRef) error {
	if err := checkOnError(ref); err != nil {
		return err
	}
	c := n.compile(ref.Type, ref.Configuration)
	if c.unavailable && c.err == nil {
		return nil
	}
	return c.err
}

// Prepared is a decision's plugins compiled once, ready to run on many
// requests. The zero value runs nothing. It is safe for concurrent use.
type Prepared struct {
	steps []step
}

// Prepare compiles refs. Any invalid reference is an error (each error names
// the plugin's index); a known type without a module is not an error, it
// reports unavailable when run.
func (n *Stage) Prepare(refs []recipes.PluginRef) (Prepared, error) {
	p := Prepared{steps: make([]step, len(refs))}
	var errs []error
	for i, ref := range refs {
		if err := n.Validate(ref); err != nil {
			errs = append(errs, fmt.Errorf("plugins[%d]: %w", i, err))
			continue
		}
		p.steps[i] = n.step(ref)
	}
	if len(errs) > 0 {
		return Prepared{}, errors.Join(errs...)
	}
	return p, nil
}

// Request runs the prepared plugins on req (see Stage.Request).
func (p Prepared) Request(ctx context.Context, req *Request) (Outcome, error) {
	return run(ctx, len(p.steps), func(i int) step { return p.steps[i] }, req)
}

// Len is the number of plugins prepared.
func (p Prepared) Len() int { return len(p.steps) }

// Request runs refs in order on req, applying each plugin's mutations before
// the next runs. After a plugin answers immediately, the rest are reported
// skipped and do not run. A plugin that fails (bad configuration, a request it
// cannot handle) or is unavailable is reported; with on_error skip (the
// default) the stage goes on, with on_error fail it stops and returns an error
// naming the plugin and the decision, along with the reports so far. A failed
// plugin leaves the request unchanged.
func (n *Stage) Request(ctx context.Context, refs []recipes.PluginRef, req *Request) (Outcome, error) {
	return run(ctx, len(refs), func(i int) step { return n.step(refs[i]) }, req)
}

func (n *Stage) step(ref recipes.PluginRef) step {
	s := step{typ: ref.Type, onError: ref.OnError}
	if s.onError == "" {
		s.onError = recipes.OnErrorSkip
	}
	if err := checkOnError(ref); err != nil {
		s.err = err
		return s
	}
	c := n.compiled(ref)
	s.inst, s.unavailable = c.inst, c.unavailable
	if !c.unavailable {
		s.err = c.err
	}
	return s
}

func (n *Stage) compiled(ref recipes.PluginRef) compiled {
	n.mu.RLock()
	c, ok := n.cache[ref.Type][string(ref.Configuration)]
	n.mu.RUnlock()
	if ok {
		return c
	}
	c = n.compile(ref.Type, ref.Configuration)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cache == nil || n.size >= maxCached {
		n.cache = make(map[string]map[string]compiled)
		n.size = 0
	}
	byConfig := n.cache[ref.Type]
	if byConfig == nil {
		byConfig = make(map[string]compiled)
		n.cache[ref.Type] = byConfig
	}
	if _, ok := byConfig[string(ref.Configuration)]; !ok {
		byConfig[string(ref.Configuration)] = c
		n.size++
	}
	return c
}

func checkOnError(ref recipes.PluginRef) error {
	switch ref.OnError {
	case "", recipes.OnErrorSkip, recipes.OnErrorFail:
		return nil
	}
	return &ConfigError{Type: ref.Type, Field: "on_error", Message: fmt.Sprintf("must be skip or fail, not %q", ref.OnError)}
}

// compile prepares one configuration: as a module when a module implements
// the type; a known type without one is unavailable, any other an error.
func (n *Stage) compile(typ string, raw json.RawMessage) compiled {
	switch {
	case typ == "":
		return compiled{err: &ConfigError{Field: "type", Message: "is required; known types: " + strings.Join(Types, ", ")}}
	case IsHostSide(typ) && (n.mods == nil || !n.mods.Has(typ)):
		return compileHostSide(typ, raw)
	case n.mods != nil && n.mods.Has(typ):
		if err := n.mods.Validate(typ, raw); err != nil {
			return compiled{err: err}
		}
		inst := &moduleInstance{mods: n.mods, typ: typ, config: raw}
		if b, ok := n.mods.(BlindModules); ok {
			inst.blind = b.IgnoresRequest(typ)
		}
		return compiled{inst: inst}
	case slices.Contains(Types, typ):
		return compiled{unavailable: true}
	}
	// An unknown type might be a third-party module not loaded here; it is a
	// configuration error, and at run time it is unavailable.
	return compiled{unavailable: true, err: &ConfigError{Type: typ, Field: "type",
		Message: fmt.Sprintf("%q is not a known plugin type; known types: %s", typ, strings.Join(Types, ", "))}}
}
