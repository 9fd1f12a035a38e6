package pluginsys

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/recipes"
)

func docWith(t *testing.T, plugins string) *recipes.Document {
	t.Helper()
	doc, err := recipes.Parse([]byte(`
version: v1
providers:
  defaults: {default_model: demo}
  models: [{name: demo, backend_refs: [{provider: demo}]}]
recipes:
  - name: default
    decisions:
      - name: all
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: demo}]
        plugins: ` + plugins + `
`))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestPluginRegistry(t *testing.T) {
	// Only referenced built-ins are loaded, trusted.
	reg, err := registry(docWith(t, `[{type: system_prompt, configuration: {system_prompt: x}}, {type: tools}]`), &hostapi.Registry{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reg.Types(), ","); got != "system_prompt,tools" {
		t.Fatalf("types %s", got)
	}
	if e, _ := reg.Module("tools"); !e.Trusted || len(e.Wasm) == 0 {
		t.Error("a built-in is not registered trusted")
	}
	if reg, _ := registry(docWith(t, `[]`), &hostapi.Registry{}); len(reg.Types()) != 0 {
		t.Errorf("a configuration without plugins loads %v", reg.Types())
	}

	// A module file is checked against its sha256 and registered untrusted.
	dir := t.TempDir()
	file := filepath.Join(dir, "m.wasm")
	body := []byte("\x00asm\x01\x00\x00\x00")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	good := hex.EncodeToString(sum[:])
	reg, err = registry(docWith(t, `[{type: mine, module: {path: `+file+`, sha256: `+good+`}}]`), &hostapi.Registry{})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := reg.Module("mine"); !ok || e.Trusted {
		t.Errorf("module file: %+v %v", e, ok)
	}
	bad := strings.Repeat("ab", 32)
	_, err = registry(docWith(t, `[{type: mine, module: {path: `+file+`, sha256: `+bad+`}}]`), &hostapi.Registry{})
	if err == nil || !strings.Contains(err.Error(), "/recipes/0/decisions/0/plugins/0/module") || !strings.Contains(err.Error(), good) {
		t.Errorf("a wrong sha256: %v", err)
	}
	_, err = registry(docWith(t, `[{type: rag, module: {path: `+file+`, sha256: `+good+`}}]`), &hostapi.Registry{})
	if err == nil || !strings.Contains(err.Error(), "already provides plugin type rag") {
		t.Errorf("a module file named like a built-in: %v", err)
	}
	_, err = registry(docWith(t, `[{type: mine, module: {path: `+filepath.Join(dir, "missing.wasm")+`, sha256: `+good+`}}]`), &hostapi.Registry{})
	if err == nil || !strings.Contains(err.Error(), "missing.wasm") {
		t.Errorf("a missing file: %v", err)
	}

	// A --plugin-dir module may not take a built-in's name.
	var base hostapi.Registry
	if err := base.Register("system_prompt", body); err != nil {
		t.Fatal(err)
	}
	if _, err := registry(docWith(t, `[{type: system_prompt, configuration: {system_prompt: x}}]`), &base); err == nil || !strings.Contains(err.Error(), "built-in plugin type") {
		t.Errorf("a --plugin-dir module named like a built-in: %v", err)
	}
}
