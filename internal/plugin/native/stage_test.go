package native_test

// The stage's order, on_error, modes, validation and preparation, with the
// native built-ins as its modules.

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/recipes"
)

func TestOrderOfApplication(t *testing.T) {
	// request_params sees what system_prompt wrote, and a later plugin sees
	// the earlier one's header.
	req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":9000,"extra":1}`)
	refs := []recipes.PluginRef{
		ref(TypeSystemPrompt, `{"system_prompt":"P"}`),
		ref(TypeRequestParams, `{"strip_unknown":true,"max_tokens_limit":100}`),
		ref(TypeHeaderMutation, `{"add":[{"name":"x-a","value":"1"}]}`),
		ref(TypeHeaderMutation, `{"update":[{"name":"x-a","value":"2"}]}`),
	}
	out, err := native.Stage().Request(context.Background(), refs, req)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out.Reports {
		if r.Status != plugin.StatusApplied {
			t.Errorf("report %d = %+v", i, r)
		}
	}
	body, _ := req.Chat.Encode()
	want := `{"model":"m","messages":[{"role":"system","content":"P"},{"role":"user","content":"hi"}],"max_tokens":100}`
	if canon(t, body) != canon(t, []byte(want)) {
		t.Errorf("body = %s", body)
	}
	if got := req.Header["X-A"]; !reflect.DeepEqual(got, []string{"2"}) {
		t.Errorf("X-A = %v", got)
	}
}

