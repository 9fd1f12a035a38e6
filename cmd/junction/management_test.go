package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServeManagement drives the management API of a real `junction serve`:
// a PATCH changes what the gateway routes to without a restart, the file on
// disk follows, and a restart comes back on the last activated version.
func TestServeManagement(t *testing.T) {
	port, mport, apiPort := freePort(t), freePort(t), freePort(t)
	cfg := writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo}]}
    - {name: big, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    decisions: [{name: all, rules: {operator: AND, conditions: []}, modelRefs: [{model: small}]}]
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
`, port, apiPort, mport))
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	serve := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--config", cfg, "--log-level", "warn", "--extproc=false", "--config-watch", "50ms"}, io.Discard, io.Discard)
		}()
		waitReady(t, api)
		return func() {
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("serve exited %d", code)
			}
		}
	}
	selected := func() string {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port), "application/json",
			strings.NewReader(`{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("x-selected-model")
	}
	stop := serve()
	if got := selected(); got != "small" {
		t.Fatalf("before: %s", got)
	}
	resp, err := http.Get(api + "/api/v1/config")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("PATCH", api+"/api/v1/config", strings.NewReader(`{"recipes":[{"name":"default","decisions":[{"name":"all","rules":{"operator":"AND","conditions":[]},"modelRefs":[{"model":"big"}]}]}]}`))
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
	if got := selected(); got != "big" {
		t.Fatalf("after the PATCH the gateway still selects %s", got)
	}
	if !strings.Contains(mustRead(t, cfg), "model: big") {
		t.Fatal("the configuration file was not rewritten")
	}
	// A hand edit of the file is picked up by the watcher.
	if err := os.WriteFile(cfg, []byte(strings.Replace(mustRead(t, cfg), "- model: big", "- model: small", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for selected() != "small" {
		if time.Now().After(deadline) {
			t.Fatal("the hand edit was not applied")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(mustRead(t, cfg), "- model: small", "- model: big", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for selected() != "big" {
		if time.Now().After(deadline) {
			t.Fatal("the second hand edit was not applied")
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()

	stop = serve()
	defer stop()
	if got := selected(); got != "big" {
		t.Fatalf("after a restart the gateway selects %s", got)
	}
	resp, err = http.Get(api + "/api/v1/config/hash")
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		ConfigVersion int64  `json:"config_version"`
		Status        string `json:"activation_status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if h.ConfigVersion != 4 || h.Status != "active" { // the PATCH and the two hand edits
		t.Fatalf("after restart: %+v", h)
	}
}

func TestServeRefusesRemoteManagementWithoutAuth(t *testing.T) {
	code, _, errOut := runCLI(t, "serve", "--data-dir", t.TempDir(), "--management", "0.0.0.0:0", "--extproc=false")
	if code != 1 || !strings.Contains(errOut, "without authentication") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
