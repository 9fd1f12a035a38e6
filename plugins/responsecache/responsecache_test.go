package responsecache

import (
	"encoding/json"
	"strings"
	"testing"
)

func keys(t *testing.T, c *Config, body, decision, model string) Keys {
	t.Helper()
	k, err := c.Keys([]byte(body), decision, model)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeys(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	base := keys(t, c, `{"model":"small","messages":[{"role":"user","content":"hi"}],"temperature":0}`, "d", "small")
	// Streaming, spacing, key order and the user field do not change the key.
	same := keys(t, c, `{"temperature":0, "stream":true, "user":"u1", "messages":[{"content":"hi","role":"user"}],"model":"x"}`, "d", "small")
	if base.Exact != same.Exact {
		t.Error("equivalent requests have different exact keys")
	}
	for name, body := range map[string]string{
		// A client's reasoning switch shapes the answer.
		"reasoning":   `{"messages":[{"role":"user","content":"hi"}],"temperature":0,"chat_template_kwargs":{"enable_thinking":false}}`,
		"effort":      `{"messages":[{"role":"user","content":"hi"}],"temperature":0,"reasoning_effort":"high"}`,
		"temperature": `{"messages":[{"role":"user","content":"hi"}],"temperature":1}`,
		"message":     `{"messages":[{"role":"user","content":"hello"}],"temperature":0}`,
		"system":      `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"temperature":0}`,
	} {
		if keys(t, c, body, "d", "small").Exact == base.Exact {
			t.Errorf("%s change kept the exact key", name)
		}
	}
	// Scope: per model and per decision by default.
	if keys(t, c, `{"messages":[{"role":"user","content":"hi"}],"temperature":0}`, "d", "big").Exact == base.Exact {
		t.Error("another model shares the key")
	}
	if keys(t, c, `{"messages":[{"role":"user","content":"hi"}],"temperature":0}`, "other", "small").Exact == base.Exact {
		t.Error("another decision shares the key")
	}
	open, _ := ParseConfig([]byte(`{"scope":{"model":false,"decision":false}}`))
	a := keys(t, open, `{"messages":[{"role":"user","content":"hi"}]}`, "d1", "m1")
	b := keys(t, open, `{"messages":[{"role":"user","content":"hi"}]}`, "d2", "m2")
	if a.Exact != b.Exact || a.Namespace != b.Namespace {
		t.Error("unscoped cache separates models or decisions")
	}
	// Context ignores the last user message only.
	q1 := keys(t, c, `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"what is go"}]}`, "d", "m")
	q2 := keys(t, c, `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"explain go"}]}`, "d", "m")
	if q1.Context != q2.Context || q1.Exact == q2.Exact || q1.Query != "what is go" {
		t.Errorf("context/query: %+v %+v", q1, q2)
	}
}

func TestStorable(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"max_entry_bytes":100}`))
	for _, tc := range []struct {
		status        int
		body, content string
		why           string
	}{
		{200, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`, "hello", ""},
		{500, `{"error":{"message":"x"}}`, "", "not 2xx"},
		{429, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hello"}}]}`, "", "not 2xx"},
		{200, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a"}]},"finish_reason":"tool_calls"}]}`, "", "tools"},
		{200, `{"choices":[{"index":0,"message":{"content":"a"}},{"index":1,"message":{"content":"b"}}]}`, "", "2 choices"},
		{200, `{"choices":[{"index":0,"message":{"content":"` + strings.Repeat("x", 101) + `"},"finish_reason":"stop"}]}`, "", "max_entry_bytes"},
		{200, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hel\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", "hello", ""},
		{200, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hel\"}}]}\n\n", "", "[DONE]"},
		{200, `{"choices":[{"index":0,"message":{"content":"x"},"finish_reason":"content_filter"}]}`, "", "content_filter"},
	} {
		got, why := c.Storable(tc.status, []byte(tc.body))
		if got != tc.content || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%d %.60s: got %q, %q; want %q, %q", tc.status, tc.body, got, why, tc.content, tc.why)
		}
	}
}

