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

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/hostapi/plugintest"
)

func TestPluginSystemLoadsADirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hostile.wasm"), plugintest.Build(t, "../../hostapi/testdata/hostile"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := docWith(t, `[{type: hostile, configuration: {do: ok}}]`)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := newPluginSystem(context.Background(), plugintest.CacheDir(), dir, signal.Models{}, prometheus.NewRegistry(), log)
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
	if _, err := newPluginSystem(context.Background(), "", t.TempDir(), signal.Models{}, prometheus.NewRegistry(), log); err == nil {
		t.Fatal("an empty plugin directory was accepted")
	}
}

// config validate checks a native built-in plugin's configuration with the
// plugin's own code (plugins/builtin's table) and points at the field.
func TestConfigValidatePointsAtABuiltinsField(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(`
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
        plugins: [{type: system_prompt, configuration: {system_prompt: ""}}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	err := configCmd([]string{"validate", path}, &out, &errb)
	if err == nil || !strings.Contains(out.String(), "/recipes/0/decisions/0/plugins/0/configuration/system_prompt") {
		t.Fatalf("err = %v\n%s%s", err, out.String(), errb.String())
	}
}
