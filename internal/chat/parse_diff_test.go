package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// diffCorpus holds bodies that exercise the single-pass parser's fast paths
// and every fallback to encoding/json.
var diffCorpus = []string{
	`{"model":"MoM","messages":[{"role":"user","content":"hello"}]}`,
	` {"model":"MoM","messages":[{"role":"user","content":"hello"}]} `,
	`{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"What is 2+2?"}],"max_tokens":64,"temperature":0.2}`,
	`{"model":"auto","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:"}}]}],"stream":true}`,
	`{"model":"MoM","messages":[{"role":"user","content":"a \"quoted\" \u00e9 line\nnext"}]}`,
	`{"model":"M\u006fM","messages":[{"role":"user","content":"escaped model"}]}`,
	`{"model":"MoM","messages":[{"role":"us\u0065r","content":"escaped role"}]}`,
	`{"model":"MoM","messages":[{"rol\u0065":"user","content":"escaped key"}]}`,
	`{"model":"MoM","messages":[{"Role":"user","content":"case-folded key"}]}`,
	`{"model":"MoM","messages":[{"role":"user","CONTENT":"case-folded content"}]}`,
	`{"model":"MoM","messages":[{"role":"user","content":"first","content":"second"}]}`,
	`{"model":"MoM","messages":[{"role":5,"content":"x"}]}`,
	`{"model":"MoM","messages":[{"role":null,"content":"x"}]}`,
	`{"model":"MoM","messages":[null]}`,
	`{"model":"MoM","messages":[1,2]}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"},"x"]}`,
	`{"model":"MoM","messages":[{"role":"user","content":null,"tool_calls":[]}]}`,
	`{"model":"MoM","messages":[{"role":"user"}]}`,
	`{"model":"MoM","messages":[{"role":"user","content":{"a":1}}]}`,
	`{"model":"MoM","messages":[{"role":"user","content":[1]}]}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x","name":"n\u00e9","ſ":1}]}`,
	`{"model":"MoM","messages":[{"role":"user","rølé":"x","content":"y"}]}`,
	`{"model":"MoM","messages":[ { "role" : "user" , "content" : "spaced" } ] , "n" : 2 }`,
	`{"model":"MoM","messages":[]}`,
	`{"model":"MoM","messages":{}}`,
	`{"model":"MoM","messages":null}`,
	`{"model":null,"messages":[]}`,
	`{"model":"","messages":[]}`,
	`{"model":["MoM"],"messages":[]}`,
	`{"model":"MoM","model":"auto","messages":[{"role":"user","content":"dup model"}]}`,
	`{"m\u006fdel":"MoM","messages":[{"role":"user","content":"escaped model key"}],"stre\u0061m":"x"}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"max_tokens":"a","max_tokens":3,"n":1,"n":"b"}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"stream":"no","stream":true,"tools":[],"tools":[{}]}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"} , {"role":"assistant","content":"y","name":"a"},{}]}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"stream":"yes"}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"stream":false}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"stream":null}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"stream_options":[]}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"},{}]}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"tools":"t"}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"max_tokens":-12}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"max_tokens":1e3}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"max_tokens":99999999999999999999}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"max_completion_tokens":"5"}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"temperature":1}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"temperature":1e400}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"temperature":true}`,
	`{"model":"MoM","messages":[{"role":"user","content":"<b>&amp;</b> \u2028"}],"x<y":"a&b"}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"k\u00e9y":1,"ke\"y":2,"":3}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],"x_extra":{"keep": [1, 2, {"a" : null}]}}`,
	`{"model":"MoM",`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}]}}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}]} {}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x"}],}`,
	`{"model":"MoM","messages":[{"role":"user","content":"x\u12"}]}`,
	`{}`,
	`{"a":1}`,
	`[1,2]`,
	``,
	`   `,
	`not json`,
	"{\"model\":\"\xff\"}",
	"{\"model\":\"MoM\",\"messages\":[{\"role\":\"user\",\"content\":\"tab\there\"}]}",
}