func TestOnError(t *testing.T) {
	bad := ref(TypeSystemPrompt, `{"system_prompt":"P","mode":"sideways"}`)
	good := ref(TypeHeaderMutation, `{"add":[{"name":"x-a","value":"1"}]}`)
	tests := []struct {
		name      string
		first     recipes.PluginRef
		onError   string
		wantErr   string
		wantFirst plugin.Report
	}{
		{
			name: "bad configuration, default skip", first: bad, onError: "",
			wantFirst: plugin.Report{Type: TypeSystemPrompt, Status: plugin.StatusFailed, Detail: `system_prompt plugin: configuration.mode must be insert or replace, not "sideways"`},
		},
		{
			name: "bad configuration, skip", first: bad, onError: "skip",
			wantFirst: plugin.Report{Type: TypeSystemPrompt, Status: plugin.StatusFailed, Detail: `system_prompt plugin: configuration.mode must be insert or replace, not "sideways"`},
		},
		{
			name: "bad configuration, fail", first: bad, onError: "fail",
			wantFirst: plugin.Report{Type: TypeSystemPrompt, Status: plugin.StatusFailed, Detail: `system_prompt plugin: configuration.mode must be insert or replace, not "sideways"`},
			wantErr:   `plugin 0 (system_prompt) of decision "code" failed (on_error: fail): system_prompt plugin: configuration.mode must be insert or replace, not "sideways"`,
		},
		{
			name: "unavailable, skip", first: ref("response_cache", `{"mode":"exact_then_semantic"}`), onError: "skip",
			wantFirst: plugin.Report{Type: "response_cache", Status: plugin.StatusUnavailable, Detail: "the response_cache plugin needs the WebAssembly plugin runtime, which is not built yet"},
		},
		{
			name: "unavailable, fail", first: ref("rag", ``), onError: "fail",
			wantFirst: plugin.Report{Type: "rag", Status: plugin.StatusUnavailable, Detail: "the rag plugin needs the WebAssembly plugin runtime, which is not built yet"},
			wantErr:   `plugin 0 (rag) of decision "code" is unavailable (on_error: fail): the rag plugin needs the WebAssembly plugin runtime, which is not built yet`,
		},
		{
			name: "unknown type is unavailable too", first: ref("my_wasm_plugin", `{}`), onError: "",
			wantFirst: plugin.Report{Type: "my_wasm_plugin", Status: plugin.StatusUnavailable, Detail: "the my_wasm_plugin plugin needs the WebAssembly plugin runtime, which is not built yet"},
		},
		{
			name: "invalid on_error fails the request", first: ref(TypeFastResponse, `{"message":"x"}`), onError: "ignore",
			wantFirst: plugin.Report{Type: TypeFastResponse, Status: plugin.StatusFailed, Detail: `fast_response plugin: on_error must be skip or fail, not "ignore"`},
			wantErr:   `plugin 0 (fast_response) of decision "code": fast_response plugin: on_error must be skip or fail, not "ignore"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
			req.Decision = "code"
			first := tt.first
			first.OnError = tt.onError
			out, err := native.Stage().Request(context.Background(), []recipes.PluginRef{first, good}, req)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				if len(out.Reports) != 1 {
					t.Errorf("reports = %+v, want only the failing one", out.Reports)
				}
				if req.Header.Get("X-A") != "" {
					t.Errorf("a plugin after the failure ran")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Reports) != 2 || out.Reports[1].Status != plugin.StatusApplied || req.Header.Get("X-A") != "1" {
					t.Errorf("the next plugin did not run: %+v", out.Reports)
				}
			}
			if out.Reports[0] != tt.wantFirst {
				t.Errorf("first report = %+v\nwant %+v", out.Reports[0], tt.wantFirst)
			}
			if len(req.Chat.Messages) != 1 {
				t.Errorf("the failed plugin changed the messages")
			}
		})
	}
}

func TestModesAndContext(t *testing.T) {
	refs := []recipes.PluginRef{ref(TypeFastResponse, `{"message":"x"}`)}
	for _, mode := range []string{"", plugin.ModeLive, plugin.ModeProbe, plugin.ModePreview} {
		req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		req.Mode = mode
		out, err := native.Stage().Request(context.Background(), refs, req)
		if err != nil || out.Immediate == nil {
			t.Errorf("mode %q: %v %+v", mode, err, out)
		}
	}
	req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	req.Mode = "dry"
	if _, err := native.Stage().Request(context.Background(), refs, req); err == nil {
		t.Error("unknown mode accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req.Mode = ""
	if _, err := native.Stage().Request(ctx, refs, req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if out, err := native.Stage().Request(context.Background(), nil, req); err != nil || len(out.Reports) != 0 || out.Immediate != nil {
		t.Errorf("no plugins: %+v %v", out, err)
	}
	if _, err := native.Stage().Request(context.Background(), refs, nil); err == nil {
		t.Error("nil request accepted")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		ref     recipes.PluginRef
		field   string // the plugin.ConfigError's Field; "" means valid
		message string // a substring of the error
	}{
		{"system_prompt ok", ref(TypeSystemPrompt, `{"system_prompt":"x","mode":"replace","enabled":false}`), "", ""},
		{"system_prompt missing prompt", ref(TypeSystemPrompt, `{"mode":"insert"}`), "configuration.system_prompt", "is required"},
		{"system_prompt no configuration", ref(TypeSystemPrompt, ``), "configuration.system_prompt", "is required"},
		{"system_prompt null configuration", ref(TypeSystemPrompt, `null`), "configuration.system_prompt", "is required"},
		{"system_prompt blank prompt", ref(TypeSystemPrompt, `{"system_prompt":"  "}`), "configuration.system_prompt", "must not be empty"},
		{"system_prompt bad mode", ref(TypeSystemPrompt, `{"system_prompt":"x","mode":"append"}`), "configuration.mode", `not "append"`},
		{"system_prompt prompt not a string", ref(TypeSystemPrompt, `{"system_prompt":5}`), "configuration.system_prompt", "must be a string, not an integer"},
		{"system_prompt enabled not a bool", ref(TypeSystemPrompt, `{"system_prompt":"x","enabled":"yes"}`), "configuration.enabled", "must be a boolean, not a string"},
		{"system_prompt unknown field", ref(TypeSystemPrompt, `{"system_prompt":"x","prompt_mode":"insert"}`), "configuration.prompt_mode", "is not a field here (fields: system_prompt, mode, enabled)"},
		{"configuration not an object", ref(TypeSystemPrompt, `"be nice"`), "configuration", "must be an object"},

		{"header ok", ref(TypeHeaderMutation, `{"add":[{"name":"x-a","value":"1"},{"name":"x-a","value":"2"}],"update":[{"name":"x-b","value":"v"}],"delete":["x-c"]}`), "", ""},
		{"header unknown field", ref(TypeHeaderMutation, `{"remove":["x"]}`), "configuration.remove", "fields: add, update, delete"},
		{"header unknown pair field", ref(TypeHeaderMutation, `{"add":[{"name":"x","value":"1","append":true}]}`), "configuration.add[0].append", "fields: name, value"},
		{"header missing name", ref(TypeHeaderMutation, `{"update":[{"value":"1"}]}`), "configuration.update[0].name", "is required"},
		{"header missing value", ref(TypeHeaderMutation, `{"add":[{"name":"x"}]}`), "configuration.add[0].value", "is required"},
		{"header bad name", ref(TypeHeaderMutation, `{"add":[{"name":"x a","value":"1"}]}`), "configuration.add[0].name", "not a valid header name"},
		{"header pseudo header", ref(TypeHeaderMutation, `{"add":[{"name":":path","value":"/"}]}`), "configuration.add[0].name", "not a valid header name"},
		{"header value with newline", ref(TypeHeaderMutation, `{"add":[{"name":"x","value":"a\r\nb: c"}]}`), "configuration.add[0].value", "line breaks"},
		{"header authorization", ref(TypeHeaderMutation, `{"update":[{"name":"authorization","value":"Bearer x"}]}`), "configuration.update[0].name", "Authorization cannot be changed by a plugin"},
		{"header host", ref(TypeHeaderMutation, `{"add":[{"name":"Host","value":"evil"}]}`), "configuration.add[0].name", "Host cannot be changed"},
		{"header content-length", ref(TypeHeaderMutation, `{"delete":["content-length"]}`), "configuration.delete[0]", "Content-Length cannot be changed"},
		{"header hop-by-hop connection", ref(TypeHeaderMutation, `{"delete":["Connection"]}`), "configuration.delete[0]", "hop-by-hop"},
		{"header hop-by-hop te", ref(TypeHeaderMutation, `{"add":[{"name":"te","value":"trailers"}]}`), "configuration.add[0].name", "hop-by-hop"},
		{"header hop-by-hop transfer-encoding", ref(TypeHeaderMutation, `{"update":[{"name":"Transfer-Encoding","value":"chunked"}]}`), "configuration.update[0].name", "hop-by-hop"},
		{"header hop-by-hop upgrade", ref(TypeHeaderMutation, `{"delete":["upgrade"]}`), "configuration.delete[0]", "hop-by-hop"},
		{"header hop-by-hop proxy-authorization", ref(TypeHeaderMutation, `{"delete":["proxy-authorization"]}`), "configuration.delete[0]", "hop-by-hop"},
		{"header in add and delete", ref(TypeHeaderMutation, `{"add":[{"name":"x-a","value":"1"}],"delete":["X-A"]}`), "configuration.delete[0]", "already appears in add"},
		{"header in add and update", ref(TypeHeaderMutation, `{"add":[{"name":"x-a","value":"1"}],"update":[{"name":"x-a","value":"2"}]}`), "configuration.update[0].name", "already appears in add"},
		{"header updated twice", ref(TypeHeaderMutation, `{"update":[{"name":"x-a","value":"1"},{"name":"x-a","value":"2"}]}`), "configuration.update[1].name", "already appears in update"},
		{"header add not an array", ref(TypeHeaderMutation, `{"add":{"name":"x"}}`), "configuration.add", "must be an array, not an object"},
		{"header delete not strings", ref(TypeHeaderMutation, `{"delete":[1]}`), "configuration.delete[0]", "must be a string"},

		{"params ok", ref(TypeRequestParams, `{"blocked_params":["logit_bias"],"max_tokens_limit":4096,"max_n":1,"strip_unknown":true}`), "", ""},
		{"params whole float accepted", ref(TypeRequestParams, `{"max_tokens_limit":4096.0}`), "", ""},
		{"params limit not an integer", ref(TypeRequestParams, `{"max_tokens_limit":40.5}`), "configuration.max_tokens_limit", "must be an integer, not a number (40.5)"},
		{"params limit a string", ref(TypeRequestParams, `{"max_tokens_limit":"4096"}`), "configuration.max_tokens_limit", "must be a number, not a string"},
		{"params limit zero", ref(TypeRequestParams, `{"max_tokens_limit":0}`), "configuration.max_tokens_limit", "at least 1"},
		{"params max_n negative", ref(TypeRequestParams, `{"max_n":-1}`), "configuration.max_n", "at least 1"},
		{"params block model", ref(TypeRequestParams, `{"blocked_params":["model"]}`), "configuration.blocked_params[0]", "cannot block model"},
		{"params block messages", ref(TypeRequestParams, `{"blocked_params":["x","messages"]}`), "configuration.blocked_params[1]", "cannot block messages"},
		{"params block empty", ref(TypeRequestParams, `{"blocked_params":[""]}`), "configuration.blocked_params[0]", "must not be empty"},
		{"params unknown field", ref(TypeRequestParams, `{"max_tokens":5}`), "configuration.max_tokens", "is not a field here (fields: blocked_params, max_tokens_limit, max_n, strip_unknown)"},
		{"params strip not a bool", ref(TypeRequestParams, `{"strip_unknown":1}`), "configuration.strip_unknown", "must be a boolean"},

		{"fast ok", ref(TypeFastResponse, `{"message":"no"}`), "", ""},
		{"fast missing message", ref(TypeFastResponse, `{}`), "configuration.message", "is required"},
		{"fast unknown field", ref(TypeFastResponse, `{"message":"no","status":403}`), "configuration.status", "is not a field"},

		{"planned type accepted", ref("response_cache", `{"anything":1}`), "", ""},
		{"unknown type", ref("sytem_prompt", `{}`), "type", "known types: context_compression, fast_response, hallucination, header_mutation"},
		{"missing type", ref("", `{}`), "type", "is required"},
		{"bad on_error", recipes.PluginRef{Type: TypeFastResponse, Configuration: json.RawMessage(`{"message":"x"}`), OnError: "retry"}, "on_error", `must be skip or fail, not "retry"`},
		{"on_error fail", recipes.PluginRef{Type: TypeFastResponse, Configuration: json.RawMessage(`{"message":"x"}`), OnError: "fail"}, "", ""},
	}
	n := native.Stage()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := n.Validate(tt.ref)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ce *plugin.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want a *plugin.ConfigError", err, err)
			}
			if ce.Field != tt.field || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("err = %v (field %q), want field %q containing %q", err, ce.Field, tt.field, tt.message)
			}
		})
	}
}

func TestValidateExampleConfigPlugins(t *testing.T) {
	// The plugin references of ../shared/spec/example-config.yaml, as JSON.
	n := native.Stage()
	for _, r := range []recipes.PluginRef{
		ref(TypeFastResponse, `{"message":"I can't help with that request."}`),
		ref(TypeSystemPrompt, `{"system_prompt":"You are a careful mathematician. Show your reasoning.","mode":"insert"}`),
		ref(TypeHeaderMutation, `{"add":[{"name":"x-route-family","value":"code"}]}`),
		ref(TypeRequestParams, `{"max_tokens_limit":4096,"blocked_params":["logit_bias"]}`),
		ref("response_cache", `{"mode":"exact_then_semantic","semantic":{"similarity_threshold":0.92},"ttl_seconds":600}`),
	} {
		if err := n.Validate(r); err != nil {
			t.Errorf("%s: %v", r.Type, err)
		}
	}
}

func TestPrepare(t *testing.T) {
	n := native.Stage()
	p, err := n.Prepare([]recipes.PluginRef{
		ref(TypeSystemPrompt, `{"system_prompt":"P"}`),
		ref("memory", `{}`),
		ref(TypeFastResponse, `{"message":"m"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 3 {
		t.Fatalf("len = %d", p.Len())
	}
	req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	out, err := p.Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{out.Reports[0].Status, out.Reports[1].Status, out.Reports[2].Status}
	if !reflect.DeepEqual(got, []string{plugin.StatusApplied, plugin.StatusUnavailable, plugin.StatusApplied}) || out.Immediate == nil {
		t.Errorf("outcome = %+v", out)
	}

	_, err = n.Prepare([]recipes.PluginRef{
		ref(TypeFastResponse, `{"message":"ok"}`),
		ref(TypeFastResponse, `{}`),
		ref("nope", ``),
	})
	if err == nil || !strings.Contains(err.Error(), "plugins[1]: fast_response plugin: configuration.message is required") ||
		!strings.Contains(err.Error(), `plugins[2]: nope plugin: type "nope" is not a known plugin type`) {
		t.Errorf("err = %v", err)
	}
	var ce *plugin.ConfigError
	if !errors.As(err, &ce) || ce.Field != "configuration.message" {
		t.Errorf("errors.As: %+v", ce)
	}

	var zero plugin.Prepared
	if out, err := zero.Request(context.Background(), req); err != nil || len(out.Reports) != 0 {
		t.Errorf("zero plugin.Prepared: %+v %v", out, err)
	}
}
