package main

import (
	"context"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/internal/pluginsys"
)

// pluginValidator checks plugin configurations as serve does: types with a
// built-in module against the module's schema, the others natively. The
// modules are compiled once into the user cache directory, so that
// validating a file does not compile every module every time.
func pluginValidator(ctx context.Context) (v *plugin.Native, stop func(), err error) {
	if len(hostapi.Builtins().Types()) == 0 {
		return plugin.NewNative(), func() {}, nil
	}
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: pluginsys.DefaultCacheDir()})
	if err != nil {
		return nil, nil, err
	}
	mods, err := wasm.Load(ctx, host, hostapi.Builtins(), hostapi.Limits{})
	if err != nil {
		_ = host.Close(ctx)
		return nil, nil, err
	}
	return plugin.NewWithModules(mods), func() { _ = host.Close(context.Background()) }, nil
}
