//go:build !race

package main

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// What the tests of several serve processes sharing state (replicas_,
// cluster_ and tls_redis_e2e_norace_test.go) set up and send alike.

// replicaRecipe is their providers and recipes: model m on the upstream at
// up; a question with "cacheme" goes to the decision cached (an exact
// response cache), any other to all, which runs plugins (YAML list items,
// "" for none).
func replicaRecipe(up, plugins string) string {
	all := ""
	if plugins != "" {
		all = "        plugins:\n" + plugins
	}
	return fmt.Sprintf(`providers:
  defaults: {default_model: m}
  models:
    - {name: m, backend_refs: [{base_url: %s/v1, provider: openai}]}
recipes:
  - name: default
    signals:
      keywords: [{name: cache, keywords: [cacheme]}]
    decisions:
      - name: cached
        priority: 20
        rules: {operator: OR, conditions: [{type: keyword, name: cache}]}
        modelRefs: [{model: m}]
        plugins:
          - {type: response_cache, configuration: {mode: exact, ttl_seconds: 600}}
      - name: all
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: m}]
`, up) + all
}

// perTeamLimit is the global rate limit of requests an hour per X-Team the
// replicas share.
func perTeamLimit(requests int) string {
	return fmt.Sprintf(`  rate_limits:
    - {name: per-team, key: "header:X-Team", requests: %d, window: 1h}
`, requests)
}

// awaitHit asks on until text is a cache hit there (the shared store
// follows the answer: it is allowed 5 s), each time with the headers
// header returns.
func awaitHit(t *testing.T, on *storedServer, text string, header func() []string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, h := on.ask(text, header()...)
		if code == 200 && h.Get("x-cache-status") == "hit" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cache hit in 5 s on another replica (last %d, x-cache-status %q): %s", code, h.Get("x-cache-status"), on.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// burst sends n requests of team blue at once, request i to replica
// i%len(r), and returns their status codes.
func burst(r []*storedServer, n int) []int {
	codes := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			codes[i], _ = r[i%len(r)].ask("count me", "X-Team", "blue")
		}()
	}
	close(start)
	wg.Wait()
	return codes
}

// admitted counts the 200s of a burst against a limit, failing t on an
// answer that is neither 200 nor 429.
func admitted(t *testing.T, codes []int) int {
	t.Helper()
	n := 0
	for _, c := range codes {
		if c == 200 {
			n++
		} else if c != 429 {
			t.Fatalf("a limited request answered %d: %v", c, codes)
		}
	}
	return n
}
