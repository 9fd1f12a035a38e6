//go:build !race

package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// toolCallAnswer is an upstream answer that calls a tool.
const toolCallAnswer = `{"id":"chatcmpl-up","object":"chat.completion","created":1,"model":"small",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",` +
	`"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],` +
	`"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`

func answerWithToolCalls(calls *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(toolCallAnswer))
	})
}

// withToolCallCache is withCachedDecision with the cache's cache_tool_calls
// set as given.
func withToolCallCache(on bool) envOption {
	cfg := "{mode: exact, ttl_seconds: 60}"
	if on {
		cfg = "{mode: exact, ttl_seconds: 60, cache_tool_calls: true}"
	}
	return withYAML(func(y string) string {
		y = strings.Replace(y, "        - {name: gated, keywords: [\"gated\"]}\n",
			"        - {name: gated, keywords: [\"gated\"]}\n        - {name: cacheme, keywords: [\"cacheme\"]}\n", 1)
		return strings.Replace(y, "      - name: gated\n", "      - name: cached\n        priority: 135\n"+
			"        rules: {operator: OR, conditions: [{type: keyword, name: cacheme}]}\n"+
			"        modelRefs: [{model: small, use_reasoning: false}]\n"+
			"        plugins: [{type: response_cache, configuration: "+cfg+"}]\n      - name: gated\n", 1)
	})
}

// An answer that calls tools is never stored by default; with
// cache_tool_calls it is, and a hit answers with the same tool calls (plain
// and streamed), finishing with tool_calls.
func TestToolCallAnswersAreCachedOnlyWhenConfigured(t *testing.T) {
	body := cacheBody("cacheme what is the weather in Paris", "")
	t.Run("off", func(t *testing.T) {
		e := newEnv(t, withRunner(responseCacheRunner(t)), withToolCallCache(false))
		var calls atomic.Int32
		e.ups["small"].setHandler(answerWithToolCalls(&calls))
		for i := range 3 {
			resp, b := e.post("/v1/chat/completions", body)
			if resp.StatusCode != 200 || resp.Header.Get("x-cache-status") != "miss" {
				t.Fatalf("ask %d: %d, x-cache-status %q: %s", i, resp.StatusCode, resp.Header.Get("x-cache-status"), b)
			}
			time.Sleep(50 * time.Millisecond) // the response phase had its chance to store
		}
		if calls.Load() != 3 {
			t.Fatalf("the upstream answered %d of 3 requests", calls.Load())
		}
	})
	t.Run("on", func(t *testing.T) {
		e := newEnv(t, withRunner(responseCacheRunner(t)), withToolCallCache(true))
		var calls atomic.Int32
		e.ups["small"].setHandler(answerWithToolCalls(&calls))
		resp, b := e.post("/v1/chat/completions", body)
		if resp.Header.Get("x-cache-status") != "miss" {
			t.Fatalf("first: x-cache-status %q: %s", resp.Header.Get("x-cache-status"), b)
		}
		var hit []byte
		waitFor(t, "a cache hit", func() bool {
			resp, hit = e.post("/v1/chat/completions", body)
			return resp.Header.Get("x-cache-status") == "hit"
		})
		before := calls.Load() // a miss may have raced the first store
		var got struct {
			Choices []struct {
				Message struct {
					Content   *string           `json:"content"`
					ToolCalls []json.RawMessage `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(hit, &got); err != nil || len(got.Choices) != 1 {
			t.Fatalf("hit: %v %s", err, hit)
		}
		ch := got.Choices[0]
		if ch.FinishReason != "tool_calls" || ch.Message.Content != nil || len(ch.Message.ToolCalls) != 1 ||
			!strings.Contains(string(ch.Message.ToolCalls[0]), `"get_weather"`) || !strings.Contains(string(ch.Message.ToolCalls[0]), `"call_1"`) {
			t.Fatalf("hit does not replay the tool call: %s", hit)
		}
		resp, ev := e.post("/v1/chat/completions", cacheBody("cacheme what is the weather in Paris", `"stream":true,`))
		s := string(ev)
		if resp.Header.Get("x-cache-status") != "hit" || !strings.Contains(s, `"tool_calls":[{`) || !strings.Contains(s, `"index":0`) ||
			!strings.Contains(s, `"finish_reason":"tool_calls"`) || !strings.HasSuffix(s, "data: [DONE]\n\n") {
			t.Fatalf("streamed hit: %s", ev)
		}
		if calls.Load() != before {
			t.Fatalf("the upstream answered %d more requests; hits should not reach it", calls.Load()-before)
		}
	})
}
