package chat

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/junction-router/junction/sdk/jsonscan"
)

// TestKnownStrings checks that known answers exactly string(b) for the
// strings it knows and nothing for any other (near misses included), and
// that parsing a request made of known keys and roles copies none of them.
func TestKnownStrings(t *testing.T) {
	for _, s := range []string{"model", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options",
		"temperature", "top_p", "tools", "tool_choice", "user", "system", "assistant", "tool", "developer", "function", "MoM", "auto"} {
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

// TestUnquoteMatchesJSONScan compares unquote and Unquote with
// jsonscan.Unquote (the answer they must give, error or not) on edge
// literals, the roles and near misses, and on random ones built from
// escapes, quotes, control characters, multi-byte and invalid bytes.
func TestUnquoteMatchesJSONScan(t *testing.T) {
	cases := []string{`""`, `"a"`, `"a\nb"`, `"\\"`, `"\""`, `"\/"`, `"\u00e9\n"`, `"\ud83d\ude00"`, `"\ud83d"`,
		`"\x"`, `"a\"`, `"` + "\x01" + `"`, `"a"b"`, `"é\tü"`, "\"\xff\\n\"", `"`, `x`, `"abc`, `"\b\f\r\t"`,
		`"system"`, `"user"`, `"assistant"`, `"tool"`, `"developer"`, `"function"`, `"sys\u0074em"`, `"User"`, `"critic"`, `"s`}
	pieces := []string{"a", "Z", " ", "é", "日本", `\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u0041`, `\ud83d\ude00`,
		`\ud800`, `\q`, `\`, `"`, "\x00", "\x1f", "\xff", "\xe2\x82", strings.Repeat("x", 300)}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteByte('"')
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		want, werr := jsonscan.Unquote([]byte(c))
		for name, f := range map[string]func([]byte) (string, error){"unquote": unquote, "Unquote": Unquote} {
			got, gerr := f([]byte(c))
			if got != want || (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Fatalf("%s(%q) = %q, %v; jsonscan.Unquote %q, %v", name, c, got, gerr, want, werr)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = Unquote([]byte(`"assistant"`)) }); n != 0 {
		t.Errorf("Unquote of a role allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = unquote([]byte(`"line one\nline two\n\"quoted\""`)) }); n != 1 {
		t.Errorf("unquote of a short escaped string allocates %v times, want 1 (the string)", n)
	}
}
