package native_test

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/plugins/builtin"
	"github.com/junction-router/junction/sdk"
)

// reader is a plugin that reads every part of the request view, by every
// accessor, and reports what it read, so that any difference between the
// view of an encoded record (sdk.Handle, as in a module) and the view of the
// request's values (sdk.HandleRequest, the native path) shows in its result.
// It also edits the request from what it read, so the mutations point into
// the view as a plugin's may.
type reader struct{}

func (reader) OnRequest(r *sdk.Request, res *sdk.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mode=%s decision=%q model=%q n=%d ", r.Mode(), r.Decision(), r.Model(), r.NumMessages())
	for i := -1; i <= r.NumMessages(); i++ {
		m, ok := r.Message(i)
		fmt.Fprintf(&b, "m%d=%v/%q/%q ", i, ok, m.Role, m.Content)
		raw, ok := r.MessageJSON(i)
		fmt.Fprintf(&b, "j%d=%v/%s ", i, ok, raw)
	}
	fmt.Fprintf(&b, "msgs=%q nil=%v ", r.Messages(), r.Messages() == nil)
	fmt.Fprintf(&b, "headers=%q nil=%v ", r.Headers(), r.Headers() == nil)
	v, ok := r.Header("x-tag")
	fmt.Fprintf(&b, "x-tag=%v/%q ", ok, v)
	fmt.Fprintf(&b, "signals=%q nil=%v matched=%v ", r.Signals(), r.Signals() == nil, r.Matched("keyword", "refund"))
	fmt.Fprintf(&b, "body=%q nil=%v last=%q", r.Body(), r.Body() == nil, r.LastUserMessage())
	res.Value("read", b.String())
	if raw, ok := r.Field("temperature"); ok {
		res.SetField("temperature_copy", raw) // a value that points into the body
	}
	if last := r.LastUserMessage(); last != "" {
		res.Detail(last) // a string that points into the view
	}
	if raw, ok := r.MessageJSON(0); ok {
		res.ReplaceMessage(0, raw)
	}
	res.AddHeader("x-read", strconv.Itoa(len(r.Headers())))
	return nil
}

func (reader) OnResponse(r *sdk.Response, res *sdk.Result) error {
	res.Value("response", fmt.Sprintf("status=%d body=%q sent=%q nil=%v", r.Status(), r.Body(), r.RequestBody(), r.Body() == nil))
	res.Value("request", fmt.Sprintf("%q %q %q", r.Messages(), r.Headers(), r.Signals()))
	return nil
}

// viewRequests are request values as the stage builds them, with the empty
// and unusual cases a record encodes specially (empty lists, empty bodies,
// the response phase).
func viewRequests() []*abi.Request {
	body := []byte(`{"messages":[{"role":"system","content":"Old."},{"role":"user","content":"I was charged twice, refund?"}],"model":"auto","temperature":0.2}`)
	msgs := []abi.Message{{Role: "system", Content: "Old."}, {Role: "user", Content: "I was charged twice, refund?"}}
	hs := []abi.Header{{Name: "Accept", Value: "*/*"}, {Name: "X-Tag", Value: "a"}, {Name: "X-Tag", Value: "b"}}
	sig := []abi.Signal{{Kind: "keyword", Name: "refund"}, {Kind: "pii", Name: "email"}}
	var out []*abi.Request
	for _, mode := range []abi.Mode{abi.ModeLive, abi.ModeProbe, abi.ModePreview} {
		out = append(out,
			&abi.Request{Phase: abi.PhaseRequest, Mode: mode, Decision: "refund", Model: "small", Headers: hs, Messages: msgs, Signals: sig, Body: body},
			&abi.Request{Phase: abi.PhaseRequest, Mode: mode, Decision: "d", Model: "", Headers: []abi.Header{}, Messages: []abi.Message{}, Signals: []abi.Signal{}, Body: []byte{}},
			&abi.Request{Phase: abi.PhaseRequest, Mode: mode},
			&abi.Request{Phase: abi.PhaseRequest, Mode: mode, Decision: "d", Model: "m", Messages: []abi.Message{{Role: "user", Content: ""}, {Role: "", Content: "é\x00\""}},
				Body: []byte(`{"messages":[{"role":"user","content":""},{"content":"é\u0000\""}],"model":"m"}`)},
			&abi.Request{Phase: abi.PhaseResponse, Mode: mode, Decision: "refund", Model: "small", Headers: hs, Messages: msgs, Signals: sig, Body: body,
				Status: 200, ResponseBody: []byte(`{"choices":[{"message":{"role":"assistant","content":"Done."}}]}`)},
			&abi.Request{Phase: abi.PhaseResponse, Mode: mode, Status: 201, Body: body},
		)
	}
	return out
}

