//go:build !race

// The plugin host compiles the built-in modules at start, which the race
// detector makes too slow for these real-server tests.

package junction

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/recipes"
)

// cacheConfig serves a response_cache on the catch-all decision general
// (after a system_prompt), beside a decision urgent without one; models are
// the in-process demo backends. BACKEND is the response cache's backend.
const cacheConfig = `version: v1
listeners:
  - {name: public, address: 127.0.0.1, port: 8801, entrypoint: default}
providers:
  defaults: {default_model: small}
  reasoning_families:
    qwen3: {type: chat_template_kwargs, parameter: enable_thinking}
  models:
    - {name: small, reasoning_family: qwen3, backend_refs: [{provider: demo}]}
    - {name: big, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      keywords:
        - {name: urgent, keywords: [urgent]}
      context:
        - {name: long, min_tokens: 4000}
    decisions:
      - name: urgent
        priority: 100
        rules: {operator: AND, conditions: [{type: keyword, name: urgent}]}
        modelRefs: [{model: big}]
      - name: general
        priority: 10
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small, use_reasoning: false}]
        plugins:
          - type: system_prompt
            configuration: {system_prompt: "Be brief."}
          - type: response_cache
            configuration: {mode: exact, ttl_seconds: 600}
global:
  services:
    response_cache: {backend: BACKEND}
`

// cacheServer is a real server on cacheConfig: its gateway and management
// API, with its configuration file and data directory.
type cacheServer struct {
	t        *testing.T
	s        *Server
	errc     chan error
	gw, mgmt string
}

