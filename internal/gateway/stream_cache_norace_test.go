//go:build !race

// Left out of race builds, like every test that runs a built-in wasm module:
// wazero compiles a module in about thirty seconds under the race detector.

package gateway

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/chat/chattest"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/demobackend"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/builtintest"
)

// responseCacheRunner runs plugins with the built-in response_cache module
// in the wasm host, over the engine's in-memory cache.
func responseCacheRunner(t *testing.T) plugin.Runner { return builtintest.Runner(t, "response_cache") }

// withCachedDecision adds a decision (keyword "cacheme", model small) with
// an exact response cache.
func withCachedDecision() envOption {
	return withYAML(func(y string) string {
		y = strings.Replace(y, "        - {name: gated, keywords: [\"gated\"]}\n",
			"        - {name: gated, keywords: [\"gated\"]}\n        - {name: cacheme, keywords: [\"cacheme\"]}\n", 1)
		return strings.Replace(y, "      - name: gated\n", "      - name: cached\n        priority: 135\n"+
			"        rules: {operator: OR, conditions: [{type: keyword, name: cacheme}]}\n"+
			"        modelRefs: [{model: small, use_reasoning: false}]\n"+
			"        plugins: [{type: response_cache, configuration: {mode: exact, ttl_seconds: 60}}]\n      - name: gated\n", 1)
	})
}

func cacheBody(text string, extra string) string {
	return `{"model":"MoM",` + extra + `"messages":[{"role":"user","content":"` + text + `"}]}`
}

// A streamed answer is stored by the response cache once it has been relayed;
// the same request then hits, streamed or not, with the same content, the
// hit headers, and the shape the client asked for.
func TestStreamedAnswerIsCachedAndServed(t *testing.T) {
	e := newEnv(t, withRunner(responseCacheRunner(t)), withCachedDecision())
	ups := e.ups["small"]

	resp, body := e.post("/v1/chat/completions", cacheBody("cacheme streamed", `"stream":true,`))
	first, done := chattest.StreamContent(t, body)
	if resp.StatusCode != 200 || !done || !strings.Contains(first, "cacheme streamed") {
		t.Fatalf("first: status %d, done %v: %s", resp.StatusCode, done, body)
	}
	if resp.Header.Get("x-cache-status") != "miss" {
		t.Fatalf("first x-cache-status %q", resp.Header.Get("x-cache-status"))
	}

	// Stored after the stream ended: a plain request hits. Until then the
	// upstream fails, so that a miss stores nothing (only the stream can).
	ups.setHandler(demobackend.New(demobackend.Options{Status: http.StatusServiceUnavailable}))
	var hit string
	waitFor(t, "a cache hit", func() bool {
		resp, body = e.post("/v1/chat/completions", cacheBody("cacheme streamed", ""))
		hit = string(body)
		return resp.Header.Get("x-cache-status") == "hit"
	})
	calls := ups.count()
	if got := chattest.CompletionContent(t, hit); got != first {
		t.Fatalf("plain hit content %q, streamed answer %q", got, first)
	}
	if resp.Header.Get("x-cache-similarity") != "1.0000" || resp.Header.Get("x-cache-hit") != "exact" {
		t.Fatalf("x-cache-similarity %q, x-cache-hit %q", resp.Header.Get("x-cache-similarity"), resp.Header.Get("x-cache-hit"))
	}

	// A streamed request hits too, answered as events; with include_usage the
	// usage chunk comes before [DONE].
	for _, usage := range []bool{true, false} {
		extra := `"stream":true,`
		if usage {
			extra += `"stream_options":{"include_usage":true},`
		}
		resp, body = e.post("/v1/chat/completions", cacheBody("cacheme streamed", extra))
		got, done := chattest.StreamContent(t, body)
		if resp.Header.Get("x-cache-status") != "hit" || resp.Header.Get("x-cache-similarity") != "1.0000" ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("streamed hit headers %v", resp.Header)
		}
		if !done || got != first || !strings.Contains(string(body), `"chat.completion.chunk"`) {
			t.Fatalf("streamed hit: content %q (want %q), done %v: %s", got, first, done, body)
		}
		if hasUsage := strings.Contains(string(body), `"usage"`); hasUsage != usage {
			t.Fatalf("include_usage %v, usage chunk %v: %s", usage, hasUsage, body)
		}
	}
	if ups.count() != calls {
		t.Fatalf("the upstream was called %d more times; the hits should not reach it", ups.count()-calls)
	}
}

// A stream that breaks off or whose client goes away is not stored: the same
// request afterwards misses.
func TestIncompleteStreamsAreNotCached(t *testing.T) {
	e := newEnv(t, withRunner(responseCacheRunner(t)), withCachedDecision())
	ups := e.ups["small"]
	incomplete := func() float64 {
		return e.scalar("junction_response_phase_skipped_total", map[string]string{"reason": dataplane.SkipIncomplete})
	}

	ups.setHandler(demobackend.New(demobackend.Options{FailAfterChunks: 3}))
	resp, body := e.post("/v1/chat/completions", cacheBody("cacheme broken", `"stream":true,`))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"error"`) {
		t.Fatalf("broken stream: %d %s", resp.StatusCode, body)
	}
	waitFor(t, "the broken stream counted", func() bool { return incomplete() == 1 })

	ups.setHandler(demobackend.New(demobackend.Options{ChunkDelay: 100 * time.Millisecond}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.gw.URL+"/v1/chat/completions",
		strings.NewReader(cacheBody("cacheme cancelled", `"stream":true,`)))
	hresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(hresp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	hresp.Body.Close()
	waitFor(t, "the cancelled stream counted", func() bool { return incomplete() == 2 })

	ups.setHandler(demobackend.New(demobackend.Options{}))
	for _, text := range []string{"cacheme broken", "cacheme cancelled"} {
		resp, body := e.post("/v1/chat/completions", cacheBody(text, ""))
		if resp.StatusCode != 200 || resp.Header.Get("x-cache-status") != "miss" {
			t.Fatalf("%s: status %d, x-cache-status %q: an incomplete stream was cached: %s", text, resp.StatusCode, resp.Header.Get("x-cache-status"), body)
		}
	}
}

// A streamed request carrying the bypass header (a client header, which the
// gateway lends to plugins) is neither answered from nor stored in the cache.
func TestBypassedStreamIsNotCached(t *testing.T) {
	e := newEnv(t, withRunner(responseCacheRunner(t)), withCachedDecision())
	resp, body := e.post("/v1/chat/completions", cacheBody("cacheme bypass", `"stream":true,`), "x-cache-bypass", "true")
	if _, done := chattest.StreamContent(t, body); resp.StatusCode != 200 || !done {
		t.Fatalf("bypassed stream: %d %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("x-junction-plugins"); got != "response_cache=skipped" {
		t.Fatalf("x-junction-plugins %q: the plugin did not see the bypass header", got)
	}
	if up := e.ups["small"].last(t); up.Header.Get("x-cache-bypass") != "" {
		t.Fatal("the client's bypass header was forwarded upstream")
	}
	// The response phase skips it too. It runs after the stream: give it
	// time, then ask again with an upstream that fails (so that this request
	// stores nothing itself).
	time.Sleep(300 * time.Millisecond)
	e.ups["small"].setHandler(demobackend.New(demobackend.Options{Status: http.StatusServiceUnavailable}))
	resp, body = e.post("/v1/chat/completions", cacheBody("cacheme bypass", ""))
	if resp.Header.Get("x-cache-status") != "miss" {
		t.Fatalf("x-cache-status %q: a bypassed stream was stored: %s", resp.Header.Get("x-cache-status"), body)
	}
}
