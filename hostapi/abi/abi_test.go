package abi_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
)

func TestRequestRoundTrip(t *testing.T) {
	in := abi.Request{
		Phase: abi.PhaseResponse, Mode: abi.ModeProbe, Decision: "code", Model: "coder",
		Headers:  []abi.Header{{Name: "X-A", Value: "1"}, {Name: "X-A", Value: "2"}},
		Messages: []abi.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "héllo\n"}},
		Signals:  []abi.Signal{{Kind: "domain", Name: "math"}},
		Body:     []byte(`{"model":"coder"}`), Status: 200, ResponseBody: []byte(`{"choices":[]}`),
	}
	out, err := abi.DecodeRequest(in.Append(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n%+v\n%+v", in, out)
	}
	b := in.Append(nil)
	for n := 0; n < len(b); n++ {
		if _, err := abi.DecodeRequest(b[:n]); err == nil {
			t.Fatalf("a request cut at %d of %d bytes decoded", n, len(b))
		}
	}
	b[0] = 9
	if _, err := abi.DecodeRequest(b); !errors.Is(err, abi.ErrVersion) {
		t.Fatalf("version 9: %v", err)
	}
}

func TestResultRoundTrip(t *testing.T) {
	in := abi.Result{
		Skipped: true, Detail: "d", CacheStatus: "hit",
		Values:    []abi.KV{{Key: "kept_tokens", Value: "12"}},
		Immediate: &abi.Immediate{Status: 200, Content: "cached"},
		Mutations: []abi.Mutation{
			{Op: abi.OpMessageInsert, Index: 0, Value: []byte(`{"role":"system","content":"x"}`)},
			{Op: abi.OpHeaderSet, Name: "x-a", Value: []byte("1")},
			{Op: abi.OpFieldRemove, Name: "logit_bias", Value: []byte{}},
		},
	}
	b := in.Append(nil)
	out, err := abi.DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n%+v\n%+v", in, out)
	}
	if _, err := abi.DecodeResult(append(b, 0)); err == nil {
		t.Fatal("trailing bytes decoded")
	}
	// A count larger than the bytes left is refused before allocating.
	huge := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if _, err := abi.DecodeResult(huge); err == nil {
		t.Fatal("a huge count decoded")
	}
}

func TestHostCallRecords(t *testing.T) {
	a := abi.CacheStoreArgs{Namespace: "n", Key: "k", Value: []byte("v"), TTLSeconds: 60, Embedding: []float32{0.5, -1}}
	got, err := abi.DecodeCacheStoreArgs(a.Append(nil))
	if err != nil || !reflect.DeepEqual(a, got) {
		t.Fatalf("%+v %v", got, err)
	}
	hits := abi.VectorHits{{ID: "a", Score: 0.9, Payload: []byte("p")}}
	gh, err := abi.DecodeVectorHits(hits.Append(nil))
	if err != nil || !reflect.DeepEqual(hits, gh) {
		t.Fatalf("%+v %v", gh, err)
	}
	cl := abi.Classes{{Label: "math", Score: 0.7}}
	gc, err := abi.DecodeClasses(cl.Append(nil))
	if err != nil || !reflect.DeepEqual(cl, gc) {
		t.Fatalf("%+v %v", gc, err)
	}
}

func TestDescriptorJSON(t *testing.T) {
	d := abi.Descriptor{ABIVersion: abi.Version, Type: "t<>", Version: "1", Description: "quote \" and \\ and \n",
		Phases: []string{"request"}, Schema: abi.RawJSON(`{"type":"object"}`),
		Operations: []abi.Operation{{Name: "op", Kind: abi.KindMutation}}}
	b := d.AppendJSON(nil)
	var back abi.Descriptor
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(d, back) {
		t.Fatalf("round trip:\n%+v\n%+v", d, back)
	}
	for _, s := range []string{"", "a\x01b", "ü", "\u2028"} {
		var got string
		if err := json.Unmarshal(abi.AppendJSONString(nil, s), &got); err != nil || got != s {
			t.Errorf("%q: %q %v", s, got, err)
		}
	}
}