func startCacheServer(t *testing.T, path, dataDir string) *cacheServer {
	t.Helper()
	s, err := New(Options{ConfigPath: path, DataDir: dataDir, ListenerAddrs: map[string]string{"public": "127.0.0.1:0"}, DisableExtproc: true,
		ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", SignalModels: SignalModelsLexical})
	if err != nil {
		t.Fatal(err)
	}
	cs := &cacheServer{t: t, s: s, errc: make(chan error, 1)}
	go func() { cs.errc <- s.Run(context.Background()) }()
	select {
	case <-s.Ready():
	case err := <-cs.errc:
		t.Fatalf("the server did not start: %v", err)
	}
	cs.gw, cs.mgmt = "http://"+s.GatewayAddr(), "http://"+s.ManagementAddr()
	t.Cleanup(func() { cs.stop() })
	return cs
}

func (cs *cacheServer) stop() {
	if cs.s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cs.s.Shutdown(ctx); err != nil {
		cs.t.Errorf("shutdown: %v", err)
	}
	if err := <-cs.errc; err != nil {
		cs.t.Errorf("run: %v", err)
	}
	cs.s = nil
}

// ask sends a chat completion and returns x-cache-status (after the
// response phase had time to store a miss's answer).
func (cs *cacheServer) ask(question string) string {
	cs.t.Helper()
	body := fmt.Sprintf(`{"model":"MoM","messages":[{"role":"user","content":%q}]}`, question)
	resp, err := http.Post(cs.gw+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		cs.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		cs.t.Fatalf("%q: %d %s", question, resp.StatusCode, b)
	}
	status := resp.Header.Get("x-cache-status")
	if status == "miss" {
		cs.waitStored()
	}
	return status
}

// waitStored waits until the cache's entry count moves (a miss's answer
// is stored after it went out).
func (cs *cacheServer) waitStored() {
	cs.t.Helper()
	before := cs.entries()
	for range 200 {
		if cs.entries() != before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (cs *cacheServer) entries() float64 {
	return cs.call("GET", "/api/v1/storage/response-cache/stats", "", nil)["entries"].(float64)
}

// call sends a management request and decodes its JSON answer; want 2xx.
func (cs *cacheServer) call(method, path, contentType string, body io.Reader, header ...string) map[string]any {
	cs.t.Helper()
	req, err := http.NewRequest(method, cs.mgmt+path, body)
	if err != nil {
		cs.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cs.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		cs.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	out := map[string]any{"etag": resp.Header.Get("ETag")}
	if json.Valid(b) && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		_ = json.Unmarshal(b, &out)
	}
	return out
}

// replace edits the served configuration through the management API (PUT
// /api/v1/config with the current ETag): src is what the test last sent
// (the server rewrites the file in canonical form).
func (cs *cacheServer) replace(src *string, old, new string) {
	cs.t.Helper()
	if !strings.Contains(*src, old) {
		cs.t.Fatalf("the configuration has no %q", old)
	}
	*src = strings.Replace(*src, old, new, 1)
	etag := cs.call("GET", "/api/v1/config", "", nil)["etag"].(string)
	cs.call("PUT", "/api/v1/config", "application/yaml", strings.NewReader(*src), "If-Match", etag)
}

func writeCacheConfig(t *testing.T, backend string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(cacheConfig, "BACKEND", backend, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := recipes.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// A configuration change that shapes the answer (the system prompt, the
// model's reasoning switch or backend) never serves an answer made before
// it; one that does not (another decision, a signal) keeps the cache.
func TestResponseCacheFollowsTheConfigurationEpoch(t *testing.T) {
	path := writeCacheConfig(t, "memory")
	cs := startCacheServer(t, path, t.TempDir())
	src := strings.Replace(cacheConfig, "BACKEND", "memory", 1)
	const q = "What is the capital of France?"
	step := func(what, want string) {
		t.Helper()
		if got := cs.ask(q); got != want {
			t.Fatalf("%s: x-cache-status %q, want %q", what, got, want)
		}
	}
	step("first ask", "miss")
	step("asked again", "hit")

	cs.replace(&src, "modelRefs: [{model: big}]", "modelRefs: [{model: big, use_reasoning: true}]")
	step("after a change to another decision", "hit")
	cs.replace(&src, "min_tokens: 4000", "min_tokens: 5000")
	step("after a change to a signal", "hit")

	cs.replace(&src, `system_prompt: "Be brief."`, `system_prompt: "Answer in French."`)
	// The old system prompt's entry is swept away in the background
	// (counted as flushed), not left until its time to live.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st := cs.call("GET", "/api/v1/storage/response-cache/stats", "", nil)
		if st["evictions"].(map[string]any)["flushed"].(float64) >= 1 && st["entries"].(float64) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replaced configuration's entry is still there: %v", st)
		}
	}
	step("after the system prompt changed", "miss")
	step("asked again under the new system prompt", "hit")

	cs.replace(&src, "modelRefs: [{model: small, use_reasoning: false}]", "modelRefs: [{model: small, use_reasoning: true}]")
	step("after the reasoning switch changed", "miss")
	step("asked again with reasoning on", "hit")

	cs.replace(&src, "{name: small, reasoning_family: qwen3, backend_refs: [{provider: demo}]}",
		"{name: small, reasoning_family: qwen3, backend_refs: [{provider: demo, extra_headers: {x-tenant: b}}]}")
	step("after the model's backend changed", "miss")

	// The management API flushes by recipe; the test route sees the scope.
	f := cs.call("POST", "/api/v1/storage/response-cache/flush", "application/json", strings.NewReader(`{"recipe":"default","decision":"general"}`))
	if f["removed"].(float64) < 1 || f["epoch"] != 1.0 {
		t.Fatalf("flush: %v", f)
	}
	step("after a flush of the recipe's decision", "miss")
	test := cs.call("POST", "/api/v1/storage/response-cache/test", "application/json", strings.NewReader(
		fmt.Sprintf(`{"binding":{"recipe":"default","decision":"general"},"request":{"model":"MoM","messages":[{"role":"user","content":%q}]}}`, q)))
	if test["result"] != "hit" || test["kind"] != "exact" {
		t.Fatalf("the test route does not find what the gateway stored: %v", test)
	}
}

// The embedded backend keeps entries (and their epochs) across a restart
// of the real server; the memory backend does not.
func TestResponseCacheSurvivesRestart(t *testing.T) {
	for backend, survives := range map[string]bool{"embedded": true, "memory": false} {
		t.Run(backend, func(t *testing.T) {
			path, dir := writeCacheConfig(t, backend), t.TempDir()
			cs := startCacheServer(t, path, dir)
			if got := cs.ask("How tall is Mount Everest?"); got != "miss" {
				t.Fatalf("first ask: %q", got)
			}
			caps := cs.call("GET", "/api/v1/storage/response-cache/capabilities", "", nil)
			if caps["backend"] != backend || caps["persistent"] != survives {
				t.Fatalf("capabilities: %v", caps)
			}
			cs.stop()

			cs = startCacheServer(t, path, dir)
			want := "miss"
			if survives {
				want = "hit"
			}
			if got := cs.ask("How tall is Mount Everest?"); got != want {
				t.Fatalf("after a restart: x-cache-status %q, want %q", got, want)
			}
			if survives {
				// A changed system prompt is a new epoch after a restart too.
				src := strings.Replace(cacheConfig, "BACKEND", backend, 1)
				cs.replace(&src, `system_prompt: "Be brief."`, `system_prompt: "Be thorough."`)
				if got := cs.ask("How tall is Mount Everest?"); got != "miss" {
					t.Fatalf("after a restart and a new system prompt: %q", got)
				}
			}
		})
	}
}
