package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, body, param, msg string
	}{
		{"empty", ``, "", "empty"},
		{"not an object", `[1,2]`, "", "JSON object"},
		{"malformed", `{"model":"MoM",`, "", "not valid JSON"},
		{"invalid utf8", "{\"model\":\"MoM\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "", "UTF-8"},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model", "model"},
		{"model not string", `{"model":3,"messages":[{"role":"user","content":"hi"}]}`, "model", "string"},
		{"empty model", `{"model":" ","messages":[{"role":"user","content":"hi"}]}`, "model", "empty"},
		{"no messages", `{"model":"MoM"}`, "messages", "messages"},
		{"messages not array", `{"model":"MoM","messages":"hi"}`, "messages", "array"},
		{"messages empty", `{"model":"MoM","messages":[]}`, "messages", "at least one"},
		{"no role", `{"model":"MoM","messages":[{"content":"hi"}]}`, "messages[0].role", "role"},
		{"bad role", `{"model":"MoM","messages":[{"role":"robot","content":"hi"}]}`, "messages[0].role", "robot"},
		{"content number", `{"model":"MoM","messages":[{"role":"user","content":5}]}`, "messages[0].content", "string or an array"},
		{"stream not bool", `{"model":"MoM","messages":[{"role":"user","content":"hi"}],"stream":"yes"}`, "stream", "boolean"},
		{"max_tokens not int", `{"model":"MoM","messages":[{"role":"user","content":"hi"}],"max_tokens":"ten"}`, "max_tokens", "integer"},
		{"temperature not number", `{"model":"MoM","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`, "temperature", "number"},
		{"tools not array", `{"model":"MoM","messages":[{"role":"user","content":"hi"}],"tools":{}}`, "tools", "array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.body))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if e.Param != tt.param || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("got param %q msg %q; want param %q msg containing %q", e.Param, e.Message, tt.param, tt.msg)
			}
		})
	}
}

func TestParseContent(t *testing.T) {
	body := `{"model":"MoM","stream":true,"stream_options":{"include_usage":true},"x_extra":{"keep":1},
	"tools":[{"type":"function","function":{"name":"f"}}],
	"messages":[{"role":"system","content":"sys"},
	{"role":"user","content":[{"type":"text","text":"part one"},{"type":"image_url","image_url":{"url":"data:"}},{"type":"text","text":"part two"}]},
	{"role":"assistant","content":null,"tool_calls":[]},
	{"role":"user","content":"last question"}]}`
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Stream || !r.IncludeUsage || r.Tools != 1 || r.Model != "MoM" {
		t.Fatalf("parsed %+v", r)
	}
	if r.Messages[1].Content != "part one\npart two" {
		t.Fatalf("parts flattened to %q", r.Messages[1].Content)
	}
	if r.LastUserText() != "last question" {
		t.Fatalf("last user text %q", r.LastUserText())
	}
	if err := r.Set("model", "big"); err != nil {
		t.Fatal(err)
	}
	out, _ := r.Encode()
	var back map[string]any
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if back["model"] != "big" || back["x_extra"] == nil {
		t.Fatalf("re-encoded body lost fields: %s", out)
	}
}

func FuzzChatParse(f *testing.F) {
	for _, s := range []string{
		`{"model":"MoM","messages":[{"role":"user","content":"hello"}]}`,
		`{"model":"auto","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"stream":true}`,
		`{"model":"MoM","messages":[]}`,
		`{"model":null}`,
		`not json`,
		"{\"model\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Parse(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if r.Model == "" || len(r.Messages) == 0 {
			t.Fatalf("accepted a request without model or messages: %q", body)
		}
		if _, err := r.Encode(); err != nil {
			t.Fatalf("accepted body does not re-encode: %v", err)
		}
	})
}

func TestIsNullMatchesTrimSpace(t *testing.T) {
	for _, s := range []string{"", "n", "nul", "null", "nulL", " null", "null ", "\tnull\n", "\u00a0null", "null\u0085", "\u00a0null\u00a0", "xnull", "nullx", "true", `"null"`} {
		if got, want := isNull([]byte(s)), string(bytes.TrimSpace([]byte(s))) == "null"; got != want {
			t.Errorf("isNull(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestMemberIsMatchesName(t *testing.T) {
	keys := []string{`usage`, `usag`, `usagex`, `us\u0061ge`, `\u0075sage`, `usage\n`, `u\x`, `\u00e9`, `é`, `a\\b`, `a\b`, `\ud83d\ude00`, `😀`, `\ud83d`, ``,
		// Escapes and invalid UTF-8: each invalid byte decodes to U+FFFD,
		// so the name is longer than the key.
		"a\\n\xff", "\\t\xff\xfe", "\xff"}
	for _, k := range keys {
		m := Member{Key: []byte(k)}
		for _, name := range append(keys, "usage", "routing_metadata", "é", `a\b`, "\ufffd", "😀", "a\n\ufffd", "\t\ufffd\ufffd", "\ufffd\ufffd") {
			if strings.ContainsRune(name, utf8.RuneError) && !utf8.ValidString(k) && strings.Contains(k, `\`) {
				continue // Is's documented exception
			}
			if got, want := m.Is(name), m.Name() == name; got != want {
				t.Errorf("Member{%q}.Is(%q) = %v, Name() is %q", k, name, got, m.Name())
			}
		}
	}
}