// With cache_tool_calls an answer that calls tools is kept, tool calls and
// all (from a chat.completion; a stream's fragments are not merged here).
func TestStorableToolCalls(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"cache_tool_calls":true}`))
	body := `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
	a, why := c.StorableAnswer(200, []byte(body))
	if why != "" || a.Content != "" || !strings.Contains(string(a.ToolCalls), `"name":"f"`) {
		t.Fatalf("%+v %q", a, why)
	}
	q, back, err := DecodeAnswer(EncodeAnswer("weather?", a))
	if err != nil || q != "weather?" || string(back.ToolCalls) != string(a.ToolCalls) {
		t.Fatalf("entry round trip: %q %+v %v", q, back, err)
	}
	events := "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\"}]}}]}\n\ndata: [DONE]\n\n"
	if _, why := c.StorableAnswer(200, []byte(events)); !strings.Contains(why, "stream fragments") {
		t.Fatalf("tool calls in events: %q", why)
	}
	off, _ := ParseConfig(nil)
	if _, why := off.StorableAnswer(200, []byte(body)); !strings.Contains(why, "cache_tool_calls is off") {
		t.Fatalf("without cache_tool_calls: %q", why)
	}
	if why := off.servable(a); why == "" {
		t.Fatal("an entry with tool calls is served with cache_tool_calls off")
	}
}

func TestBypass(t *testing.T) {
	c, _ := ParseConfig(nil)
	if !c.Bypassed([]Header{{"X-Cache-Bypass", "true"}}) || c.Bypassed([]Header{{"X-Cache-Bypass", "false"}}) || c.Bypassed(nil) {
		t.Error("default bypass header")
	}
	c2, _ := ParseConfig([]byte(`{"bypass_header":"x-no-cache"}`))
	if !c2.Bypassed([]Header{{"X-No-Cache", "1"}}) {
		t.Error("configured bypass header")
	}
}

func TestConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"mode":"exact_then_semantic","semantic":{"similarity_threshold":0.92},"ttl_seconds":600}`))
	if err != nil || !c.Exact() || !c.Similar() || *c.Semantic.SimilarityThreshold != 0.92 || c.TTLSeconds != 600 {
		t.Fatalf("example configuration: %v %+v", err, c)
	}
	for cfg, want := range map[string]string{
		`{"mode":"fuzzy"}`:                          "configuration.mode",
		`{"semantic":{"similarity_threshold":1.5}}`: "configuration.semantic.similarity_threshold",
		`{"semantic":{"threshold":0.5}}`:            "configuration.semantic.threshold",
		`{"ttl_seconds":-5}`:                        "configuration.ttl_seconds",
		`{"scope":{"tenant":true}}`:                 "configuration.scope.tenant",
		`{"bypass_header":"bad header"}`:            "configuration.bypass_header",
	} {
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", cfg, err, want)
		}
	}
}

func TestNoStore(t *testing.T) {
	if !NoStore([]Header{{"Cache-Control", "no-cache, No-Store"}}) || NoStore([]Header{{"Cache-Control", "no-cache"}}) || NoStore(nil) {
		t.Error("Cache-Control: no-store")
	}
}

func TestFormatSimilarity(t *testing.T) {
	for _, tc := range []struct {
		s     float64
		exact bool
		want  string
	}{{1, true, "1.0000"}, {0.99999, false, "0.9999"}, {1, false, "0.9999"}, {0.92349, false, "0.9234"}, {0.5, true, "1.0000"}} {
		if got := FormatSimilarity(tc.s, tc.exact); got != tc.want {
			t.Errorf("FormatSimilarity(%v, %v) = %s, want %s", tc.s, tc.exact, got, tc.want)
		}
	}
}

func TestEntry(t *testing.T) {
	q, a, err := DecodeEntry(EncodeEntry("what is go", "a language"))
	if err != nil || q != "what is go" || a != "a language" {
		t.Fatalf("%q %q %v", q, a, err)
	}
	if _, _, err := DecodeEntry([]byte("plain text")); err == nil {
		t.Error("a value not written by the plugin decoded")
	}
}

// TestSlotsInKeys: the slots of the last user message are in the keys, so
// a semantic lookup compares only requests whose slots agree; the issue's
// examples get different slots.
func TestSlotsInKeys(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"mode":"exact_then_semantic","semantic":{"similarity_threshold":0.92}}`))
	body := func(q string) string { return `{"messages":[{"role":"user","content":` + strconvQuote(q) + `}]}` }
	for _, p := range [][2]string{
		{"Convert 100 dollars to euros", "Convert 250 dollars to euros"},
		{"What is the status of flight AB123?", "What is the status of flight XY987?"},
		{"Translate dog to French", "Translate dog to German"},
		{"Is it safe?", "Is it not safe?"},
	} {
		if keys(t, c, body(p[0]), "d", "m").Slots == keys(t, c, body(p[1]), "d", "m").Slots {
			t.Errorf("%q and %q have the same slots", p[0], p[1])
		}
	}
	if keys(t, c, body("Convert $1,000 to euros"), "d", "m").Slots != keys(t, c, body("convert 1000 dollars into EUR please"), "d", "m").Slots {
		t.Error("1,000 dollars and $1000 have different slots")
	}
	if ok, _ := Agree("translate dog", "translate cat"); ok {
		t.Error("dog and cat agree")
	}
}

