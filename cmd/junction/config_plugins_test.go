package main

import (
	"strings"
	"testing"
)

func TestConfigValidateAcceptsModuleFiles(t *testing.T) {
	if code, out, errOut := runCLI(t, "config", "validate", "../../examples/plugins/recipe.yaml"); code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("%d %s %s", code, out, errOut)
	}
}

func TestConfigValidateChecksBuiltinConfigurations(t *testing.T) {
	bad := writeFile(t, `version: v1
providers:
  defaults: {default_model: demo}
  models: [{name: demo, backend_refs: [{provider: demo}]}]
recipes:
  - name: default
    decisions:
      - name: all
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: demo}]
        plugins:
          - {type: tools, configuration: {allow: [a], block: [a]}}
          - {type: rag, configuration: {top_k: 3}}
          - {type: response_cache, configuration: {semantic: {similarity_threshold: 2}}}
          - {type: context_compression, configuration: {max_tokens: 100}}
`)
	code, out, _ := runCLI(t, "config", "validate", bad)
	for _, want := range []string{
		"3 problem(s)",
		"/recipes/0/decisions/0/plugins/0/configuration/allow/0: tools plugin",
		"/recipes/0/decisions/0/plugins/1/configuration/store: rag plugin: configuration.store is required",
		"/recipes/0/decisions/0/plugins/2/configuration/semantic/similarity_threshold",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
}
