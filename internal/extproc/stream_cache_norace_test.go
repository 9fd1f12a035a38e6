//go:build !race

// Left out of race builds, like every test that runs a built-in wasm module:
// wazero compiles a module in about thirty seconds under the race detector.

package extproc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/chat/chattest"

	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/builtintest"
)

// responseCacheRunner runs plugins with the built-in response_cache module
// in the wasm host, over the engine's in-memory cache.
func responseCacheRunner(t *testing.T) plugin.Runner { return builtintest.Runner(t, "response_cache") }

// Behind Envoy, a streamed answer relayed in STREAMED or FULL_DUPLEX_STREAMED
// response mode (or BUFFERED, which Junction overrides to STREAMED for
// events) is stored by the response cache; the same request then hits,
// streamed or not, as Envoy's local reply with the hit headers and the
// streamed answer's content.
func TestStreamedAnswerIsCachedBehindEnvoy(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.opts.Plugins = responseCacheRunner(t)
		o.edit = func(y string) string {
			y = strings.Replace(y, "        - {name: proof, keywords: [\"prove\"]}\n", "        - {name: proof, keywords: [\"prove\"]}\n        - {name: cacheme, keywords: [\"cacheme\"]}\n", 1)
			return strings.Replace(y, "      - name: gated\n", "      - name: cached\n        priority: 135\n"+
				"        rules: {operator: OR, conditions: [{type: keyword, name: cacheme}]}\n"+
				"        modelRefs: [{model: small, use_reasoning: false}]\n"+
				"        plugins: [{type: response_cache, configuration: {mode: exact, ttl_seconds: 60}}]\n      - name: gated\n", 1)
		}
	})
	for name, cfg := range answerModes {
		text := "cacheme " + name
		s := e.open(cfg)
		out, err := s.SendRequest(chat(userBody(text, `"stream":true`)))
		if err != nil || out.Upstream == nil {
			t.Fatalf("%s: %v %+v", name, err, out)
		}
		ro, err := s.SendResponse(e.answer(out.Upstream, 40))
		if err != nil || ro.Downstream == nil {
			t.Fatalf("%s: %v", name, err)
		}
		s.Close()
		first, done := chattest.StreamContent(t, ro.Downstream.Body)
		if !done || !strings.Contains(first, text) || ro.Downstream.Headers.Get("x-cache-status") != "miss" {
			t.Fatalf("%s: first answer (x-cache-status %q, done %v): %s", name, ro.Downstream.Headers.Get("x-cache-status"), done, ro.Downstream.Body)
		}

		// Stored once the stream ended. A miss meanwhile is abandoned before
		// its answer, so that only the stream can have stored anything.
		var hit *envoytest.RequestOutcome
		deadline := time.Now().Add(5 * time.Second)
		for hit == nil {
			s := e.open(cfg)
			out, err := s.SendRequest(chat(userBody(text)))
			if err != nil {
				t.Fatal(err)
			}
			if out.Immediate != nil {
				hit = out
				s.Close()
				break
			}
			s.Abort()
			if time.Now().After(deadline) {
				t.Fatalf("%s: the streamed answer was never served from the cache", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		h := envoytest.ImmediateHeaders(hit.Immediate)
		if h.Get("x-cache-status") != "hit" || h.Get("x-cache-similarity") != "1.0000" {
			t.Fatalf("%s: plain hit headers %v", name, h)
		}
		if got := chattest.CompletionContent(t, string(hit.Immediate.GetBody())); got != first {
			t.Fatalf("%s: plain hit content %q, streamed answer %q", name, got, first)
		}

		s = e.open(cfg)
		out, err = s.SendRequest(chat(userBody(text, `"stream":true`, `"stream_options":{"include_usage":true}`)))
		if err != nil || out.Immediate == nil {
			t.Fatalf("%s: a streamed repeat was not answered from the cache: %v", name, err)
		}
		s.Close()
		h = envoytest.ImmediateHeaders(out.Immediate)
		body := out.Immediate.GetBody()
		got, done := chattest.StreamContent(t, body)
		if h.Get("x-cache-status") != "hit" || !strings.HasPrefix(h.Get("content-type"), "text/event-stream") {
			t.Fatalf("%s: streamed hit headers %v", name, h)
		}
		if !done || got != first || !strings.Contains(string(body), `"usage"`) {
			t.Fatalf("%s: streamed hit content %q (want %q), done %v: %s", name, got, first, done, body)
		}
	}
}
