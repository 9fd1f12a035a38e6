package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestFieldAndElement(t *testing.T) {
	body := []byte(` {"model":"a","nested":{"messages":[1]},"messages":[{"role":"system","content":"x, \"y\" ]"},{"role":"user"}] , "n": 3 }`)
	if v, ok := Field(body, "n"); !ok || string(v) != "3" {
		t.Fatalf("n = %s %v", v, ok)
	}
	msgs, ok := Field(body, "messages")
	if !ok {
		t.Fatal("no messages")
	}
	m1, ok := Element(msgs, 1)
	if !ok || string(m1) != `{"role":"user"}` {
		t.Fatalf("messages[1] = %s", m1)
	}
	if _, ok := Element(msgs, 2); ok {
		t.Fatal("messages[2] found")
	}
	if _, ok := Field(body, "missing"); ok {
		t.Fatal("missing found")
	}
	if _, ok := Field([]byte(`{"a":`), "a"); ok {
		t.Fatal("truncated object answered")
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{`"plain"`: "plain", `"a\nb\"c\\"`: "a\nb\"c\\", `"\u00e9\u4e2d"`: "é中", `"\ud83d\ude00"`: "😀", `"\ud83d x"`: "\uFFFD x", "\"caf\xe9\"": "caf\uFFFD"} {
		if got, err := Unquote([]byte(in)); err != nil || got != want {
			t.Errorf("%s = %q %v", in, got, err)
		}
	}
	for _, bad := range []string{`plain`, `"\u12"`, `"\x"`} {
		if _, err := Unquote([]byte(bad)); err == nil {
			t.Errorf("%s unquoted", bad)
		}
	}
}

func TestSplice(t *testing.T) {
	for _, tc := range []struct {
		obj, name, value, want string
	}{
		{`{"role":"system","content":"a","x":1}`, "content", `"b"`, `{"role":"system","content":"b","x":1}`},
		{`{"role":"system"}`, "content", `"b"`, `{"role":"system","content":"b"}`},
		{`{}`, "content", `"b"`, `{"content":"b"}`},
		{` { "a" : [1,{"}":"]"}] , "b":2 } `, "b", `3`, ` { "a" : [1,{"}":"]"}] , "b":3 } `},
		{`{"a":1,"b":2,"c":3}`, "b", "", `{"a":1,"c":3}`},
		{`{"a":1,"b":2}`, "b", "", `{"a":1}`},
		{`{"a":1}`, "a", "", `{}`},
		{`{"a":1}`, "z", "", `{"a":1}`},
	} {
		var value []byte
		if tc.value != "" {
			value = []byte(tc.value)
		}
		got, err := Splice([]byte(tc.obj), tc.name, value)
		if err != nil || string(got) != tc.want {
			t.Errorf("Splice(%s, %s, %s) = %s, %v; want %s", tc.obj, tc.name, tc.value, got, err, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("splice gave invalid JSON %s", got)
		}
	}
}

// FuzzScanner checks the scanner against encoding/json on valid JSON: the
// same members in the same order with the same values, the same elements,
// the same strings.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`, `{"a":[1,2,{"b":"c\"}"}],"d":null,"e":true,"f":-1.5e3}`,
		`[{"role":"system","content":[{"type":"text","text":"x\u00e9"}]},{"role":"tool","tool_call_id":"1"}]`,
		`{"\u0061":"\\"}`, `[]`, `{}`, `"\ud83d\ude00"`, ` [ 1 , "two" , [ ] ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var v any
		_ = json.Unmarshal(b, &v)
		trimmed := bytes.TrimSpace(b)
		switch trimmed[0] {
		case '{':
			ms, err := Members(b)
			if err != nil {
				t.Fatalf("Members(%s): %v", b, err)
			}
			obj := v.(map[string]any)
			seen := map[string]bool{}
			for _, m := range ms {
				var mv any
				if err := json.Unmarshal(m.Value, &mv); err != nil {
					t.Fatalf("member %q value %s is not JSON", m.Name, m.Value)
				}
				seen[m.Name] = true
				if _, ok := obj[m.Name]; !ok {
					t.Fatalf("member %q not in %s", m.Name, b)
				}
			}
			if len(seen) != len(obj) {
				t.Fatalf("Members found %d names, encoding/json %d in %s", len(seen), len(obj), b)
			}
		case '[':
			es, err := Elements(b)
			if err != nil {
				t.Fatalf("Elements(%s): %v", b, err)
			}
			if len(es) != len(v.([]any)) {
				t.Fatalf("Elements found %d, encoding/json %d in %s", len(es), len(v.([]any)), b)
			}
		case '"':
			s, err := Unquote(trimmed)
			if err != nil || s != v.(string) {
				t.Fatalf("Unquote(%s) = %q, %v; want %q", trimmed, s, err, v)
			}
		}
	})
}

func TestMemberNames(t *testing.T) {
	obj := []byte(`{"role":1,"content":2,"rol\u0065":3,"type":4,"text":5,"id":6,"name":7,"tool_calls":8,"tool_call_id":9,` +
		`"function":10,"arguments":11,"other":12,"":13,"r\"ole":14,"\u00fcber":15,"a":16}`)
	ms, err := Members(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 16 {
		t.Fatalf("%d members", len(ms))
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(obj, &want); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		raw := obj[m.start:]
		name, err := Unquote(raw[:stringEnd(raw, 0)])
		if err != nil || m.Name != name {
			t.Errorf("member at %d: name %q, Unquote gives %q %v", m.start, m.Name, name, err)
		}
		if _, ok := want[m.Name]; !ok {
			t.Errorf("%q is not a member encoding/json sees", m.Name)
		}
	}
}
