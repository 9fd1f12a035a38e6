//go:build !race

// These tests compile wasm modules with wazero (seconds natively, about
// thirty seconds each under the race detector), so race builds leave them
// out; make test runs them without -race.

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/plugintest"
)

// TestPluginCommands walks an author's path: scaffold a project, build it,
// run its fixtures, inspect the module, preview a request, and see a broken
// fixture fail.
func TestPluginCommands(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "plugin", "new", "greeter", "--dir", dir, "--sdk", repo)
	if code != 0 {
		t.Fatalf("new: %d %s %s", code, out, errOut)
	}
	proj := filepath.Join(dir, "greeter")
	for _, f := range []string{"go.mod", "main.go", "schema.json", "README.md", "testdata/greets.json"} {
		if _, err := os.Stat(filepath.Join(proj, f)); err != nil {
			t.Errorf("scaffold lacks %s", f)
		}
	}
	if code, _, errOut = runCLI(t, "plugin", "new", "greeter", "--dir", dir); code == 0 || !strings.Contains(errOut, "already exists") {
		t.Errorf("new over an existing project: %d %s", code, errOut)
	}
	if code, _, errOut = runCLI(t, "plugin", "new", "Bad-Name", "--dir", dir); code == 0 || !strings.Contains(errOut, "lower-case") {
		t.Errorf("bad name: %d %s", code, errOut)
	}

	// Outside a checkout the project gets the SDK the binary carries and
	// builds with no module proxy at all.
	t.Setenv("GOPROXY", "off")
	code, out, errOut = runCLI(t, "plugin", "new", "offline", "--dir", dir, "--sdk", "embedded")
	if code != 0 || strings.Contains(errOut, "tidy failed") {
		t.Fatalf("new with the embedded SDK: %d %s %s", code, out, errOut)
	}
	if code, out, errOut = runCLI(t, "plugin", "build", filepath.Join(dir, "offline"), "-o", filepath.Join(dir, "offline.wasm")); code != 0 {
		t.Fatalf("build against the embedded SDK: %d %s %s", code, out, errOut)
	}

	wasmFile := filepath.Join(dir, "greeter.wasm")
	code, out, errOut = runCLI(t, "plugin", "build", proj, "-o", wasmFile)
	if code != 0 || !strings.Contains(out, "sha256 ") {
		t.Fatalf("build: %d %s %s", code, out, errOut)
	}

	code, out, errOut = runCLI(t, "plugin", "test", proj)
	if code != 0 || !strings.Contains(out, "ok    greets in preview") || !strings.Contains(out, "PASS  1 fixtures") {
		t.Fatalf("test: %d %s %s", code, out, errOut)
	}

	code, out, errOut = runCLI(t, "plugin", "inspect", wasmFile)
	if code != 0 {
		t.Fatalf("inspect: %d %s", code, errOut)
	}
	var info struct {
		SHA256     string `json:"sha256"`
		Descriptor struct {
			Type       string `json:"type"`
			Operations []struct{ Name, Kind string }
		} `json:"descriptor"`
		Imports, Exports []string
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("inspect output: %v\n%s", err, out)
	}
	if info.Descriptor.Type != "greeter" || len(info.SHA256) != 64 || !contains(info.Imports, "junction.config") ||
		!contains(info.Exports, "junction_on_request") || !contains(info.Exports, "memory (memory)") {
		t.Errorf("inspect: %+v", info)
	}

	code, out, errOut = runCLI(t, "plugin", "preview", "--module", wasmFile, "--config", `{"greeting":"Hi"}`,
		"--request", `{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	if code != 0 {
		t.Fatalf("preview: %d %s", code, errOut)
	}
	var run plugintest.Result
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatal(err)
	}
	if run.Mode != "preview" || run.Persisted || run.BackendCalls != 0 || len(run.Mutations) != 2 ||
		run.Mutations[0].Op != "message_insert" || !strings.Contains(plugintest.CanonicalJSON(run.Request), `"content":"Hi"`) ||
		run.Headers.Get("X-Greeter") != "preview" {
		t.Errorf("preview: %s", out)
	}
	// A configuration the schema refuses is an error naming it.
	if code, _, errOut = runCLI(t, "plugin", "preview", "--module", wasmFile, "--config", `{}`,
		"--request", `{"model":"m","messages":[{"role":"user","content":"x"}]}`); code != 1 || !strings.Contains(errOut, "greeting") {
		t.Errorf("bad configuration: %d %s", code, errOut)
	}

	// A fixture whose expectation is wrong fails the run, saying why.
	broken := `{"name":"expects too much","config":{"greeting":"Hi"},"request":{"model":"m","messages":[{"role":"user","content":"x"}]},
	  "expect":{"status":"skipped","request_contains":["nope"]}}`
	if err := os.WriteFile(filepath.Join(proj, "testdata", "broken.json"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "plugin", "test", wasmFile, "--fixtures", filepath.Join(proj, "testdata"))
	if code != 1 || !strings.Contains(out, "FAIL  expects too much") || !strings.Contains(out, "status applied, want skipped") ||
		!strings.Contains(out, `lacks "nope"`) || !strings.Contains(errOut, "1 of 2 fixtures failed") {
		t.Errorf("broken fixture: %d\n%s\n%s", code, out, errOut)
	}
}

func TestPluginPreviewBuiltin(t *testing.T) {
	code, out, errOut := runCLI(t, "plugin", "preview", "--type", "tools", "--config", `{"block":["rm"],"semantic":{"top_k":1}}`,
		"--request", `{"model":"m","messages":[{"role":"user","content":"list files"}],"tools":[{"type":"function","function":{"name":"rm"}},{"type":"function","function":{"name":"ls"}}]}`)
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	var run plugintest.Result
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatal(err)
	}
	if run.BackendCalls != 0 || !strings.Contains(run.Detail, "semantic selection needs mode probe") ||
		strings.Contains(plugintest.CanonicalJSON(run.Request), `"rm"`) || !strings.Contains(plugintest.CanonicalJSON(run.Request), `"ls"`) {
		t.Errorf("tools preview: %s", out)
	}
	if code, _, errOut = runCLI(t, "plugin", "preview", "--type", "tools", "--mode", "live", "--config", `{}`, "--request", `{}`); code != 1 || !strings.Contains(errOut, "never live") {
		t.Errorf("live preview: %d %s", code, errOut)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestPluginUsage(t *testing.T) {
	if code, _, errOut := runCLI(t, "plugin"); code != 2 || !strings.Contains(errOut, "junction plugin new") {
		t.Errorf("%d %s", code, errOut)
	}
	if code, _, _ := runCLI(t, "plugin", "frobnicate"); code != 2 {
		t.Errorf("unknown subcommand: %d", code)
	}
	if code, _, _ := runCLI(t, "plugin", "inspect"); code != 2 {
		t.Errorf("inspect without a file: %d", code)
	}
	if code, _, errOut := runCLI(t, "plugin", "build", t.TempDir()); code != 1 || !strings.Contains(errOut, "no go.mod") {
		t.Errorf("build outside a project: %d %s", code, errOut)
	}
}
