package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/recipes"
)

// mutator is a module whose configuration is the list of mutations it
// answers with; it keeps a copy of every record it is called with.
type mutator struct{ seen []*abi.Request }

func (*mutator) Has(string) bool                        { return true }
func (*mutator) HasResponse(string) bool                { return false }
func (*mutator) Validate(string, json.RawMessage) error { return nil }

func (m *mutator) Call(_ context.Context, _ string, config json.RawMessage, in *abi.Request) (ModuleResult, error) {
	cp := *in
	cp.Headers, cp.Messages, cp.Signals = slices.Clone(in.Headers), slices.Clone(in.Messages), slices.Clone(in.Signals)
	cp.Body = bytes.Clone(in.Body)
	m.seen = append(m.seen, &cp)
	var ops []abi.Mutation
	if err := json.Unmarshal(config, &ops); err != nil {
		return ModuleResult{}, err
	}
	return ModuleResult{Result: abi.Result{Mutations: ops}}, nil
}

// A decision's plugins share one request record, rebuilt only where a
// plugin's mutation changed the request: each plugin must still see the
// record built from scratch of the request as the plugins before it left it.
func TestLaterPluginsSeeEarlierMutations(t *testing.T) {
	steps := [][]abi.Mutation{
		{{Op: abi.OpMessageInsert, Index: 0, Value: []byte(`{"role":"system","content":"be brief"}`)}},
		{{Op: abi.OpHeaderSet, Name: "x-tenant", Value: []byte("acme")}, {Op: abi.OpHeaderAdd, Name: "X-A", Value: []byte("1")}},
		nil, // changes nothing: the next plugin sees the same record
		{{Op: abi.OpFieldSet, Name: "temperature", Value: []byte(`0.5`)}},
		{{Op: abi.OpHeaderRemove, Name: "x-tenant"}, {Op: abi.OpMessageReplace, Index: 1, Value: []byte(`{"role":"user","content":[{"type":"text","text":"hi there"}]}`)}},
		{{Op: abi.OpFieldRemove, Name: "temperature"}, {Op: abi.OpMessageRemove, Index: 0}},
		nil,
	}
	refs := make([]recipes.PluginRef, len(steps))
	for i, ops := range steps {
		raw, _ := json.Marshal(ops)
		if ops == nil {
			raw = []byte(`[]`)
		}
		refs[i] = recipes.PluginRef{Type: "mutator", Configuration: raw}
	}
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1}`
	mods := &mutator{}
	req := newReq(t, body)
	req.Header.Set("X-B", "b")
	req.Signals = []Signal{{Kind: "keyword", Name: "refund"}}
	out, err := New(mods).Request(context.Background(), refs, req)
	if err != nil {
		t.Fatalf("stage: %v (%+v)", err, out.Reports)
	}
	if len(mods.seen) != len(steps) {
		t.Fatalf("%d calls, want %d", len(mods.seen), len(steps))
	}

	// The same plugins one stage run each, so every record is built anew.
	alone := &mutator{}
	st := New(alone)
	want := newReq(t, body)
	want.Header.Set("X-B", "b")
	want.Signals = req.Signals
	for i := range steps {
		mode, _ := abi.ParseMode(want.Mode)
		in := abiRequest(want, mode)
		if !reflect.DeepEqual(mods.seen[i], in) {
			t.Errorf("plugin %d saw\n%+v\nbuilt anew the record is\n%+v", i, mods.seen[i], in)
		}
		releaseRequest(in)
		if _, err := st.Request(context.Background(), refs[i:i+1], want); err != nil {
			t.Fatalf("plugin %d alone: %v", i, err)
		}
	}
	if !reflect.DeepEqual(req.Header, want.Header) || !bytes.Equal(rawBody(req.Chat), rawBody(want.Chat)) {
		t.Errorf("the shared-record run left %v %s, one by one %v %s", req.Header, rawBody(req.Chat), want.Header, rawBody(want.Chat))
	}
}

// blindMutator is mutator with the types named "blind" declared blind
// (BlindModules).
type blindMutator struct{ *mutator }

func (blindMutator) IgnoresRequest(typ string) bool { return typ == "blind" }

// A blind plugin is given the bare record (no headers, messages, signals or
// body), and the plugins after it still see the whole record as the plugins
// before them left the request, the blind plugin's own edits included.
func TestBlindPluginGetsBareRecord(t *testing.T) {
	ref := func(typ string, ops []abi.Mutation) recipes.PluginRef {
		raw, _ := json.Marshal(ops)
		return recipes.PluginRef{Type: typ, Configuration: raw}
	}
	refs := []recipes.PluginRef{
		ref("mutator", []abi.Mutation{{Op: abi.OpMessageInsert, Index: 0, Value: []byte(`{"role":"system","content":"be brief"}`)}}),
		ref("blind", []abi.Mutation{{Op: abi.OpHeaderSet, Name: "x-tenant", Value: []byte("acme")}}),
		ref("blind", []abi.Mutation{{Op: abi.OpFieldSet, Name: "temperature", Value: []byte(`0.5`)}}),
		ref("mutator", []abi.Mutation{}),
	}
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1}`
	mods := blindMutator{&mutator{}}
	req := newReq(t, body)
	req.Header.Set("X-B", "b")
	req.Signals = []Signal{{Kind: "keyword", Name: "refund"}}
	req.Decision, req.Model = "d", "m"
	if out, err := New(mods).Request(context.Background(), refs, req); err != nil {
		t.Fatalf("stage: %v (%+v)", err, out.Reports)
	}
	if len(mods.seen) != len(refs) {
		t.Fatalf("%d calls, want %d", len(mods.seen), len(refs))
	}
	for _, i := range []int{1, 2} {
		want := &abi.Request{Phase: abi.PhaseRequest, Mode: abi.ModeLive, Decision: "d", Model: "m"}
		if got := mods.seen[i]; !reflect.DeepEqual(got, want) {
			t.Errorf("blind plugin %d saw\n%+v\nwant the bare record\n%+v", i, got, want)
		}
	}
	mode, _ := abi.ParseMode(req.Mode)
	last := abiRequest(req, mode)
	defer releaseRequest(last)
	if !reflect.DeepEqual(mods.seen[3], last) {
		t.Errorf("the plugin after the blind ones saw\n%+v\nbuilt anew the record is\n%+v", mods.seen[3], last)
	}
	if got := string(last.Body); got != `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"model":"m","temperature":0.5}` {
		t.Errorf("body after the stage %s", got)
	}
	if req.Header.Get("X-Tenant") != "acme" {
		t.Errorf("the blind plugin's header edit was not applied: %v", req.Header)
	}
}