// viewConfigs are configurations of the built-ins with a native form.
var viewConfigs = map[string][]string{
	TypeSystemPrompt:     {`{"system_prompt":"Be careful.","mode":"insert"}`, `{"system_prompt":"P","mode":"replace"}`, `{"system_prompt":"P","enabled":false}`},
	TypeHeaderMutation:   {`{"add":[{"name":"x-route-family","value":"code"}],"update":[{"name":"x-tag","value":"z"}],"delete":["accept"]}`},
	TypeRequestParams:    {`{"blocked_params":["temperature"],"max_tokens_limit":100,"strip_unknown":true}`, `{}`},
	TypeFastResponse:     {`{"message":"I can't help with that request."}`, `{"message":"no"}`},
	"response_cache":     {`{}`, `{"ttl_seconds":60}`},
	"tool_selection":     {`{}`, `{"top_k":1,"always_keep":["x"]}`},
	"response_jailbreak": {`{}`, `{"action":"redact","detector":"guardrail"}`},
	"hallucination":      {`{}`, `{"detector":"lexical","min_claim_words":1}`},
}

// TestHandleRequestMatchesRecord: a plugin run on the request's values
// (sdk.HandleRequest, what Modules.Call does) gets the same result as run on
// the encoded record (sdk.Handle, what a module's export does), for a plugin
// that reads every part of the view and for every built-in with a native
// form; and the result does not change when the request's slices are reused
// afterwards, as the stage reuses them.
func TestHandleRequestMatchesRecord(t *testing.T) {
	type named struct {
		name string
		p    sdk.Plugin
	}
	plugins := []named{{"reader", reader{}}}
	for _, s := range builtin.Sources {
		if s.Native == nil {
			continue
		}
		cfgs := viewConfigs[s.Type]
		if len(cfgs) == 0 {
			t.Fatalf("no configuration of %s to compare its native runs with", s.Type)
		}
		for _, cfg := range cfgs {
			p, err := s.Native([]byte(cfg))
			if err != nil {
				t.Fatalf("%s %s: %v", s.Type, cfg, err)
			}
			plugins = append(plugins, named{s.Type + " " + cfg, p})
		}
	}
	compared := 0
	for _, pl := range plugins {
		for i, req := range viewRequests() {
			want := sdk.Handle(pl.p, req.Append(nil))
			// The stage's slices and body, which it reuses after the call.
			own := *req
			own.Headers = append([]abi.Header(nil), req.Headers...)
			own.Messages = append([]abi.Message(nil), req.Messages...)
			own.Body = append([]byte(nil), req.Body...)
			own.ResponseBody = append([]byte(nil), req.ResponseBody...)
			got := sdk.HandleRequest(pl.p, &own, nil)
			for k := range own.Body {
				own.Body[k] = 'X'
			}
			for k := range own.ResponseBody {
				own.ResponseBody[k] = 'X'
			}
			clear(own.Headers)
			clear(own.Messages)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s on request %d:\nvalues %+v\nrecord %+v", pl.name, i, got, want)
			}
			compared++
		}
	}
	if compared < 100 {
		t.Fatalf("only %d comparisons ran", compared)
	}
}

// TestBlindPluginsReadNothing holds builtin.Plugin.Blind to the code: a
// blind built-in's result on the bare record the stage gives it (phase,
// mode, decision, model) is the same as on the whole request, for every
// request-phase request of viewRequests and every configuration.
func TestBlindPluginsReadNothing(t *testing.T) {
	blind := 0
	for _, s := range builtin.Sources {
		if !s.Blind {
			continue
		}
		if s.Native == nil {
			t.Fatalf("%s is marked blind but has no native form", s.Type)
		}
		blind++
		if len(viewConfigs[s.Type]) == 0 {
			t.Fatalf("no configuration of %s to check it with", s.Type)
		}
		for _, cfg := range viewConfigs[s.Type] {
			p, err := s.Native([]byte(cfg))
			if err != nil {
				t.Fatalf("%s %s: %v", s.Type, cfg, err)
			}
			for i, req := range viewRequests() {
				if req.Phase != abi.PhaseRequest {
					continue
				}
				want := sdk.HandleRequest(p, req, nil)
				bare := &abi.Request{Phase: req.Phase, Mode: req.Mode, Decision: req.Decision, Model: req.Model, PII: req.PII}
				if got := sdk.HandleRequest(p, bare, nil); !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s on request %d: bare record %+v, whole %+v", s.Type, cfg, i, got, want)
				}
			}
		}
	}
	if blind == 0 {
		t.Fatal("no built-in is marked blind")
	}
	m := native.New()
	for _, typ := range []string{TypeHeaderMutation, TypeFastResponse} {
		if !m.IgnoresRequest(typ) {
			t.Errorf("%s is not reported blind", typ)
		}
	}
	if m.IgnoresRequest(TypeSystemPrompt) {
		t.Errorf("system_prompt, which reads the messages, is reported blind")
	}
}
