//go:build !race

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/hostapi/plugintest"
)

// TestServeBuiltinWasmPlugins serves a recipe whose decisions use all eight
// built-in plugins, run as WebAssembly modules in the plugin host, and checks
// what a client sees of each. Left out of race builds: wazero compiles a
// module in about thirty seconds under the race detector (make test runs it
// without -race).
func TestServeBuiltinWasmPlugins(t *testing.T) {
	port := freePort(t)
	cfg := writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  reasoning_families:
    qwen3: {type: chat_template_kwargs, parameter: enable_thinking}
  models:
    - {name: small, reasoning_family: qwen3, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      keywords:
        - {name: block, keywords: [blockme]}
        - {name: cache, keywords: [cacheme]}
        - {name: shape, keywords: [shapeme]}
    decisions:
      - name: blocked
        priority: 30
        rules: {operator: OR, conditions: [{type: keyword, name: block}]}
        plugins:
          - {type: fast_response, configuration: {message: "Not today."}}
      - name: cached
        priority: 20
        rules: {operator: OR, conditions: [{type: keyword, name: cache}]}
        modelRefs: [{model: small, use_reasoning: false}]
        plugins:
          - {type: response_cache, configuration: {mode: exact, ttl_seconds: 60}}
      - name: shaped
        priority: 10
        rules: {operator: OR, conditions: [{type: keyword, name: shape}]}
        modelRefs: [{model: small}]
        plugins:
          - {type: system_prompt, configuration: {system_prompt: "Be brief."}}
          - {type: header_mutation, configuration: {add: [{name: x-team, value: a}]}}
          - {type: request_params, configuration: {max_tokens_limit: 100, strip_unknown: true}}
          - {type: tools, configuration: {block: [rm_rf]}}
          - {type: context_compression, configuration: {max_tokens: 100000}}
          - {type: rag, configuration: {store: nowhere, on_failure: warn}}
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability:
      metrics: {address: 127.0.0.1, port: %d}
`, port, freePort(t), freePort(t)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--config", cfg, "--log-level", "warn", "--extproc=false",
			"--plugin-cache-dir", plugintest.CacheDir()}, io.Discard, &stderr)
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d/v1", port)
	deadline := time.Now().Add(3 * time.Minute) // the host compiles eight modules first
	for {
		resp, err := http.Get(base + "/models")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up: %s", stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	post := func(body string) (http.Header, string) {
		t.Helper()
		resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
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

	_, body := post(`{"model":"MoM","messages":[{"role":"user","content":"blockme please"}]}`)
	if !strings.Contains(body, "Not today.") {
		t.Errorf("fast_response: %s", body)
	}
	_, body = post(`{"model":"MoM","stream":true,"messages":[{"role":"user","content":"blockme please"}]}`)
	if !strings.Contains(body, `"content":"Not today."`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("streamed fast_response: %s", body)
	}

	h1, first := post(`{"model":"MoM","messages":[{"role":"user","content":"cacheme now"}]}`)
	// The response phase stores the answer after it was sent: allow it a moment.
	var h2 http.Header
	var second string
	for i := 0; i < 50; i++ {
		if h2, second = post(`{"model":"MoM","messages":[{"role":"user","content":"cacheme now"}]}`); h2.Get("x-cache-status") == "hit" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if h1.Get("x-cache-status") != "miss" || h2.Get("x-cache-status") != "hit" {
		t.Errorf("x-cache-status %q then %q (plugins %s, %s)", h1.Get("x-cache-status"), h2.Get("x-cache-status"), h1.Get("x-junction-plugins"), h2.Get("x-junction-plugins"))
	}
	if h1.Get("x-cache-similarity") != "" || h2.Get("x-cache-similarity") != "1.0000" || h1.Get("x-cache-hit") != "" || h2.Get("x-cache-hit") != "exact" {
		t.Errorf("x-cache-similarity %q then %q, x-cache-hit %q then %q; an exact hit has similarity 1.0000", h1.Get("x-cache-similarity"), h2.Get("x-cache-similarity"), h1.Get("x-cache-hit"), h2.Get("x-cache-hit"))
	}
	if !strings.Contains(second, "[demo:small]") || !strings.Contains(first, "cacheme now") {
		t.Errorf("cached answer %s, first %s", second, first)
	}

	h, _ := post(`{"model":"MoM","max_tokens":5000,"x_vendor":1,"messages":[{"role":"user","content":"shapeme"}],
	  "tools":[{"type":"function","function":{"name":"rm_rf"}},{"type":"function","function":{"name":"ls"}}]}`)
	plugins := h.Get("x-junction-plugins")
	t.Logf("x-junction-plugins: %s", plugins)
	for _, want := range []string{"system_prompt", "header_mutation", "request_params", "tools", "context_compression", "rag"} {
		if !strings.Contains(plugins, want) {
			t.Errorf("x-junction-plugins %q lacks %s", plugins, want)
		}
	}
	if h.Get("x-tools-selected") != "1" {
		t.Errorf("x-tools-selected %q, want 1", h.Get("x-tools-selected"))
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeLoadsModulesOnActivation: serve starts with no plugin, and a
// change through the management API adds a decision plugin of a type no
// module was loaded for; the activation loads it, and the next requests run
// it (response_cache has no native stand-in, so a cache hit shows the wasm
// module runs).
func TestServeLoadsModulesOnActivation(t *testing.T) {
	port, mport, apiPort := freePort(t), freePort(t), freePort(t)
	cfg := writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  models: [{name: small, backend_refs: [{provider: demo}]}]
recipes:
  - name: default
    decisions: [{name: all, rules: {operator: AND, conditions: []}, modelRefs: [{model: small}]}]
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
`, port, apiPort, mport))
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--config", cfg, "--log-level", "warn", "--extproc=false",
			"--plugin-cache-dir", plugintest.CacheDir()}, io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d", code)
		}
	}()
	waitFor(t, api+"/health")
	resp, err := http.Get(api + "/api/v1/config")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("PATCH", api+"/api/v1/config", strings.NewReader(`{"recipes":[{"name":"default","decisions":[{"name":"all",
	  "rules":{"operator":"AND","conditions":[]},"modelRefs":[{"model":"small"}],
	  "plugins":[{"type":"response_cache","configuration":{"mode":"exact","ttl_seconds":60}}]}]}]}`))
	req.Header.Set("If-Match", resp.Header.Get("ETag"))
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PATCH: %d %s", resp.StatusCode, b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port), "application/json",
			strings.NewReader(`{"model":"MoM","messages":[{"role":"user","content":"cache this"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("x-cache-status") == "hit" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the response_cache plugin added by the change never answered from the cache (plugins %q)", resp.Header.Get("x-junction-plugins"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A candidate configuration of a type the serving configuration does not
	// use previews through its module too (tool, RAG and guard previews need
	// an active binding, so system_prompt here).
	resp, err = http.Post(api+"/api/v1/plugins/system_prompt/preview", "application/json", strings.NewReader(`{"mode":"preview",
	  "configuration":{"system_prompt":"Be terse today.","mode":"insert"},
	  "request":{"model":"MoM","messages":[{"role":"user","content":"hi"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`Be terse today.`)) {
		t.Fatalf("system_prompt preview: %d %s", resp.StatusCode, b)
	}
}
