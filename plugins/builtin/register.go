package builtin

import (
	"fmt"

	"github.com/junction-router/junction/hostapi"
)

// Register adds every built-in module to reg, trusted (their code is part of
// the router: see hostapi.Host.LoadTrusted).
func Register(reg *hostapi.Registry) error {
	for _, s := range Sources {
		wasm, err := Module(s.Type)
		if err != nil {
			return err
		}
		if err := reg.RegisterTrusted(s.Type, wasm); err != nil {
			return fmt.Errorf("registering the built-in %s plugin: %w", s.Type, err)
		}
	}
	return nil
}
