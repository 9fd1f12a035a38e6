package chat

import (
	"testing"
)

// TestKnownStrings checks that known answers exactly string(b) for the
// strings it knows and nothing for any other (near misses included), and
// that parsing a request made of known keys and roles copies none of them.
func TestKnownStrings(t *testing.T) {
	for _, s := range []string{"model", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options",
		"temperature", "top_p", "tools", "tool_choice", "user", "system", "assistant", "tool", "developer", "MoM", "auto"} {
		got, ok := known([]byte(s))
		if !ok || got != s {
			t.Errorf("known(%q) = %q, %v", s, got, ok)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = known([]byte(s)) }); n != 0 {
			t.Errorf("known(%q) allocates %v times", s, n)
		}
	}
	for _, s := range []string{"", "Model", "models", "mom", "tool ", "Auto", "max_token", "system\x00"} {
		if got, ok := known([]byte(s)); ok {
			t.Errorf("known(%q) = %q, true; want not known", s, got)
		}
	}
	body := []byte(`{"model":"MoM","messages":[{"role":"system","content":"S"},{"role":"user","content":"U"}],"max_tokens":16,"weird\u0041key":1,"other":2}`)
	r, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "MoM" || r.Messages[0].Role != "system" || r.Messages[1].Role != "user" {
		t.Fatalf("parsed %q %+v", r.Model, r.Messages)
	}
	for _, k := range []string{"model", "messages", "max_tokens", "weirdAkey", "other"} {
		if _, ok := r.Fields[k]; !ok {
			t.Errorf("field %q missing from %v", k, r.Fields)
		}
	}
}
