package pluginsys

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/junction-router/junction/hostapi"
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

// DefaultCacheDir is where compiled plugin modules are kept across
// runs (compiling a Go module takes seconds, reading it back milliseconds):
// junction/plugins in the user cache directory, or "" (memory only) when
// that cannot be created.
func DefaultCacheDir() string {
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