// TestWordsInKeys: the content words' signature keeps questions apart that
// the guard would refuse (so a lookup never scores them), and together
// questions it would accept.
func TestWordsInKeys(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"mode":"exact_then_semantic","semantic":{"similarity_threshold":0.92}}`))
	body := func(q string) string { return `{"messages":[{"role":"user","content":` + strconvQuote(q) + `}]}` }
	for _, p := range [][2]string{
		{"translate dog", "translate cat"},
		{"What is the capital of flurbia please?", "What is the capital of grobnia please?"},
		{"How do I bake bread?", "How do I bake cake?"},
	} {
		a, b := keys(t, c, body(p[0]), "d", "m"), keys(t, c, body(p[1]), "d", "m")
		if a.Slots != b.Slots || a.Words == b.Words {
			t.Errorf("%q and %q: slots %s/%s (want equal), words %s/%s (want different)", p[0], p[1], a.Slots, b.Slots, a.Words, b.Words)
		}
		if ok, _ := Agree(p[0], p[1]); ok {
			t.Errorf("%q and %q agree, yet their words differ", p[0], p[1])
		}
	}
	for _, p := range [][2]string{
		{"How do I reset my password?", "how can I reset my password"},
		{"Why is my code not working?", "Why isn't my code working?"},
	} {
		a, b := keys(t, c, body(p[0]), "d", "m"), keys(t, c, body(p[1]), "d", "m")
		if a.Slots != b.Slots || a.Words != b.Words || a.Exact == b.Exact {
			t.Errorf("%q and %q: slots %s/%s, words %s/%s (want both equal, exact keys apart)", p[0], p[1], a.Slots, b.Slots, a.Words, b.Words)
		}
		if ok, why := Agree(p[0], p[1]); !ok {
			t.Errorf("%q and %q do not agree: %s", p[0], p[1], why)
		}
	}
	if k, _ := c.keys([]byte(body("translate dog")), "d", "m", false); k.Words != "" || k.Slots != "" {
		t.Errorf("an exact-only lookup computed slots %q and words %q", k.Slots, k.Words)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestScopeUser(t *testing.T) {
	c, err := ParseConfig([]byte(`{"scope":{"user":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := keys(t, c, `{"user":"u1","messages":[{"role":"user","content":"hi"}]}`, "d", "m")
	b := keys(t, c, `{"user":"u2","messages":[{"role":"user","content":"hi"}]}`, "d", "m")
	s := keys(t, c, `{"safety_identifier":"u1","messages":[{"role":"user","content":"hi"}]}`, "d", "m")
	if a.Namespace == b.Namespace || a.Exact == b.Exact || a.Namespace != s.Namespace || strings.Contains(a.Namespace, "u1") {
		t.Errorf("per-user namespaces: %q %q %q", a.Namespace, b.Namespace, s.Namespace)
	}
	if !keys(t, c, `{"messages":[{"role":"user","content":"hi"}]}`, "d", "m").NoUser {
		t.Error("a request without a user is scoped")
	}
	def, _ := ParseConfig(nil)
	if keys(t, def, `{"user":"u1","messages":[{"role":"user","content":"hi"}]}`, "d", "m").Exact != keys(t, def, `{"user":"u2","messages":[{"role":"user","content":"hi"}]}`, "d", "m").Exact {
		t.Error("without scope.user, users share entries")
	}
}
