package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every hand edit serve's --config-watch picks up is logged once with what changed and the result: applied
// (old and new hash and config_version, the changed sections), unchanged (a comment), rejected (the stage and
// reasons; the running version keeps serving). The router's own rewrite after an API change is not an edit,
// and neither secrets from the document nor request text reach the log.
func TestConfigWatchLogsEachHandEdit(t *testing.T) {
	const secret = "sk-header-secret-4f1d"
	const prompt = "a private sentence the log must not hold"
	port, apiPort, mport := freePort(t), freePort(t), freePort(t)
	cfg := writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo, extra_headers: {x-api-key: %s}}]}
    - {name: big, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    decisions: [{name: all, rules: {operator: AND, conditions: []}, modelRefs: [{model: small}]}]
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
`, port, secret, apiPort, mport))
	api := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	stderr := &syncWriter{}
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--config", cfg, "--extproc=false", "--signal-models", "lexical", "--config-watch", "50ms"}, io.Discard, stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, stderr.String())
		}
	}()
	waitReady(t, api)
	type hashes struct {
		Hash    string `json:"source_config_hash"`
		Version int64  `json:"config_version"`
	}
	current := func() hashes {
		t.Helper()
		var h hashes
		resp, err := http.Get(api + "/api/v1/config/hash")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	edits := regexp.MustCompile(`(?m)^.*msg="configuration file edit.*$`)
	// awaitEdit waits for the n-th edit record and returns it.
	awaitEdit := func(n int) string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if got := edits.FindAllString(stderr.String(), -1); len(got) >= n {
				if len(got) > n {
					t.Fatalf("more edit records than edits:\n%s", strings.Join(got, "\n"))
				}
				return got[n-1]
			}
			if time.Now().After(deadline) {
				t.Fatalf("no record of edit %d in the log:\n%s", n, stderr.String())
			}
		}
	}
	edit := func(from, to string) {
		t.Helper()
		raw := mustRead(t, cfg)
		if !strings.Contains(raw, from) {
			t.Fatalf("%q is not in the file:\n%s", from, raw)
		}
		// Written whole (a temporary file renamed over it, as editors save), so the watcher never reads half an
		// edit, which it would rightly log as a rejected document.
		tmp := cfg + ".tmp"
		if err := os.WriteFile(tmp, []byte(strings.Replace(raw, from, to, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfg); err != nil {
			t.Fatal(err)
		}
	}
	want := func(record string, fields ...string) {
		t.Helper()
		for _, f := range fields {
			if !strings.Contains(record, f) {
				t.Errorf("the record lacks %s: %s", f, record)
			}
		}
	}
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port), "application/json",
		strings.NewReader(`{"model":"MoM","messages":[{"role":"user","content":"`+prompt+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	h0 := current()
	edit("modelRefs: [{model: small}]", "modelRefs: [{model: big}]")
	rec := awaitEdit(1)
	h1 := current()
	if h1.Hash == h0.Hash || h1.Version != h0.Version+1 {
		t.Fatalf("the edit was not applied: %+v then %+v", h0, h1)
	}
	want(rec, "level=INFO", "result=applied", "old_hash="+h0.Hash, "new_hash="+h1.Hash,
		fmt.Sprintf("old_config_version=%d", h0.Version), fmt.Sprintf("config_version=%d", h1.Version), "changed=recipes/default")

	edit("version: v1", "# a comment only\nversion: v1")
	want(awaitEdit(2), "result=unchanged", "hash="+h1.Hash, fmt.Sprintf("config_version=%d", h1.Version))

	edit("modelRefs: [{model: big}]", "modelRefs: [{model: nowhere}]")
	rec = awaitEdit(3)
	want(rec, "level=WARN", "result=rejected", "old_hash="+h1.Hash, "config_version="+fmt.Sprint(h1.Version), "stage=", "nowhere")
	if h := current(); h.Version != h1.Version {
		t.Errorf("a rejected edit changed config_version: %+v", h)
	}

	// An API change rewrites the file: the watcher sees new bytes, which are no hand edit.
	edit("modelRefs: [{model: nowhere}]", "modelRefs: [{model: small}]")
	want(awaitEdit(4), "result=applied", "old_hash="+h1.Hash)
	resp, err = http.Get(api + "/api/v1/config")
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
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(mustRead(t, cfg), "model: big") {
		t.Fatalf("PATCH: %d; the file was not rewritten", resp.StatusCode)
	}
	time.Sleep(500 * time.Millisecond) // ten watch intervals
	if got := edits.FindAllString(stderr.String(), -1); len(got) != 4 {
		t.Errorf("the router's own rewrite was logged as a hand edit:\n%s", strings.Join(got, "\n"))
	}
	t.Logf("the edit records:\n%s", strings.Join(edits.FindAllString(stderr.String(), -1), "\n"))
	if log := stderr.String(); strings.Contains(log, secret) || strings.Contains(log, prompt) {
		t.Errorf("a secret or request text reached the log:\n%s", log)
	}
}
