package sdk

import (
	"reflect"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
)

func TestObjectFieldAndArrayElem(t *testing.T) {
	body := []byte(` {"model":"a","nested":{"messages":[1]},"messages":[{"role":"system","content":"x, \"y\" ]"},{"role":"user"}] , "n": 3 }`)
	if v, ok := objectField(body, "n"); !ok || string(v) != "3" {
		t.Fatalf("n = %s %v", v, ok)
	}
	msgs, ok := objectField(body, "messages")
	if !ok {
		t.Fatal("no messages")
	}
	m1, ok := arrayElem(msgs, 1)
	if !ok || string(m1) != `{"role":"user"}` {
		t.Fatalf("messages[1] = %s", m1)
	}
	if _, ok := arrayElem(msgs, 2); ok {
		t.Fatal("messages[2] found")
	}
	if _, ok := objectField(body, "missing"); ok {
		t.Fatal("missing found")
	}
	if _, ok := objectField([]byte(`{"a":`), "a"); ok {
		t.Fatal("truncated object answered")
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{`"plain"`: "plain", `"a\nb\"c\\"`: "a\nb\"c\\", `"\u00e9\u4e2d"`: "é中"} {
		if got, ok := unquote([]byte(in)); !ok || got != want {
			t.Errorf("%s = %q %v", in, got, ok)
		}
	}
	for _, bad := range []string{`plain`, `"\u12"`, `"\x"`} {
		if _, ok := unquote([]byte(bad)); ok {
			t.Errorf("%s unquoted", bad)
		}
	}
}

func TestResultBuilders(t *testing.T) {
	var r Result
	r.InsertMessage(0, "system", "be \"brief\"")
	r.SetFieldInt("max_tokens", 10)
	r.Respond(429, "slow down")
	if got := string(r.r.Mutations[0].Value); got != `{"role":"system","content":"be \"brief\""}` {
		t.Fatalf("message = %s", got)
	}
	if string(r.r.Mutations[1].Value) != "10" || r.r.Immediate.Status != 429 {
		t.Fatalf("%+v", r.r)
	}
}

func TestRequestViewMatchesABI(t *testing.T) {
	in := abi.Request{Phase: abi.PhaseResponse, Mode: abi.ModePreview, Decision: "d", Model: "m",
		Headers:  []abi.Header{{Name: "X-A", Value: "1"}},
		Messages: []abi.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: ""}},
		Signals:  []abi.Signal{{Kind: "domain", Name: "math"}},
		Body:     []byte(`{}`), Status: 201, ResponseBody: []byte("r")}
	rec := in.Append(nil)
	var v Request
	if err := v.load(rec); err != nil {
		t.Fatal(err)
	}
	if m, ok := v.Message(1); !ok || m != in.Messages[1] || v.NumMessages() != 2 {
		t.Fatalf("Message(1) = %+v %v", m, ok)
	}
	resp := Response{Request: &v}
	if v.Mode() != abi.ModePreview || v.Decision() != "d" || v.Model() != "m" ||
		!reflect.DeepEqual(v.Headers(), in.Headers) || !reflect.DeepEqual(v.Messages(), in.Messages) ||
		!reflect.DeepEqual(v.Signals(), in.Signals) || string(v.Body()) != "{}" ||
		resp.Status() != 201 || string(resp.Body()) != "r" || !v.Matched("domain", "math") {
		t.Fatalf("view = %+v", v)
	}
	if h, ok := v.Header("x-a"); !ok || h != "1" {
		t.Fatalf("header = %q %v", h, ok)
	}
	for n := 0; n < len(rec); n++ {
		if err := v.load(rec[:n]); err == nil {
			t.Fatalf("a record cut at %d of %d loaded", n, len(rec))
		}
	}
}
