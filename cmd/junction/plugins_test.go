package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/plugintest"
)

func TestConfigValidateChecksModuleSchemas(t *testing.T) {
	hostapi.RegisterBuiltin("hello", plugintest.Build(t, "../../hostapi/testdata/hello"))
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
        plugins: [{type: hello, configuration: {greeting: ""}}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	err := configCmd([]string{"validate", path}, &out, &errb)
	if err == nil || !strings.Contains(out.String(), "/recipes/0/decisions/0/plugins/0/configuration/greeting") {
		t.Fatalf("err = %v\n%s%s", err, out.String(), errb.String())
	}
}
