package pluginsys

import (
	"context"
	"encoding/json"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/internal/plugin/wasm"
)

// mixed is the plugin.Modules serve runs: the built-in types with a native
// form run in process (internal/plugin/native over the host's functions:
// the same mode gate, limits, counting and backends as their modules), every
// other type as a module. The loaded module stays the authority on what a
// type is: its schema validates configurations and its descriptor says
// whether it has a response phase (TestNativeMatchesDescriptors holds the
// native plugins to them).
type mixed struct {
	wasm   *wasm.Modules
	native *native.Modules
	// types are the types run natively: built-ins loaded from
	// plugins/builtin (not a --plugin-dir module of the same name).
	types map[string]bool
}

var _ plugin.Modules = mixed{}

func (m mixed) Has(typ string) bool         { return m.wasm.Has(typ) }
func (m mixed) HasResponse(typ string) bool { return m.wasm.HasResponse(typ) }

func (m mixed) Validate(typ string, config json.RawMessage) error {
	return m.wasm.Validate(typ, config)
}

func (m mixed) Call(ctx context.Context, typ string, config json.RawMessage, req *abi.Request) (plugin.ModuleResult, error) {
	if m.types[typ] {
		return m.native.Call(ctx, typ, config, req)
	}
	return m.wasm.Call(ctx, typ, config, req)
}
