//go:build !race

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/state/redisstate"
)

// redisServer is a redis-server of the test's own on a free loopback port
// (no persistence), which the test can kill and start again.
type redisServer struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

// startRedis starts a redis-server, skipping the test when the binary is
// absent (failing under CI, which installs it).
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and redis-server is not installed: %v", err)
		}
		t.Skipf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
	r := &redisServer{t: t, port: freePort(t), dir: t.TempDir()}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	c, err := redisstate.New(redisstate.Config{Address: r.addr()}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()) != nil {
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s did not answer in 10 s", r.addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends it with SIGKILL: what it held is gone.
func (r *redisServer) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

// stateReplica is a serve process of the shared-state test.
type stateReplica struct {
	*storedServer
	metrics string
}

// post sends a data-plane request and returns its status, headers and body.
func (s *stateReplica) post(path, body string, header ...string) (int, http.Header, []byte) {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.gw+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func (s *stateReplica) chat(text string, header ...string) (int, http.Header) {
	s.t.Helper()
	content, _ := json.Marshal(text)
	code, h, _ := s.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":`+string(content)+`}]}`, header...)
	return code, h
}

// TestServeThreeReplicasOnRedis: three serve processes (each with its own
// data directory) share one Redis through global.state. An answer cached
// by one is a hit on another; a limit of 12 requests admits exactly 12 of
// 36 sent at once across the three; a Responses conversation whose three
// turns land on three replicas continues on each and lists every turn's
// items; a memory kept on one is listed on another; a replica killed
// loses none of the turns it acknowledged;
// with Redis killed no request gets a 500 (a new question misses,
// the limit fails open, the response store answers 503) and the errors
// metric counts; once Redis is back the replicas share again.
func TestServeThreeReplicasOnRedis(t *testing.T) {
	rs := startRedis(t)
	replica := func() *stateReplica {
		gw, mg, met := freePort(t), freePort(t), freePort(t)
		cfg := writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      keywords: [{name: cache, keywords: [cacheme]}]
    decisions:
      - name: cached
        priority: 20
        rules: {operator: OR, conditions: [{type: keyword, name: cache}]}
        modelRefs: [{model: small}]
        plugins:
          - {type: response_cache, configuration: {mode: exact, ttl_seconds: 600}}
      - name: all
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]
        plugins:
          - {type: memory, configuration: {min_score: -1}}
global:
  rate_limits:
    - {name: per-team, key: "header:X-Team", requests: 12, window: 1h}
  state: {backend: redis, redis: {address: "%s", key_prefix: "e2e:"}}
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
    response_api: {enabled: true}
`, gw, rs.addr(), mg, met))
		return &stateReplica{storedServer: startServe(t, cfg, filepath.Join(t.TempDir(), "data"), gw, mg), metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", met)}
	}
	r := []*stateReplica{replica(), replica(), replica()}

	// A miss on replica 0 is a hit on replica 1 (the store follows the
	// answer: allow it a moment).
	if code, h := r[0].chat("cacheme: what is shared?"); code != 200 || h.Get("x-cache-status") != "miss" {
		t.Fatalf("first request on replica 0: %d, x-cache-status %q", code, h.Get("x-cache-status"))
	}
	awaitHit := func(on *stateReplica, text string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			code, h := on.chat(text)
			if code == 200 && h.Get("x-cache-status") == "hit" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no cache hit in 5 s on another replica (last %d, x-cache-status %q): %s", code, h.Get("x-cache-status"), on.stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	awaitHit(r[1], "cacheme: what is shared?")
	awaitHit(r[2], "cacheme: what is shared?")

	// 36 requests at once, 12 per replica, against one limit of 12.
	codes := make([]int, 36)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			codes[i], _ = r[i%3].chat("count me", "X-Team", "blue")
		}()
	}
	close(start)
	wg.Wait()
	admitted, refused := 0, 0
	for _, c := range codes {
		switch c {
		case 200:
			admitted++
		case 429:
			refused++
		}
	}
	if admitted != 12 || refused != 24 {
		t.Fatalf("three replicas admitted %d and refused %d of 36 against a shared limit of 12: %v", admitted, refused, codes)
	}

	// A conversation of three turns, one per replica.
	prev := ""
	var ids []string
	for i, text := range []string{"first turn", "second turn", "third turn"} {
		body := map[string]any{"model": "MoM", "input": text}
		if prev != "" {
			body["previous_response_id"] = prev
		}
		raw, _ := json.Marshal(body)
		code, _, b := r[i].post("/v1/responses", string(raw))
		var resp struct{ ID string }
		if code != 200 || json.Unmarshal(b, &resp) != nil || resp.ID == "" {
			t.Fatalf("turn %d on replica %d: %d %s", i+1, i, code, b)
		}
		prev = resp.ID
		ids = append(ids, resp.ID)
	}
	var items struct {
		Data []json.RawMessage `json:"data"`
	}
	resp, err := http.Get(r[0].gw + "/v1/responses/" + ids[2] + "/input_items?order=asc")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || json.Unmarshal(b, &items) != nil {
		t.Fatalf("input items of the third turn on replica 0: %d %s", resp.StatusCode, b)
	}
	for _, want := range []string{"first turn", "second turn", "third turn"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("input items of a conversation stored on three replicas lack %q: %s", want, b)
		}
	}

	// What a user told replica 0 is a memory on replica 1.
	if code, _, b := r[0].post("/v1/chat/completions", `{"model":"MoM","user":"ada","messages":[{"role":"user","content":"My name is Ada and I live in Lisbon."}]}`); code != 200 {
		t.Fatalf("telling replica 0: %d %s", code, b)
	}
	if m := r[1].memories("ada"); len(m) == 0 || !strings.Contains(fmt.Sprint(m), "Lisbon") {
		t.Fatalf("replica 1's memories of what replica 0 was told: %+v", m)
	}

	// Replica 2, which stored the third turn, killed (kill -9): the turn it
	// acknowledged is continued on replica 1, and its cached answer is
	// still a hit on the others.
	r[2].kill()
	if code, _, b := r[1].post("/v1/responses", `{"model":"MoM","input":"fourth turn","previous_response_id":"`+ids[2]+`"}`); code != 200 {
		t.Fatalf("continuing the turn of a killed replica: %d %s", code, b)
	}
	if code, h := r[0].chat("cacheme: what is shared?"); code != 200 || h.Get("x-cache-status") != "hit" {
		t.Fatalf("after a replica was killed: %d, x-cache-status %q", code, h.Get("x-cache-status"))
	}
	r = r[:2]

	// Redis gone: no request fails with a 500.
	rs.kill()
	for i, s := range r {
		text := fmt.Sprintf("cacheme: asked while Redis is down, on %d", i)
		if code, h := s.chat(text); code != 200 || h.Get("x-cache-status") != "miss" {
			t.Fatalf("replica %d with Redis down: %d, x-cache-status %q, want a miss", i, code, h.Get("x-cache-status"))
		}
		// The store reached this replica's own index only: the same
		// question again may hit there.
		if code, _ := s.chat(text); code != 200 {
			t.Fatalf("replica %d with Redis down, asked again: %d", i, code)
		}
		if code, _ := s.chat("count me", "X-Team", "blue"); code != 200 {
			t.Fatalf("replica %d with Redis down: a limited request got %d, want 200 (fail open)", i, code)
		}
		if code, _, b := s.post("/v1/responses", `{"model":"MoM","input":"more","previous_response_id":"`+ids[2]+`"}`); code == 500 {
			t.Fatalf("replica %d with Redis down: a Responses turn got 500: %s", i, b)
		}
	}
	mresp, err := http.Get(r[0].metrics)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, feature := range []string{"response_cache", "rate_limit", "response_store"} {
		if !strings.Contains(string(mb), `junction_state_errors_total{feature="`+feature+`"`) {
			t.Errorf("metrics lack junction_state_errors_total for %s with Redis down", feature)
		}
	}

	// Redis back (empty): the replicas share again.
	rs.start()
	time.Sleep(1100 * time.Millisecond) // a replica leaves Redis alone for a second after a failure
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := r[0].chat("cacheme: after the restart"); code != 200 {
			t.Fatalf("after Redis came back: %d", code)
		}
		code, h := r[1].chat("cacheme: after the restart")
		if code == 200 && h.Get("x-cache-status") == "hit" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no shared cache hit 10 s after Redis came back: %s", r[1].stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, s := range r {
		s.stop()
	}
}
