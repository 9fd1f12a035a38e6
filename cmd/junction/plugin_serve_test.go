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
    observability:
      metrics: {address: 127.0.0.1, port: %d}
`, port, freePort(t)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--log-level", "warn", "--extproc=false",
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
