package native_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/recipes"
)

// TestBindMatchesCall: a bound (type, configuration) answers what Call
// answers, for good and refused configurations of each type, both phases;
// a type without a native plugin binds to nil (Call reports it).
func TestBindMatchesCall(t *testing.T) {
	m := native.New()
	body := []byte(`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"hi"}],"model":"small"}`)
	for _, tc := range []struct{ typ, config string }{
		{TypeSystemPrompt, `{"system_prompt":"P"}`},
		{TypeSystemPrompt, `{"system_prompt":"P","mode":"replace"}`},
		{TypeSystemPrompt, `{"system_prompt":"P","mode":"sideways"}`},
		{TypeHeaderMutation, `{"add":[{"name":"x-a","value":"1"}]}`},
		{TypeHeaderMutation, ``},
		{TypeRequestParams, `{"strip_unknown":true,"max_tokens_limit":100}`},
	} {
		bound := m.Bind(tc.typ, json.RawMessage(tc.config))
		if bound == nil {
			t.Fatalf("%s %s: no bound call", tc.typ, tc.config)
		}
		for _, phase := range []abi.Phase{abi.PhaseRequest, abi.PhaseResponse} {
			in := func() *abi.Request {
				return &abi.Request{Phase: phase, Mode: abi.ModeLive, Decision: "d", Model: "small", Body: body,
					Messages: []abi.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "hi"}},
					Headers:  []abi.Header{{Name: "X-B", Value: "2"}}}
			}
			got, gerr := bound(context.Background(), in())
			want, werr := m.Call(context.Background(), tc.typ, json.RawMessage(tc.config), in())
			if !reflect.DeepEqual(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Errorf("%s %s phase %v: bound %+v, %v; Call %+v, %v", tc.typ, tc.config, phase, got, gerr, want, werr)
			}
		}
	}
	if b := m.Bind("rag", nil); b != nil {
		t.Error("rag (no native plugin) bound")
	}
}

// countingModules counts how the stage reaches the native modules.
type countingModules struct {
	*native.Modules
	binds, calls int
}

func (c *countingModules) Call(ctx context.Context, typ string, config json.RawMessage, req *abi.Request) (plugin.ModuleResult, error) {
	c.calls++
	return c.Modules.Call(ctx, typ, config, req)
}

func (c *countingModules) Bind(typ string, config json.RawMessage) plugin.BoundCall {
	c.binds++
	return c.Modules.Bind(typ, config)
}

// TestStageBindsOnce: the stage binds each configuration on its first call
// and calls it bound from then on; the requests come out as through Call.
func TestStageBindsOnce(t *testing.T) {
	refs := []recipes.PluginRef{
		ref(TypeSystemPrompt, `{"system_prompt":"P"}`),
		ref(TypeHeaderMutation, `{"add":[{"name":"x-a","value":"1"}]}`),
	}
	mods := &countingModules{Modules: native.New()}
	bound, plain := plugin.New(mods), plugin.New(callOnly{native.New()})
	for i := 0; i < 3; i++ {
		a := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		b := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		oa, errA := bound.Request(context.Background(), refs, a)
		ob, errB := plain.Request(context.Background(), refs, b)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		ba, _ := a.Chat.Encode()
		bb, _ := b.Chat.Encode()
		if string(ba) != string(bb) || !reflect.DeepEqual(a.Header, b.Header) || !reflect.DeepEqual(oa.Reports, ob.Reports) {
			t.Fatalf("bound: %s %v %+v; through Call: %s %v %+v", ba, a.Header, oa.Reports, bb, b.Header, ob.Reports)
		}
	}
	if mods.binds != len(refs) || mods.calls != 0 {
		t.Errorf("%d binds and %d calls for 3 requests of %d plugins, want %d binds and no call", mods.binds, mods.calls, len(refs), len(refs))
	}
}

// callOnly hides Bind: the stage calls through Call.
type callOnly struct{ m *native.Modules }

func (c callOnly) Has(typ string) bool         { return c.m.Has(typ) }
func (c callOnly) HasResponse(typ string) bool { return c.m.HasResponse(typ) }
func (c callOnly) Validate(typ string, config json.RawMessage) error {
	return c.m.Validate(typ, config)
}
func (c callOnly) Call(ctx context.Context, typ string, config json.RawMessage, req *abi.Request) (plugin.ModuleResult, error) {
	return c.m.Call(ctx, typ, config, req)
}
