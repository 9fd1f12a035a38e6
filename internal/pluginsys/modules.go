package pluginsys

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/plugins/builtin"
	"github.com/junction-router/junction/recipes"
)

// maxModuleBytes bounds a plugin module file.
const maxModuleBytes = 64 << 20

// registry is the registry serve loads modules from, holding only the
// plugin types doc's decisions reference:
//
//   - the modules of base (those of --plugin-dir), trusted as they were;
//   - the built-in plugins (plugins/builtin), trusted, for the types base
//     lacks; a --plugin-dir module may not take a built-in type's name;
//   - every module file a reference names (module: {path, sha256}), read
//     once, checked against its sha256 and registered untrusted.
//
// A type comes from one module only. Only referenced types are kept because
// the host compiles every module it is given when serve starts, seconds each
// (and the built-ins are decompressed only when needed): a configuration
// without plugins starts at once; the example configuration compiles five
// modules, not eight. A configuration change that adds a plugin type loads
// its module when it is activated (System.Prepare).
func registry(doc *recipes.Document, base *hostapi.Registry) (*hostapi.Registry, error) {
	reg := &hostapi.Registry{}
	used := referencedTypes(doc)
	for _, typ := range base.Types() {
		if !used[typ] {
			continue
		}
		e, _ := base.Module(typ)
		if !e.Trusted && slices.Contains(builtin.Types(), typ) {
			return nil, fmt.Errorf("a --plugin-dir module names itself %s, a built-in plugin type; give it another type name", typ)
		}
		register := reg.Register
		if e.Trusted {
			register = reg.RegisterTrusted
		}
		if err := register(typ, e.Wasm); err != nil {
			return nil, err
		}
	}
	for _, typ := range builtin.Types() {
		if !used[typ] {
			continue
		}
		if _, ok := reg.Module(typ); ok {
			continue
		}
		wasm, err := builtin.Module(typ)
		if err != nil {
			return nil, err
		}
		if err := reg.RegisterTrusted(typ, wasm); err != nil {
			return nil, err
		}
	}
	files := map[string]string{} // type → path
	for ri, r := range doc.Recipes {
		for di, d := range r.Decisions {
			for pi, p := range d.Plugins {
				if p.Module == nil {
					continue
				}
				at := fmt.Sprintf("/recipes/%d/decisions/%d/plugins/%d/module", ri, di, pi)
				if prev, ok := files[p.Type]; ok {
					if prev != p.Module.Path {
						return nil, fmt.Errorf("%s: plugin type %s is loaded from %s elsewhere; one type comes from one module", at, p.Type, prev)
					}
					continue
				}
				if _, ok := reg.Module(p.Type); ok {
					return nil, fmt.Errorf("%s: a module built in or from --plugin-dir already provides plugin type %s; give the module's plugin another type name", at, p.Type)
				}
				wasm, err := readModuleFile(p.Module)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", at, err)
				}
				if err := reg.Register(p.Type, wasm); err != nil {
					return nil, fmt.Errorf("%s: %w", at, err)
				}
				files[p.Type] = p.Module.Path
			}
		}
	}
	return reg, nil
}

// referencedTypes are the plugin types doc's decisions name.
func referencedTypes(doc *recipes.Document) map[string]bool {
	used := map[string]bool{}
	for _, r := range doc.Recipes {
		for _, d := range r.Decisions {
			for _, p := range d.Plugins {
				used[p.Type] = true
			}
		}
	}
	return used
}

func readModuleFile(m *recipes.PluginModule) ([]byte, error) {
	st, err := os.Stat(m.Path)
	if err != nil {
		return nil, fmt.Errorf("plugin module %s: %w (a relative path is relative to the working directory)", m.Path, err)
	}
	if st.Size() > maxModuleBytes {
		return nil, fmt.Errorf("plugin module %s is %d bytes; the limit is %d", m.Path, st.Size(), maxModuleBytes)
	}
	wasm, err := os.ReadFile(m.Path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(wasm)
	if got := hex.EncodeToString(sum[:]); got != m.SHA256 {
		return nil, fmt.Errorf("plugin module %s has sha256 %s, the recipe pins %s: rebuild the module the recipe was written for, or update its sha256 (junction plugin build prints it)", m.Path, got, m.SHA256)
	}
	return wasm, nil
}

// ModuleAware checks plugin references without loading modules (config
// validate, route): a reference that names a module file is accepted here
// (serve checks its sha256 and its configuration against the module's
// schema when it loads it); the others go to v, and a built-in plugin's
// configuration is also checked by that plugin's own configuration code
// (the code its wasm guest runs, compiled natively here), so validating
// costs no module compilation.
type ModuleAware struct{ V engine.PluginValidator }

func (m ModuleAware) Validate(ref recipes.PluginRef) error {
	if ref.Module != nil {
		return nil
	}
	if err := m.V.Validate(ref); err != nil {
		return err
	}
	if _, err := builtin.CheckConfig(ref.Type, ref.Configuration); err != nil {
		return &pluginConfigError{typ: ref.Type, err: err}
	}
	return nil
}

// pluginConfigError names the plugin type and, for the recipe loader, the
// field inside the plugin reference.
type pluginConfigError struct {
	typ string
	err error
}

func (e *pluginConfigError) Error() string { return e.typ + " plugin: " + e.err.Error() }
func (e *pluginConfigError) Unwrap() error { return e.err }

// FieldPath is the offending field within the plugin reference.
func (e *pluginConfigError) FieldPath() string {
	var fe interface{ FieldPath() string }
	if errors.As(e.err, &fe) {
		return fe.FieldPath()
	}
	return "configuration"
}
