package main

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
	"github.com/junction-router/junction/recipes"
)

func TestStartPluginsLoadsADirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.wasm"), plugintest.Build(t, "../../hostapi/testdata/hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc, err := recipes.Parse([]byte(`
version: v1
providers:
  defaults: {default_model: demo}
  models: [{name: demo, backend_refs: [{provider: demo}]}]
recipes:
  - name: default
    decisions:
      - name: all
        priority: 1
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: demo}]
        plugins: [{type: hello, configuration: {greeting: hi}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r, stop, err := startPlugins(context.Background(), doc, plugintest.CacheDir(), dir, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := r.Validate(doc.Recipes[0].Decisions[0].Plugins[0]); err != nil {
		t.Fatalf("the hello binding does not validate: %v", err)
	}
	bad := doc.Recipes[0].Decisions[0].Plugins[0]
	bad.Configuration = []byte(`{"greeting":""}`)
	if err := r.Validate(bad); err == nil || !strings.Contains(err.Error(), "greeting") {
		t.Fatalf("an empty greeting validated: %v", err)
	}
	if _, _, err := startPlugins(context.Background(), doc, "", t.TempDir(), prometheus.NewRegistry(), log); err == nil {
		t.Fatal("an empty plugin directory was accepted")
	}
}