func FuzzDecodeResult(f *testing.F) {
	f.Add((&abi.Result{Detail: "x", Mutations: []abi.Mutation{{Op: 1}}}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := abi.DecodeResult(b)
		if err != nil {
			return
		}
		again, err := abi.DecodeResult(r.Append(nil))
		if err != nil || !reflect.DeepEqual(normal(r), normal(again)) {
			t.Fatalf("re-encoding changed the result: %v", err)
		}
	})
}

// normal makes empty and nil byte slices equal.
func normal(r abi.Result) abi.Result {
	for i := range r.Mutations {
		if len(r.Mutations[i].Value) == 0 {
			r.Mutations[i].Value = nil
		}
	}
	return r
}

func TestRequestSize(t *testing.T) {
	r := abi.Request{Decision: "d", Model: "m", Headers: []abi.Header{{Name: "a", Value: "b"}},
		Messages: []abi.Message{{Role: "user", Content: "hi"}}, Signals: []abi.Signal{{Kind: "k", Name: "n"}},
		Body: []byte("{}"), ResponseBody: []byte("x")}
	if got, want := r.Size(), len(r.Append(nil)); got != want {
		t.Fatalf("Size = %d, record is %d bytes", got, want)
	}
}

func TestStoredDataRecords(t *testing.T) {
	r := abi.RetrieveArgs{Source: "kb", Query: "q", K: 4, MinScore: 0.25, HasMinScore: true, Filter: `{"type":"eq","key":"a","value":1}`}
	b := r.Append(nil)
	gr, err := abi.DecodeRetrieveArgs(b)
	if err != nil || !reflect.DeepEqual(r, gr) {
		t.Fatalf("%+v %v", gr, err)
	}
	for n := 0; n < len(b); n++ {
		if _, err := abi.DecodeRetrieveArgs(b[:n]); err == nil {
			t.Fatalf("retrieve args cut at %d of %d bytes decoded", n, len(b))
		}
	}
	r2 := abi.RetrieveArgs{Source: "vs_1", Query: "q"}
	if g, err := abi.DecodeRetrieveArgs(r2.Append(nil)); err != nil || g.HasMinScore || g.Filter != "" {
		t.Fatalf("%+v %v", g, err)
	}
	m := abi.MemoryRecallArgs{Scope: "u1", Query: "name?", K: 3, MinScore: 0.3}
	gm, err := abi.DecodeMemoryRecallArgs(m.Append(nil))
	if err != nil || !reflect.DeepEqual(m, gm) {
		t.Fatalf("%+v %v", gm, err)
	}
	w := abi.MemoryRememberArgs{Scope: "u1", Text: "My name is Ada."}
	gw, err := abi.DecodeMemoryRememberArgs(w.Append(nil))
	if err != nil || !reflect.DeepEqual(w, gw) {
		t.Fatalf("%+v %v", gw, err)
	}
	if _, err := abi.DecodeMemoryRememberArgs(w.Append(nil)[:5]); err == nil {
		t.Fatal("a cut remember record decoded")
	}
}

// Revision 3: an immediate answer may carry tool calls (flag bit 3); one
// without them encodes as before.
func TestImmediateToolCallsRoundTrip(t *testing.T) {
	with := abi.Result{Immediate: &abi.Immediate{Status: 200, ToolCalls: []byte(`[{"id":"c1"}]`)}}
	got, err := abi.DecodeResult(with.Append(nil))
	if err != nil || !reflect.DeepEqual(with, got) {
		t.Fatalf("%+v %v", got, err)
	}
	plain := abi.Result{Immediate: &abi.Immediate{Status: 200, Content: "hi"}}
	b := plain.Append(nil)
	if b[0] != 1<<2 {
		t.Fatalf("flags %08b: an answer without tool calls sets bit 3", b[0])
	}
	if got, err := abi.DecodeResult(b); err != nil || got.Immediate.ToolCalls != nil || got.Immediate.Content != "hi" {
		t.Fatalf("%+v %v", got, err)
	}
}
