package pluginsys

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/internal/plugin/wasm"
)

// mixed is the plugin.Modules serve runs: the built-in types with a native
// form run in process (internal/plugin/native over the host's functions:
// the same mode gate, limits, counting and backends as their modules), every
// other type as a module. A natively run type's module is not compiled: its
// configuration is checked by the plugin's own configuration code (what the
// guest runs; TestSchemaRefusesWhatTheGuestRefuses holds the schemas to it)
// and its response phase is the native plugin's (TestNativeMatchesDescriptors
// holds those to the descriptors).
type mixed struct {
	wasm   *wasm.Modules // nil when every type runs natively
	native *native.Modules
	// types are the types run natively: built-ins loaded from
	// plugins/builtin (not a --plugin-dir module of the same name).
	types map[string]bool
}

var _ plugin.Modules = mixed{}

// IgnoresRequest implements plugin.BlindModules for the natively run types
// (a module read from --plugin-dir is never taken to be blind).
func (m mixed) IgnoresRequest(typ string) bool { return m.types[typ] && m.native.IgnoresRequest(typ) }

// Bind implements plugin.BoundModules for the natively run types (a module
// is called through Call).
func (m mixed) Bind(typ string, config json.RawMessage) plugin.BoundCall {
	if m.types[typ] {
		return m.native.Bind(typ, config)
	}
	return nil
}

func (m mixed) Has(typ string) bool {
	return m.types[typ] || (m.wasm != nil && m.wasm.Has(typ))
}

func (m mixed) HasResponse(typ string) bool {
	if m.types[typ] {
		return m.native.HasResponse(typ)
	}
	return m.wasm != nil && m.wasm.HasResponse(typ)
}

func (m mixed) Validate(typ string, config json.RawMessage) error {
	if m.types[typ] {
		return m.native.Validate(typ, config)
	}
	if m.wasm == nil {
		return fmt.Errorf("no module implements plugin type %s", typ)
	}
	return m.wasm.Validate(typ, config)
}

func (m mixed) Call(ctx context.Context, typ string, config json.RawMessage, req *abi.Request) (plugin.ModuleResult, error) {
	if m.types[typ] {
		return m.native.Call(ctx, typ, config, req)
	}
	if m.wasm == nil {
		return plugin.ModuleResult{}, fmt.Errorf("no module implements plugin type %s", typ)
	}
	return m.wasm.Call(ctx, typ, config, req)
}
