package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine/plugin"
	"github.com/junction-router/junction/engine/plugin/wasm"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/recipes"
)

// startPlugins starts the WebAssembly plugin host with every module compiled
// into the binary (hostapi.Builtins), warms an instance pool for each plugin
// reference of doc, and returns the runner serving uses: module types run in
// the host, the others natively. stop frees the host.
func startPlugins(ctx context.Context, doc *recipes.Document, cacheDir string, reg prometheus.Registerer, log *slog.Logger) (r *plugin.Native, stop func(), err error) {
	backends, _, _, err := wasm.EngineBackends(signal.Models{})
	if err != nil {
		return nil, nil, fmt.Errorf("plugin host backends: %w", err)
	}
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: cacheDir, Backends: backends, Logger: log, Registerer: reg})
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	modules, err := pluginRegistry(doc, hostapi.Builtins())
	if err != nil {
		_ = host.Close(ctx)
		return nil, nil, err
	}
	mods, err := wasm.Load(ctx, host, modules, hostapi.Limits{})
	if err != nil {
		_ = host.Close(ctx)
		return nil, nil, err
	}
	if err := mods.Warm(ctx, doc, 2); err != nil {
		_ = host.Close(ctx)
		return nil, nil, fmt.Errorf("plugin bindings: %w", err)
	}
	if n := len(mods.Descriptors()); n > 0 {
		log.Info("plugin modules loaded", "modules", n, "elapsed", time.Since(start).Round(time.Millisecond), "cache_dir", cacheDir)
	}
	stop = func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		mods.Close(cctx)
		_ = host.Close(cctx)
	}
	return plugin.NewWithModules(mods), stop, nil
}
