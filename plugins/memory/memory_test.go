package memory

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/sdk"
)

func parse(t *testing.T, raw string) []chatmsg.Message {
	t.Helper()
	m, err := chatmsg.Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestStatements(t *testing.T) {
	for text, want := range map[string][]string{
		"Hi! My name is Ada Lovelace. Can you help me with a poem?":                  {"My name is Ada Lovelace."},
		"btw, I live in Lisbon and I work at a bakery.\nI prefer short answers":      {"I live in Lisbon and I work at a bakery.", "I prefer short answers"},
		"Please remember that my flight is on Friday.":                               {"My flight is on Friday."},
		"remember: the wifi password is in the drawer":                               {"The wifi password is in the drawer"},
		"I'm a vegetarian. I'm trying to plan a dinner. I am not sure what to cook.": {"I'm a vegetarian."},
		"Call me Ada. I love hiking; I hate mornings!":                               {"Call me Ada.", "I love hiking", "I hate mornings!"},
		"I'm debugging a crash in my Go service. What does SIGSEGV mean?":            nil,
		"Do I like coffee? Is my name Ada?":                                          nil,
		"What is the capital of France?":                                             nil,
		"I am.":                                                                      nil,
		"Oh, and by the way, I'm allergic to peanuts.":                               {"I'm allergic to peanuts."},
		"My name is Ada. my name is ada.":                                            {"My name is Ada."},
		"I am 34 years old. I speak Portuguese and English.":                         {"I am 34 years old.", "I speak Portuguese and English."},
	} {
		if got := Statements(text); !reflect.DeepEqual(got, want) {
			t.Errorf("Statements(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestStatementsAreBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20; i++ {
		b.WriteString("I like the number " + strings.Repeat("x", i) + ". ")
	}
	if got := Statements(b.String()); len(got) != MaxRemember {
		t.Fatalf("%d statements, want %d", len(got), MaxRemember)
	}
	long := "My name is " + strings.Repeat("a", MaxStatementChars) + "."
	if got := Statements(long + " I live in Porto."); !reflect.DeepEqual(got, []string{"I live in Porto."}) {
		t.Fatalf("a sentence over %d chars was kept: %q", MaxStatementChars, got)
	}
	// Only the first maxScan bytes are read.
	if got := Statements(strings.Repeat("z", maxScan) + ". My name is Ada."); len(got) != 0 {
		t.Fatalf("read past the scan bound: %q", got)
	}
	// Not ASCII: offsets still hold.
	if got := Statements("İ. My name is Zoë Ünal."); !reflect.DeepEqual(got, []string{"My name is Zoë Ünal."}) {
		t.Fatalf("%q", got)
	}
}

func TestScope(t *testing.T) {
	c, err := ParseConfig([]byte(`{"scope_header":"X-User-ID"}`))
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(v string) func(string) (string, bool) {
		return func(name string) (string, bool) { return v, v != "" && name == "x-user-id" }
	}
	if s, from, err := c.Scope(hdr(" u-42 "), "alice"); s != "u-42" || from != "header x-user-id" || err != nil {
		t.Fatalf("header: %q %q %v", s, from, err)
	}
	if s, from, _ := c.Scope(hdr(""), "alice"); s != "alice" || from != "user" {
		t.Fatalf("user fallback: %q %q", s, from)
	}
	if s, _, err := c.Scope(hdr(""), ""); s != "" || err != nil {
		t.Fatalf("none: %q %v", s, err)
	}
	if _, _, err := c.Scope(hdr(strings.Repeat("u", MaxScopeBytes+1)), ""); err == nil {
		t.Fatal("an over-long scope was accepted")
	}
	if _, _, err := c.Scope(hdr("a\x00b"), ""); err == nil {
		t.Fatal("a scope with a control character was accepted")
	}
}

func TestInject(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"top_k":2,"template":"Known: {memories}"}`))
	msgs := parse(t, `[{"role":"system","content":"sys"},{"role":"developer","content":"dev"},{"role":"user","content":"what should I eat?"}]`)
	res := c.Inject(msgs, []Recalled{{Text: "I'm a vegetarian.", Score: 0.8}, {Text: "  "}, {Text: "I live\nin Lisbon.", Score: 0.5}, {Text: "third", Score: 0.4}})
	if res.Injected != 2 || len(res.Edits) != 1 || res.Edits[0].Index != 2 || !reflect.DeepEqual(res.Texts, []string{"I'm a vegetarian.", "I live in Lisbon."}) {
		t.Fatalf("%+v", res)
	}
	out, err := chatmsg.Apply(chatmsg.Raws(msgs), res.Edits)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[2]) != `{"role":"system","content":"Known: - I'm a vegetarian.\n- I live in Lisbon."}` {
		t.Fatalf("injected %s", out[2])
	}
	if r := c.Inject(msgs, nil); r.Injected != 0 || len(r.Edits) != 0 {
		t.Fatalf("nothing to inject: %+v", r)
	}
	small, _ := ParseConfig([]byte(`{"max_memory_chars":10}`))
	if r := small.Inject(msgs, []Recalled{{Text: "I like very long memories"}, {Text: "second"}}); r.Chars > 10 || r.Injected != 1 {
		t.Fatalf("bounded: %+v", r)
	}
}

func TestSuppliedAndHits(t *testing.T) {
	got, err := ParseSupplied(json.RawMessage(`["I'm a vegetarian.", {"text":"I live in Lisbon."}]`))
	if err != nil || len(got) != 2 || got[1].Text != "I live in Lisbon." {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{`"one string"`, `[1]`, `[{"id":"x"}]`} {
		if _, err := ParseSupplied(json.RawMessage(bad)); err == nil || !strings.Contains(err.Error(), "supplied_memories") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	m := Memories([]sdk.VectorHit{{ID: "mem_1", Score: 0.7, Payload: []byte(`{"id":"mem_1","text":"I'm a vegetarian.","created_at":1700000000}`)}, {ID: "bad", Payload: []byte("x")}})
	if len(m) != 1 || m[0].Text != "I'm a vegetarian." {
		t.Fatalf("%+v", m)
	}
}

func TestConfig(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil || c.TopK != DefaultTopK || *c.MinScore != DefaultMinScore || !*c.Remember || c.ScopeHeader != "" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = ParseConfig([]byte(`{"min_score":0,"remember":false}`))
	if err != nil || *c.MinScore != 0 || *c.Remember {
		t.Fatalf("explicit zero and false: %+v %v", c, err)
	}
	for cfg, want := range map[string]string{
		`{"top_k":0.5}`:              "configuration.top_k",
		`{"top_k":21}`:               "configuration.top_k",
		`{"min_score":1.5}`:          "configuration.min_score",
		`{"template":"no marker"}`:   "configuration.template",
		`{"scope_header":"x user"}`:  "configuration.scope_header",
		`{"max_memory_chars":70000}`: "configuration.max_memory_chars",
		`{"remember":"yes"}`:         "configuration.remember",
		`{"scope":"x"}`:              "configuration.scope",
	} {
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", cfg, err, want)
		}
	}
}
