package main

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestConfigValidateToolsDBPath: tool_selection's tools_db_path is read and
// checked by `junction config validate`: a good file validates; a missing
// file, a malformed one, an oversized one and a configuration with both
// tools_db and tools_db_path are refused at the plugin's JSON pointer,
// naming the file.
func TestConfigValidateToolsDBPath(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("tools.json", `[{"type": "function", "function": {"name": "get_weather", "description": "weather forecast"}}]`)
	doc := func(conf string) string {
		return writeFile(t, `version: v1
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
          - {type: tool_selection, configuration: `+conf+`}
`)
	}
	if code, out, errOut := runCLI(t, "config", "validate", doc(fmt.Sprintf("{tools_db_path: %q}", good))); code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("good file: %d %s %s", code, out, errOut)
	}
	const ptr = "/recipes/0/decisions/0/plugins/0/configuration/tools_db_path: "
	for conf, want := range map[string]string{
		fmt.Sprintf("{tools_db_path: %q}", filepath.Join(dir, "none.json")):                                                "tools database " + filepath.Join(dir, "none.json") + ": cannot be read",
		fmt.Sprintf("{tools_db_path: %q}", file("obj.json", `{"tools": []}`)):                                              "must be a JSON array of tool definitions",
		fmt.Sprintf("{tools_db_path: %q}", file("noname.json", `[{"type": "function"}]`)):                                  "[0] must be a tool object with function.name",
		fmt.Sprintf("{tools_db_path: %q}", file("dup.json", `[{"function": {"name": "a"}}, {"function": {"name": "a"}}]`)): `[1] repeats the function name "a"`,
		fmt.Sprintf("{tools_db_path: %q}", file("big.json", "["+strings.Repeat(" ", 1<<20)+"]")):                           "is over 1048576 bytes",
		fmt.Sprintf("{tools_db_path: %q, tools_db: [{type: function, function: {name: x}}]}", good):                        "set tools_db (the tools inline) or tools_db_path (a file of them), not both",
	} {
		code, out, _ := runCLI(t, "config", "validate", doc(conf))
		if code != 1 || !strings.Contains(out, ptr) || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, output lacks %q:\n%s", conf, code, want, out)
		}
	}
}
