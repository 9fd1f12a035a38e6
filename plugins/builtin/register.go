package builtin

import (
	"fmt"

	"github.com/junction-router/junction/hostapi"
)

// Registry returns a new host registry holding the built-in modules of types
// (every built-in type when none is named), trusted: their code is part of
// the router (see hostapi.Host.LoadTrusted). Only the named modules are
// decompressed.
func Registry(types ...string) (*hostapi.Registry, error) {
	if len(types) == 0 {
		types = Types()
	}
	reg := &hostapi.Registry{}
	if err := Register(reg, types...); err != nil {
		return nil, err
	}
	return reg, nil
}

// Register adds the built-in modules of types (every built-in type when none
// is named) to reg, trusted.
func Register(reg *hostapi.Registry, types ...string) error {
	if len(types) == 0 {
		types = Types()
	}
	for _, typ := range types {
		wasm, err := Module(typ)
		if err != nil {
			return err
		}
		if err := reg.RegisterTrusted(typ, wasm); err != nil {
			return fmt.Errorf("registering the built-in %s plugin: %w", typ, err)
		}
	}
	return nil
}
