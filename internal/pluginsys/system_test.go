package pluginsys

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/hostapi/plugintest"
)

func TestPluginSystemLoadsADirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hostile.wasm"), plugintest.Build(t, "../../hostapi/testdata/hostile"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := docWith(t, `[{type: hostile, configuration: {do: ok}}]`)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := New(context.Background(), Options{CacheDir: plugintest.CacheDir(), Dir: dir, Registerer: prometheus.NewRegistry(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Prepare(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(doc.Recipes[0].Decisions[0].Plugins[0]); err != nil {
		t.Fatalf("the hostile binding does not validate: %v", err)
	}
	bad := doc.Recipes[0].Decisions[0].Plugins[0]
	bad.Configuration = []byte(`["not an object"]`)
	if err := r.Validate(bad); err == nil || !strings.Contains(err.Error(), "configuration") {
		t.Fatalf("an array configuration validated: %v", err)
	}
	if _, err := New(context.Background(), Options{Dir: t.TempDir(), Registerer: prometheus.NewRegistry(), Logger: log}); err == nil {
		t.Fatal("an empty plugin directory was accepted")
	}
}
