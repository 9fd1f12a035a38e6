package responsecache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/slots"
)

// oldHash is how the keys were hashed before they were written part by part:
// the whole struct encoded at once. Keys must not change (entries stored by
// an older build would stop matching, and previews show them).
func oldHash(ns string, params map[string]any, msgs []any) string {
	b, _ := json.Marshal(struct {
		NS       string         `json:"ns"`
		Params   map[string]any `json:"p"`
		Messages []any          `json:"m"`
	}{ns, params, msgs})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestKeysHashUnchanged(t *testing.T) {
	c, err := ParseConfig([]byte(`{"mode":"exact_then_semantic"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"What is <b>1 & 2</b>?"}]}`,
		`{"model":"m","temperature":0.70,"max_tokens":1e2,"z":{"b":1,"a":[1,2.50]},"messages":[{"role":"system","content":"be \u00e9 brief"},{"content":"hi","role":"user"},{"role":"assistant","content":"hello"},{"role":"user","content":[{"type":"text","text":"Paris?"}]}]}`,
		`{"messages":[]}`,
		`{"messages":[{"role":"assistant","content":"only"}],"stream":true,"user":"u"}`,
		`{"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b\u2028c \ud800 \"q\" \\ \t é 😀"}],"x":1,"x":2}`,
		`{"messages":[{"role":"user","content":"n","b":1,"b":{"z":null,"a":true,"\u00e9":false,"a\u0041":[]}}],"n":[0,-0,1.5e300,1e-7,123456789012345678,0.1,-12,1E2,100000000000000000000000]}`,
		` { "messages" : [ { "role" : "user" , "content" : "spaced" } ] , "top_p" : 1 } `,
		"{\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff utf8\"}],\"k\xfe\":1}",
		`null`,
		`{}`,
	} {
		k, err := c.Keys([]byte(body), "d", "m")
		if err != nil {
			t.Fatal(body, err)
		}
		var fields map[string]json.RawMessage
		_ = json.Unmarshal([]byte(body), &fields)
		if s := slots.Extract(k.Query).Signature(); k.Slots != s {
			t.Errorf("%s: slots %q, want %q", body, k.Slots, s)
		}
		msgs, _ := chatmsg.Parse(fields["messages"])
		params := map[string]any{}
		for name, raw := range fields {
			if ignored[name] || name == "messages" {
				continue
			}
			var v any
			_ = json.Unmarshal(raw, &v)
			params[name] = v
		}
		last := chatmsg.LastUser(msgs)
		all, ctx := []any{}, []any{}
		for i, m := range msgs {
			var v any
			_ = json.Unmarshal(m.Raw, &v)
			all = append(all, v)
			if i == last {
				ctx = append(ctx, "<query>")
			} else {
				ctx = append(ctx, v)
			}
		}
		if want := oldHash(k.Namespace, params, all); k.Exact != want {
			t.Errorf("%s: exact key %s, want %s", body, k.Exact, want)
		}
		if want := oldHash(k.Namespace, params, ctx); k.Context != want {
			t.Errorf("%s: context key %s, want %s", body, k.Context, want)
		}
	}
}

func TestAppendCanonMatchesEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`"x"`, `"<&>"`, `"\u0041\n\b\f\u001f\u007f"`, `"\u2028\u2029"`, `"é"`, "\"\xff\xfe\"",
		`0`, `-0`, `10`, `-999999999999999`, `9999999999999999`, `1.0`, `1e21`, `1e20`, `1e-6`, `1e-7`, `-1.25E+3`,
		`true`, `false`, `null`, `[]`, `{}`, `[1,[2,{"b":2,"a":1}]]`, `{"a":1,"a":2,"A":3,"":4}`,
		`{"\u0062":1,"b":2}`, `{"b":1,"\u0062":2}`, `{"z":{"y":{"x":[" s "]}}}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatal(raw, err)
		}
		want, _ := json.Marshal(v)
		got, err := appendCanon(nil, []byte(raw))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: got %s (%v), want %s", raw, got, err, want)
		}
	}
	if _, err := appendCanon(nil, []byte(`1e400`)); err == nil {
		t.Error("1e400: no error; encoding/json refuses it")
	}
}

func TestKeysErrorsUnchanged(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		`[1]`:                       "the request body is not a JSON object: json: cannot unmarshal array into Go value of type map[string]json.RawMessage",
		`{"a"`:                      "the request body is not a JSON object: unexpected end of JSON input",
		`{"messages":[],"x":1e400}`: "x: json: cannot unmarshal number 1e400 into Go value of type float64",
	} {
		if _, err := c.Keys([]byte(body), "d", "m"); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", body, err, want)
		}
	}
}
