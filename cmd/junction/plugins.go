package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/wasm"
)

// withDir returns a registry holding base's modules and every *.wasm module of
// dir, registered untrusted under the type its descriptor names.
func withDir(ctx context.Context, host *hostapi.Host, base *hostapi.Registry, dir string) (*hostapi.Registry, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--plugin-dir %s holds no *.wasm module", dir)
	}
	var reg hostapi.Registry
	for _, t := range base.Types() {
		e, _ := base.Module(t)
		if err := reg.RegisterTrusted(t, e.Wasm); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		m, err := host.Load(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("plugin module %s: %w", f, err)
		}
		if err := reg.Register(m.Type(), b); err != nil {
			return nil, fmt.Errorf("plugin module %s: %w (a built-in or another file already provides it)", f, err)
		}
	}
	return &reg, nil
}

// defaultPluginCacheDir is where compiled plugin modules are kept across
// runs (compiling a Go module takes seconds, reading it back milliseconds):
// junction/plugins in the user cache directory, or "" (memory only) when
// that cannot be created.
func defaultPluginCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	dir := filepath.Join(base, "junction", "plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	return dir
}

// pluginValidator checks plugin configurations as serve does: types with a
// built-in module against the module's schema, the others natively. The
// modules are compiled once into the user cache directory, so that
// validating a file does not compile every module every time.
func pluginValidator(ctx context.Context) (v *plugin.Native, stop func(), err error) {
	if len(hostapi.Builtins().Types()) == 0 {
		return plugin.NewNative(), func() {}, nil
	}
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: defaultPluginCacheDir()})
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
