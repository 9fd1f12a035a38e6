package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
