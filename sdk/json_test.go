package sdk

import (
	"reflect"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
)

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
