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
