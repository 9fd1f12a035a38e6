//go:build !race

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

// TestServeTwoReplicasOnRedisCluster: two serve processes share a real
// three-node Redis Cluster through global.state (mode cluster, one seed
// node named, as a managed endpoint is): an answer cached by one is a hit
// on the other, a limit of 6 admits exactly 6 of 18 requests sent at once
// across both, a Responses conversation whose turns land on both lists
// every turn, a memory kept on one is listed on the other, and the keys
// are spread over more than one node.
func TestServeTwoReplicasOnRedisCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	up := newUpstream(t)
	replica := func() *storedServer {
		p := newServePorts(t)
		cfg := writeServeConfig(t, p, replicaRecipe(up.URL, "          - {type: memory, configuration: {min_score: -1}}\n"), perTeamLimit(6)+fmt.Sprintf(`  state: {backend: redis, redis: {mode: cluster, addresses: ["%s"], key_prefix: "e2e:"}}
`, cl.Addrs()[0]), "response_api: {enabled: true}")
		return startServe(t, cfg, filepath.Join(t.TempDir(), "data"), p)
	}
	r := []*storedServer{replica(), replica()}
	var teams atomic.Int64
	own := func() []string { return []string{"X-Team", fmt.Sprint("team-", teams.Add(1))} }

	for i := range 8 { // several entries, so several slots
		text := fmt.Sprintf("cacheme: question %d", i)
		if code, h := r[0].ask(text, own()...); code != 200 || h.Get("x-cache-status") != "miss" {
			t.Fatalf("first request on replica 0: %d, x-cache-status %q\n%s", code, h.Get("x-cache-status"), r[0].stderr.String())
		}
	}
	awaitHit(t, r[1], "cacheme: question 0", own)

	codes := burst(r, 18)
	if n := admitted(t, codes); n != 6 {
		t.Fatalf("two replicas on a cluster admitted %d of 18 against a shared limit of 6: %v", n, codes)
	}

	prev := ""
	for i, text := range []string{"first turn", "second turn", "third turn"} {
		body := map[string]any{"model": "MoM", "input": text}
		if prev != "" {
			body["previous_response_id"] = prev
		}
		raw, _ := json.Marshal(body)
		code, _, b := r[i%2].post("/v1/responses", string(raw), own()...)
		var resp struct{ ID string }
		if code != 200 || json.Unmarshal(b, &resp) != nil || resp.ID == "" {
			t.Fatalf("turn %q on replica %d: %d %s", text, i%2, code, b)
		}
		prev = resp.ID
	}
	code, b := r[0].get("/v1/responses/" + prev + "/input_items?order=asc")
	for _, w := range []string{"first turn", "second turn", "third turn"} {
		if code != 200 || !strings.Contains(string(b), w) {
			t.Fatalf("input items of a conversation stored on two replicas on a cluster lack %q: %d %s", w, code, b)
		}
	}

	if code, _, b := r[0].post("/v1/chat/completions", `{"model":"MoM","user":"ada","messages":[{"role":"user","content":"My name is Ada and I live in Lisbon."}]}`, own()...); code != 200 {
		t.Fatalf("telling replica 0: %d %s", code, b)
	}
	if m := r[1].memories("ada"); len(m) == 0 || !strings.Contains(fmt.Sprint(m), "Lisbon") {
		t.Fatalf("replica 1's memories of what replica 0 was told: %+v", m)
	}

	nodes := 0
	per := cl.KeysPerNode(t, "e2e:")
	for _, n := range per {
		if n > 0 {
			nodes++
		}
	}
	if nodes < 2 {
		t.Fatalf("the replicas' keys are on %d node(s) of 3: %v", nodes, per)
	}
}
