// Package builtintest gives tests a plugin stage that runs built-in plugin
// modules in a real wasm host, over the engine's in-memory cache and vector
// stores (searched by text for retrieve) and an in-memory memory, the way
// `junction serve` runs them (trusted), so a front end's tests can exercise
// a built-in plugin end to end.
package builtintest

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/plugins/builtin"
)

// Runner returns a plugin stage whose types are the named built-in modules
// (other types run natively, as internal/plugin's stand-ins). The host is
// closed when the test ends; compiled code is cached across test binaries
// in plugintest.CacheDir.
func Runner(t testing.TB, types ...string) plugin.Runner {
	t.Helper()
	ctx := context.Background()
	host := newHost(t)
	var reg hostapi.Registry
	for _, typ := range types {
		mod, err := builtin.Module(typ)
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.RegisterTrusted(typ, mod); err != nil {
			t.Fatal(err)
		}
	}
	mods, err := wasm.Load(ctx, host, &reg, hostapi.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return plugin.New(mods)
}

// NativeRunner returns a plugin stage that runs the built-ins in process
// with a host's functions, over the same kind of backends as Runner's: what
// serve runs for the built-ins with a native form (internal/pluginsys).
func NativeRunner(t testing.TB) plugin.Runner {
	t.Helper()
	return plugin.New(native.WithHost(newHost(t), hostapi.Limits{}))
}

// newHost is a plugin host over the engine's in-memory backends, closed when
// the test ends.
func newHost(t testing.TB) *hostapi.Host {
	t.Helper()
	ctx := context.Background()
	backends, _, vecs, err := wasm.Backends(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	backends.Retriever = &memstore.Retriever{Vectors: vecs, Embedder: backends.Embedder}
	backends.Memory = memstore.NewMemory(backends.Embedder)
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: plugintest.CacheDir(), Backends: backends, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(ctx) })
	return host
}
