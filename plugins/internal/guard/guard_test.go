package guard

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAnswerTextHostile(t *testing.T) {
	for body, want := range map[string]string{
		`{"object":"chat.completion","choices":[{"message":{"content":"hi"}}]}`:                                              "hi",
		`{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]}}]}`: "a\nb",
		`{"choices":[{"message":{"content":null,"tool_calls":[{}]}}]}`:                                                       "",
		`{"choices":[{"message":{"content":"x"}},{"message":{"content":"y"}}]}`:                                              "x\ny",
	} {
		got, err := AnswerText([]byte(body))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", body, got, err, want)
		}
	}
	for _, body := range []string{``, `null`, `[]`, `{"choices":null}`, `{"choices":[{"message":{"content":5}}]}`, `{"choices":"x"}`, "\x00\xff"} {
		if _, err := AnswerText([]byte(body)); err == nil {
			t.Errorf("%q: no error", body)
		}
	}
}

func TestClaims(t *testing.T) {
	text := "Short one. This sentence has enough words in it! Another claim follows here?\nA line without a stop that is long enough"
	cs := Claims(text, 4, 10)
	if len(cs) != 3 {
		t.Fatalf("%+v", cs)
	}
	for _, c := range cs {
		if text[c.Start:c.End] != c.Text {
			t.Errorf("span %d-%d is %q, not %q", c.Start, c.End, text[c.Start:c.End], c.Text)
		}
	}
	if got := Spans(cs); got != "11-48,49-76,77-118" {
		t.Errorf("spans %s", got)
	}
	if cs := Claims(text, 4, 1); len(cs) != 1 {
		t.Errorf("max not honoured: %d", len(cs))
	}
	// Hostile: no punctuation, only separators, invalid UTF-8, a huge text.
	for _, s := range []string{"", "...!!!???\n\n\n", "\xff\xfe words words words words.", strings.Repeat("word ", 100000)} {
		for _, c := range Claims(s, 1, 32) {
			if c.Start < 0 || c.End > len(s) || c.Start > c.End || s[c.Start:c.End] != c.Text {
				t.Fatalf("bad span %+v", c)
			}
		}
	}
}

func TestCutKeepsCharacters(t *testing.T) {
	s := strings.Repeat("é", 10)
	for n := 0; n <= len(s); n++ {
		got, cut := Cut(s, n)
		if !utf8.ValidString(got) || len(got) > n || cut != (n < len(s)) {
			t.Fatalf("Cut(%d) = %q, %v", n, got, cut)
		}
	}
}

func TestStringOrList(t *testing.T) {
	got, err := StringOrList([]byte(`["a", {"text":"b","source":"s"}]`))
	if err != nil || strings.Join(got, "|") != "a|b" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{`5`, `{"text":"x"}`, `[1]`, `[{"source":"s"}]`} {
		if _, err := StringOrList([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestOverlap(t *testing.T) {
	g := WordSet([]string{"Refunds are accepted within 30 days."})
	if o := Overlap("Refunds are accepted within 30 days", g); o != 1 {
		t.Errorf("supported claim: %v", o)
	}
	if o := Overlap("Refunds take ninety days", g); o >= 0.6 {
		t.Errorf("unsupported claim: %v", o)
	}
	if o := Overlap("it is so", g); o != 1 {
		t.Errorf("a claim with no content words counts as supported: %v", o)
	}
}
