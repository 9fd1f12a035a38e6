//go:build !race

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/internal/storage/postgres/pgtest"
)

// TestServeThreeReplicasOnRedisAndPostgres: three serve processes (each
// with its own data directory) share one Redis through global.state and one
// PostgreSQL through global.storage, as issue 18's deployment does, both
// started by the test on free ports in temporary directories.
// An answer cached by one is a hit on another; a limit of 12 requests
// admits exactly 12 of 36 sent at once across the three; a handbook
// uploaded and ingested through one is found by another's search,
// retrieved by a third's rag plugin, and its bytes read through another; a
// Responses conversation whose three turns land on three replicas
// continues on each and lists every turn's items; a memory kept on one is
// listed on another; a replica killed loses none of the turns it
// acknowledged; with Redis killed no request gets a 500 (a new question
// misses, the limit fails open, the response store answers 503), the
// errors metric counts and each replica logs it; once Redis is back (from
// its append-only file) the turns acknowledged before it was killed are
// read through another replica, the memory is still listed, and the
// replicas share again.
func TestServeThreeReplicasOnRedisAndPostgres(t *testing.T) {
	const env = "JUNCTION_E2E_POSTGRES_DSN"
	t.Setenv(env, pgtest.StartServer(t).DSN()) // a PostgreSQL of its own; the serve processes inherit it
	rs := redistest.StartServer(t)             // appendonly yes, appendfsync always
	up := newUpstream(t)
	replica := func() *storedServer {
		p := newServePorts(t)
		cfg := writeServeConfig(t, p, replicaRecipe(up.URL, `          - {type: rag, configuration: {store: handbook, top_k: 1, on_failure: warn}}
          - {type: memory, configuration: {min_score: -1}}
`), perTeamLimit(12)+fmt.Sprintf(`  state: {backend: redis, redis: {address: "%s", key_prefix: "e2e:"}}
  storage: {backend: postgres, postgres: {dsn_env: %s, max_conns: 4}}
`, rs.Addr(), env), "response_api: {enabled: true}")
		return startServe(t, cfg, filepath.Join(t.TempDir(), "data"), p)
	}
	r := []*storedServer{replica(), replica(), replica()}
	// A request without X-Team counts under one shared empty value
	// (docs/configuration.md), which this test's other requests would
	// exhaust: each carries a team of its own.
	var teams atomic.Int64
	own := func() []string { return []string{"X-Team", fmt.Sprint("team-", teams.Add(1))} }

	// A miss on replica 0 is a hit on replica 1 (the store follows the
	// answer: allow it a moment).
	if code, h := r[0].ask("cacheme: what is shared?", own()...); code != 200 || h.Get("x-cache-status") != "miss" {
		t.Fatalf("first request on replica 0: %d, x-cache-status %q", code, h.Get("x-cache-status"))
	}
	awaitHit(t, r[1], "cacheme: what is shared?", own)
	awaitHit(t, r[2], "cacheme: what is shared?", own)

	// 36 requests at once, 12 per replica, against one limit of 12.
	codes := burst(r, 36)
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

	// A handbook uploaded on replica 0 is searched on replica 1 (within
	// the stated bound of 1 s; a loaded machine gets room), retrieved by
	// replica 2's rag plugin and read through replica 1.
	fileID, storeID := r[0].addHandbook()
	var page searchPage
	deadline := time.Now().Add(5 * time.Second)
	for {
		page = r[1].search(storeID, question)
		if len(page.Data) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(page.Data) == 0 || !strings.Contains(page.Data[0].Content[0].Text, vacation) {
		t.Fatalf("replica 1's search of replica 0's upload: %+v\nserve said: %s", page, r[1].stderr.String())
	}
	if code, _ := r[2].ask(question, own()...); code != 200 {
		t.Fatalf("rag request on replica 2: %d", code)
	}
	if !strings.Contains(up.last(), vacation) {
		t.Fatalf("replica 2's rag did not retrieve the passage uploaded on replica 0; it sent:\n%s", up.last())
	}
	var f fileObject
	r[1].call("GET", "/api/v1/storage/files/"+fileID, nil, 200, &f)
	if f.Filename != "handbook.md" || f.Bytes != int64(len(handbook)) {
		t.Fatalf("replica 1's view of the file uploaded on replica 0: %+v", f)
	}

	// A conversation of three turns, one per replica.
	prev := ""
	var ids []string
	turn := func(on *storedServer, text string) string {
		t.Helper()
		body := map[string]any{"model": "MoM", "input": text}
		if prev != "" {
			body["previous_response_id"] = prev
		}
		raw, _ := json.Marshal(body)
		code, _, b := on.post("/v1/responses", string(raw), own()...)
		var resp struct{ ID string }
		if code != 200 || json.Unmarshal(b, &resp) != nil || resp.ID == "" {
			t.Fatalf("turn %q: %d %s", text, code, b)
		}
		prev = resp.ID
		ids = append(ids, resp.ID)
		return resp.ID
	}
	for i, text := range []string{"first turn", "second turn", "third turn"} {
		turn(r[i], text)
	}
	inputItems := func(on *storedServer, id string, want ...string) {
		t.Helper()
		code, b := on.get("/v1/responses/" + id + "/input_items?order=asc")
		var items struct {
			Data []json.RawMessage `json:"data"`
		}
		if code != 200 || json.Unmarshal(b, &items) != nil {
			t.Fatalf("input items of %s: %d %s", id, code, b)
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Fatalf("input items of a conversation stored on several replicas lack %q: %s", w, b)
			}
		}
	}
	inputItems(r[0], ids[2], "first turn", "second turn", "third turn")

	// What a user told replica 0 is a memory on replica 1.
	if code, _, b := r[0].post("/v1/chat/completions", `{"model":"MoM","user":"ada","messages":[{"role":"user","content":"My name is Ada and I live in Lisbon."}]}`, own()...); code != 200 {
		t.Fatalf("telling replica 0: %d %s", code, b)
	}
	memories := r[1].memories("ada")
	if len(memories) == 0 || !strings.Contains(fmt.Sprint(memories), "Lisbon") {
		t.Fatalf("replica 1's memories of what replica 0 was told: %+v", memories)
	}

	// Replica 2, which stored the third turn, killed (kill -9): the turn it
	// acknowledged is continued on replica 1, and its cached answer is
	// still a hit on the others.
	r[2].kill()
	turn(r[1], "fourth turn")
	if code, h := r[0].ask("cacheme: what is shared?", own()...); code != 200 || h.Get("x-cache-status") != "hit" {
		t.Fatalf("after a replica was killed: %d, x-cache-status %q", code, h.Get("x-cache-status"))
	}
	r = r[:2]

	// Redis killed (SIGKILL: no orderly shutdown): no request fails with
	// a 500.
	rs.Kill()
	for i, s := range r {
		text := fmt.Sprintf("cacheme: asked while Redis is down, on %d", i)
		if code, h := s.ask(text, own()...); code != 200 || h.Get("x-cache-status") != "miss" {
			t.Fatalf("replica %d with Redis down: %d, x-cache-status %q, want a miss", i, code, h.Get("x-cache-status"))
		}
		// The store reached this replica's own index only: the same
		// question again may hit there.
		if code, _ := s.ask(text, own()...); code != 200 {
			t.Fatalf("replica %d with Redis down, asked again: %d", i, code)
		}
		if code, _ := s.ask("count me", "X-Team", "blue"); code != 200 {
			t.Fatalf("replica %d with Redis down: a limited request got %d, want 200 (fail open)", i, code)
		}
		if code, _, b := s.post("/v1/responses", `{"model":"MoM","input":"more","previous_response_id":"`+ids[3]+`"}`, own()...); code == 500 {
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
	// And a log line (one a feature and operation every 10 s, not one a
	// request) on every replica that met the outage.
	for i, s := range r {
		for _, feature := range []string{"response_cache", "rate_limit", "response_store"} {
			if line := `msg="shared state unavailable; degrading" feature=` + feature; !strings.Contains(s.stderr.String(), line) {
				t.Errorf("replica %d logged no %s with Redis down:\n%s", i, line, s.stderr.String())
			}
		}
	}

	// Redis back on its directory: it loads its append-only file, so the
	// turn replica 1 acknowledged just before the kill (and the turns of
	// the killed replica) are read through replica 0; the memory (in
	// PostgreSQL) is still listed on replica 1 and the handbook still
	// retrieved; the replicas share again.
	rs.Start()
	time.Sleep(1100 * time.Millisecond) // a replica leaves Redis alone for a second after a failure
	inputItems(r[0], ids[3], "first turn", "second turn", "third turn", "fourth turn")
	if after := r[1].memories("ada"); fmt.Sprint(after) != fmt.Sprint(memories) {
		t.Fatalf("memories after Redis was restarted:\nbefore %+v\nafter  %+v", memories, after)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		if code, _ := r[0].ask("cacheme: after the restart", own()...); code != 200 {
			t.Fatalf("after Redis came back: %d", code)
		}
		code, h := r[1].ask("cacheme: after the restart", own()...)
		if code == 200 && h.Get("x-cache-status") == "hit" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no shared cache hit 10 s after Redis came back: %s", r[1].stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _ := r[0].ask(question, own()...); code != 200 {
		t.Fatalf("rag request on replica 0 after Redis was restarted: %d", code)
	}
	if !strings.Contains(up.last(), vacation) {
		t.Fatalf("replica 0's rag after Redis was restarted; it sent:\n%s", up.last())
	}
	for _, s := range r {
		s.stop()
	}
}

// TestServeRedisDownFailsClosed: with global.state.redis.fail_closed, a
// serve process whose Redis is killed refuses the requests under its rate
// limit with 429 (never a 500), counts the failures in
// junction_state_errors_total and logs them once, and admits again when
// Redis is back. The fail-open side is TestServeThreeReplicasOnRedisAndPostgres's.
func TestServeRedisDownFailsClosed(t *testing.T) {
	rs := redistest.StartServer(t)
	up := newUpstream(t)
	p := newServePorts(t)
	cfg := writeServeConfig(t, p, fmt.Sprintf(`providers:
  defaults: {default_model: m}
  models:
    - {name: m, backend_refs: [{base_url: %s/v1, provider: openai}]}
recipes:
  - name: default
    decisions:
      - name: all
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: m}]
        plugins:
          - {type: response_cache, configuration: {mode: exact, ttl_seconds: 600}}
`, up.URL), fmt.Sprintf(`  rate_limits:
    - {name: per-team, key: "header:X-Team", requests: 1000, window: 1h}
  state: {backend: redis, redis: {address: "%s", key_prefix: "closed:", fail_closed: true}}
`, rs.Addr()))
	s := startServe(t, cfg, filepath.Join(t.TempDir(), "data"), p)
	if code, _ := s.ask("with Redis up", "X-Team", "red"); code != 200 {
		t.Fatalf("with Redis up: %d", code)
	}

	rs.Kill()
	for i := range 20 {
		code, _, b := s.post("/v1/chat/completions", fmt.Sprintf(`{"model":"MoM","messages":[{"role":"user","content":"asked while Redis is down, %d"}]}`, i), "X-Team", "red")
		if code != 429 {
			t.Fatalf("request %d with Redis down and fail_closed: %d, want 429: %s", i, code, b)
		}
	}
	mresp, err := http.Get(s.metrics)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(mb), `junction_state_errors_total{feature="rate_limit",op="take"}`) {
		t.Errorf("metrics lack junction_state_errors_total for the rate limit's takes with Redis down")
	}
	line := `msg="shared state unavailable; degrading" feature=rate_limit op=take`
	if n := strings.Count(s.stderr.String(), line); n < 1 || n > 2 {
		t.Errorf("%d log lines %s for 20 refused requests, want one (one every 10 s; two on a machine slow enough to take 10 s):\n%s", n, line, s.stderr.String())
	}

	rs.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := s.ask("after the restart", "X-Team", "red")
		if code == 200 {
			break
		}
		if code != 429 || time.Now().After(deadline) {
			t.Fatalf("after Redis came back: %d (waited until %v)", code, deadline)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.stop()
}
