//go:build !race

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/recipes"
)

const exampleRecipe = "../../examples/plugins/recipe.yaml"

// TestExamplePlugins runs the third-party example plugins' fixtures, checks
// that building them gives the bytes examples/plugins/recipe.yaml pins, and
// serves that recipe: the modules load from their files and act on traffic.
func TestExamplePlugins(t *testing.T) {
	doc, _, err := recipes.LoadFile(exampleRecipe)
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{} // module path → sha256
	for _, d := range doc.Recipes[0].Decisions {
		for _, p := range d.Plugins {
			if p.Module != nil {
				pins[p.Module.Path] = p.Module.SHA256
			}
		}
	}
	text, err := os.ReadFile(exampleRecipe)
	if err != nil {
		t.Fatal(err)
	}
	recipe := string(text)
	dir := t.TempDir()
	for _, name := range []string{"piiredact", "langprompt"} {
		src := filepath.Join("../../examples/plugins", name)
		if code, out, errOut := runCLI(t, "plugin", "test", src); code != 0 {
			t.Fatalf("plugin test %s: %d\n%s%s", name, code, out, errOut)
		}
		wasm, err := buildPluginTo(src, filepath.Join(dir, name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(wasm)
		path := "examples/plugins/" + name + "/" + name + ".wasm"
		if got := hex.EncodeToString(sum[:]); got != pins[path] {
			t.Fatalf("%s builds to sha256 %s, recipe.yaml pins %s: update the recipe (make plugins prints the digest)", name, got, pins[path])
		}
		recipe = strings.ReplaceAll(recipe, path, filepath.Join(dir, name+".wasm"))
	}

	port := freePort(t)
	recipe = strings.Replace(recipe, "port: 8801", fmt.Sprintf("port: %d", port), 1)
	recipe = strings.Replace(recipe, "port: 9190", fmt.Sprintf("port: %d", freePort(t)), 1)
	mport := freePort(t)
	recipe = strings.Replace(recipe, "  services:\n", fmt.Sprintf("  services:\n    management_api: {address: 127.0.0.1, port: %d}\n", mport), 1)
	cfg := writeFile(t, recipe)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--config", cfg, "--log-level", "warn", "--extproc=false",
			"--plugin-cache-dir", plugintest.CacheDir()}, io.Discard, &stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d/v1", port)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(base + "/models")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up: %s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	post := func(content string) (http.Header, string) {
		t.Helper()
		resp, err := http.Post(base+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"MoM","messages":[{"role":"user","content":`+fmt.Sprintf("%q", content)+`}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		return resp.Header, string(b)
	}
	h, body := post("Please write to ann@example.org about my order")
	if !strings.Contains(h.Get("x-junction-plugins"), "pii_redact=applied") || !strings.Contains(body, "write to [EMAIL] about") || strings.Contains(body, "ann@example.org") {
		t.Errorf("pii_redact: plugins %q, answer %s", h.Get("x-junction-plugins"), body)
	}
	// A management preview of the binding gives the module the router's
	// spans too, so it shows exactly what live traffic would get.
	presp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/api/v1/plugins/pii_redact/preview", mport), "application/json",
		strings.NewReader(`{"binding":{"recipe":"default","decision":"private_data"},"request":{"model":"MoM","messages":[{"role":"user","content":"Mail ann@example.org or bob@example.com"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	var preview struct {
		Mode     string          `json:"mode"`
		Request  json.RawMessage `json:"request"`
		Signals  []string        `json:"signals"`
		PIISpans int             `json:"pii_spans"`
		Reports  []struct{ Status string }
	}
	if err := json.Unmarshal(pb, &preview); err != nil || presp.StatusCode != 200 {
		t.Fatalf("preview: %d %s", presp.StatusCode, pb)
	}
	if preview.Mode != "preview" || preview.PIISpans != 2 || !slices.Contains(preview.Signals, "pii:contact_data") ||
		len(preview.Reports) != 1 || preview.Reports[0].Status != "applied" ||
		strings.Contains(string(preview.Request), "ann@example.org") || strings.Contains(string(preview.Request), "bob@example.com") {
		t.Errorf("preview: %s", pb)
	}
	h, _ = post("Wie spät ist es heute in Berlin? Ich möchte es gerne wissen.")
	if h.Get("x-junction-decision") != "general" || !strings.Contains(h.Get("x-junction-plugins"), "language_prompt=applied") {
		t.Errorf("language_prompt: decision %q, plugins %q", h.Get("x-junction-decision"), h.Get("x-junction-plugins"))
	}
}

func buildPluginTo(dir, out string) ([]byte, error) {
	_, wasm, err := buildPlugin(dir, out)
	return wasm, err
}