// sameParse fails t unless Parse and parseReference agree on body: the same
// error, or the same request (Fields byte for byte) and the same encoding.
func sameParse(t *testing.T, body []byte) {
	t.Helper()
	got, gerr := Parse(append([]byte(nil), body...))
	want, werr := parseReference(append([]byte(nil), body...))
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: Parse error %v, reference error %v", body, gerr, werr)
	}
	if werr != nil {
		var ge, we *Error
		if !errors.As(gerr, &ge) || !errors.As(werr, &we) || *ge != *we {
			t.Fatalf("%q: Parse error %#v, reference error %#v", body, gerr, werr)
		}
		return
	}
	if len(got.Fields) != len(want.Fields) {
		t.Fatalf("%q: fields %v, reference %v", body, got.Fields, want.Fields)
	}
	for k, v := range want.Fields {
		if g, ok := got.Fields[k]; !ok || !bytes.Equal(g, v) {
			t.Fatalf("%q: field %q = %q, reference %q", body, k, g, v)
		}
	}
	g, w := *got, *want
	g.Fields, w.Fields = nil, nil
	// What Parse noted as compact is Encode's shortcut, checked by
	// sameEncode below and TestValidMutations, not part of the request.
	g.compactValues, g.nCompact = w.compactValues, w.nCompact
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%q: parsed %+v, reference %+v", body, g, w)
	}
	sameEncode(t, got)
}

// sameEncode fails t unless Encode writes what json.Marshal writes.
func sameEncode(t *testing.T, r *Request) {
	t.Helper()
	got, gerr := r.Encode()
	want, werr := encodeReference(r)
	if (gerr == nil) != (werr == nil) || (werr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("Encode error %v, json.Marshal error %v", gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode wrote\n%s\njson.Marshal writes\n%s", got, want)
	}
}

func TestParseMatchesEncodingJSON(t *testing.T) {
	for _, body := range diffCorpus {
		sameParse(t, []byte(body))
	}
}

func TestEncodeMatchesEncodingJSON(t *testing.T) {
	r, err := Parse([]byte(`{"model":"MoM","messages":[{"role":"user","content":"hi"}],"x":{ "a" : [ 1 , 2 ] }}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{"big", 3, nil, map[string]any{"k": "<&>"}, []string{"\u2028", "é"}} {
		if err := r.Set("set", v); err != nil {
			t.Fatal(err)
		}
		sameEncode(t, r)
	}
	for _, s := range []string{"small", "", "a b", "a\"b", "<x>", "a&b", "é", "tab\t", "\x7f", "\xff"} {
		if err := r.Set("s", s); err != nil {
			t.Fatal(err)
		}
		if want, _ := json.Marshal(s); !bytes.Equal(r.Fields["s"], want) {
			t.Errorf("Set(%q) stored %s, json.Marshal writes %s", s, r.Fields["s"], want)
		}
	}
	r.Fields["nil"] = nil
	sameEncode(t, r)
	for i := range 20 { // more fields than Encode's buffer on the stack
		r.Fields[fmt.Sprintf("f%02d", 19-i)] = json.RawMessage(fmt.Sprintf(`[%d, "x"]`, i))
	}
	sameEncode(t, r)
	r.Fields["k\u00e9y<"] = json.RawMessage(`"v"`)
	sameEncode(t, r)
	for _, bad := range []string{``, `{`, `1,2`, `"x`, `nul`} {
		r.Fields["bad"] = json.RawMessage(bad)
		sameEncode(t, r)
	}
}

func FuzzParseMatchesEncodingJSON(f *testing.F) {
	for _, s := range diffCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameParse(t, body)
	})
}

func TestMembers(t *testing.T) {
	tests := []struct {
		in   string
		keys []string
		vals []string
		err  bool
	}{
		{in: `{}`},
		{in: ` { } `},
		{in: `{"a":1,"b" : {"c":[1,"}"]} ,"a":"x\"y"}`, keys: []string{"a", "b", "a"}, vals: []string{`1`, `{"c":[1,"}"]}`, `"x\"y"`}},
		{in: `{"k\u0065y":null}`, keys: []string{"key"}, vals: []string{`null`}},
		{in: `[]`, err: true},
		{in: `"s"`, err: true},
		{in: `{"a":1`, err: true},
		{in: `{"a":1}x`, err: true},
		{in: `{"a" 1}`, err: true},
		{in: `{"a":1 "b":2}`, err: true},
	}
	for _, tt := range tests {
		ms, err := Members(nil, []byte(tt.in))
		if (err != nil) != tt.err {
			t.Fatalf("%s: err %v", tt.in, err)
		}
		if tt.err {
			continue
		}
		if len(ms) != len(tt.keys) {
			t.Fatalf("%s: %d members, want %d", tt.in, len(ms), len(tt.keys))
		}
		for i, m := range ms {
			if m.Name() != tt.keys[i] || !m.Is(tt.keys[i]) || string(m.Value) != tt.vals[i] {
				t.Fatalf("%s: member %d = %q:%s", tt.in, i, m.Name(), m.Value)
			}
		}
	}
}
