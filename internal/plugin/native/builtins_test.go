package native_test

// The behaviour of the four built-in plugins that run natively, through the
// plugin stage: the same code their wasm guests run (plugins/<name>), so
// these are also what serve does with them.

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/recipes"
)

const (
	TypeSystemPrompt   = "system_prompt"
	TypeHeaderMutation = "header_mutation"
	TypeRequestParams  = "request_params"
	TypeFastResponse   = "fast_response"
)

func newReq(t testing.TB, body string) *plugin.Request {
	t.Helper()
	c, err := chat.Parse([]byte(body))
	if err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	return &plugin.Request{Chat: c, Header: http.Header{}, Decision: "d1", Model: "small", Mode: plugin.ModeLive}
}

func ref(typ, config string) recipes.PluginRef {
	r := recipes.PluginRef{Type: typ}
	if config != "" {
		r.Configuration = json.RawMessage(config)
	}
	return r
}

func runOne(t *testing.T, r recipes.PluginRef, req *plugin.Request) plugin.Outcome {
	t.Helper()
	out, err := native.Stage().Request(context.Background(), []recipes.PluginRef{r}, req)
	if err != nil {
		t.Fatalf("plugin.Request: %v", err)
	}
	if len(out.Reports) != 1 {
		t.Fatalf("reports = %+v", out.Reports)
	}
	return out
}

func flat(roleContent ...string) []chat.Message {
	var out []chat.Message
	for i := 0; i+1 < len(roleContent); i += 2 {
		out = append(out, chat.Message{Role: roleContent[i], Content: roleContent[i+1]})
	}
	return out
}

// canon re-encodes JSON so that expectations can be written without caring
// about key order or spacing.
func canon(t testing.TB, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("invalid JSON %s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSystemPrompt(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	tests := []struct {
		name, config, messages string
		// want is the messages array (compared after canonical re-encoding);
		// wantRaw, when set, is compared byte for byte.
		want, wantRaw string
		wantFlat      []chat.Message
		status        string
		detail        string
	}{
		{
			name: "insert without system message adds one", config: `{"system_prompt":"Be careful.","mode":"insert"}`,
			messages: `[` + user + `]`,
			wantRaw:  `[{"role":"system","content":"Be careful."},` + user + `]`,
			wantFlat: flat("system", "Be careful.", "user", "hi"),
			status:   plugin.StatusApplied, detail: "added a system message before the first message",
		},
		{
			name: "replace without system message adds one", config: `{"system_prompt":"P","mode":"replace"}`,
			messages: `[` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "default mode is insert", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":"Old."},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P\n\nOld."},` + user + `]`,
			wantFlat: flat("system", "P\n\nOld.", "user", "hi"),
			status:   plugin.StatusApplied, detail: "prepended to the system message",
		},
		{
			// The new content is written afresh (é as UTF-8); every other byte
			// of the message and the array is kept.
			name: "insert keeps the other fields' bytes", config: `{"system_prompt":"P","mode":"insert"}`,
			messages: `[ {"name":"sys", "role":"system","content":"a\u00e9\"b", "x":[1,{"y":"}"}]} , ` + user + ` ]`,
			wantRaw:  `[{"name":"sys", "role":"system","content":"P\n\naé\"b", "x":[1,{"y":"}"}]} , ` + user + ` ]`,
			wantFlat: flat("system", "P\n\naé\"b", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "replace keeps the other fields", config: `{"system_prompt":"P","mode":"replace"}`,
			messages: `[{"role":"system","name":"n","content":"Old."},` + user + `]`,
			wantRaw:  `[{"role":"system","name":"n","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   plugin.StatusApplied, detail: "replaced the system message's content",
		},
		{
			name: "insert into empty content gives just the prompt", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":""},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "insert into null content", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":null},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "insert into missing content adds it", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system"},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "insert into content parts prepends to the leading text part", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":[{"type":"text","text":"Old.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"More."}]},` + user + `]`,
			wantRaw:  `[{"role":"system","content":[{"type":"text","text":"P\n\nOld.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"More."}]},` + user + `]`,
			wantFlat: flat("system", "P\n\nOld.\nMore.", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "insert into content parts without a leading text part adds one", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"Old."}]},` + user + `]`,
			want:     `[{"role":"system","content":[{"type":"text","text":"P"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"Old."}]},` + user + `]`,
			wantFlat: flat("system", "P\nOld.", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "insert into empty content parts", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":[]},` + user + `]`,
			want:     `[{"role":"system","content":[{"type":"text","text":"P"}]},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "replace content parts with a string", config: `{"system_prompt":"P","mode":"replace"}`,
			messages: `[{"role":"system","content":[{"type":"text","text":"Old."}]},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "a later system message does not count", config: `{"system_prompt":"P"}`,
			messages: `[` + user + `,{"role":"system","content":"Late."}]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `,{"role":"system","content":"Late."}]`,
			wantFlat: flat("system", "P", "user", "hi", "system", "Late."),
			status:   plugin.StatusApplied,
		},
		{
			name: "a developer message is not a system message", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"developer","content":"Dev."},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},{"role":"developer","content":"Dev."},` + user + `]`,
			wantFlat: flat("system", "P", "developer", "Dev.", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "other messages keep tool_calls and content arrays", config: `{"system_prompt":"P","mode":"replace"}`,
			messages: `[{"role":"system","content":"S"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r"}]}]`,
			wantRaw:  `[{"role":"system","content":"P"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r"}]}]`,
			wantFlat: flat("system", "P", "assistant", "", "tool", "r"),
			status:   plugin.StatusApplied,
		},
		{
			// The plugin's JSON escapes <, > and & (\u003c…), as its wasm guest
			// always has in serve; the text is the same.
			name: "HTML characters keep their text", config: `{"system_prompt":"Use <b> & \"quotes\"\n."}`,
			messages: `[` + user + `]`,
			want:     `[{"role":"system","content":"Use <b> & \"quotes\"\n."},` + user + `]`,
			wantFlat: flat("system", "Use <b> & \"quotes\"\n.", "user", "hi"),
			status:   plugin.StatusApplied,
		},
		{
			name: "disabled", config: `{"system_prompt":"P","enabled":false}`,
			messages: `[` + user + `]`,
			wantRaw:  `[` + user + `]`,
			wantFlat: flat("user", "hi"),
			status:   plugin.StatusSkipped, detail: "disabled by its configuration (enabled: false)",
		},
		{
			name: "enabled true", config: `{"system_prompt":"P","enabled":true,"mode":"replace"}`,
			messages: `[` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   plugin.StatusApplied,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, `{"model":"m","temperature":0.5,"messages":`+tt.messages+`}`)
			out := runOne(t, ref(TypeSystemPrompt, tt.config), req)
			rep := out.Reports[0]
			if rep.Status != tt.status || rep.Type != TypeSystemPrompt {
				t.Fatalf("report = %+v, want status %s", rep, tt.status)
			}
			if tt.detail != "" && rep.Detail != tt.detail {
				t.Errorf("detail = %q, want %q", rep.Detail, tt.detail)
			}
			got := req.Chat.Fields["messages"]
			if tt.wantRaw != "" && string(got) != tt.wantRaw {
				t.Errorf("messages =\n%s\nwant\n%s", got, tt.wantRaw)
			}
			if tt.want != "" && canon(t, got) != canon(t, []byte(tt.want)) {
				t.Errorf("messages = %s, want %s", got, tt.want)
			}
			if !reflect.DeepEqual(req.Chat.Messages, tt.wantFlat) {
				t.Errorf("flat = %+v, want %+v", req.Chat.Messages, tt.wantFlat)
			}
			// The parsed view must agree with what a fresh parse of the body gives.
			body, err := req.Chat.Encode()
			if err != nil {
				t.Fatal(err)
			}
			again, err := chat.Parse(body)
			if err != nil {
				t.Fatalf("rewritten body does not parse: %v\n%s", err, body)
			}
			if !reflect.DeepEqual(again.Messages, req.Chat.Messages) {
				t.Errorf("parsed view %+v differs from re-parse %+v", req.Chat.Messages, again.Messages)
			}
			if string(req.Chat.Fields["temperature"]) != "0.5" {
				t.Errorf("other fields changed: %s", body)
			}
		})
	}
}

func TestSystemPromptTwiceAppliesInOrder(t *testing.T) {
	req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	refs := []recipes.PluginRef{
		ref(TypeSystemPrompt, `{"system_prompt":"A"}`),
		ref(TypeSystemPrompt, `{"system_prompt":"B","mode":"insert"}`),
	}
	if _, err := native.Stage().Request(context.Background(), refs, req); err != nil {
		t.Fatal(err)
	}
	if got := req.Chat.Messages[0].Content; got != "B\n\nA" {
		t.Errorf("system content = %q, want the second plugin's text first", got)
	}
	if len(req.Chat.Messages) != 2 {
		t.Errorf("messages = %+v", req.Chat.Messages)
	}
}

func TestHeaderMutation(t *testing.T) {
	tests := []struct {
		name, config string
		before       http.Header
		want         http.Header
		detail       string
	}{
		{
			name: "add to an empty set", config: `{"add":[{"name":"x-route-family","value":"code"}]}`,
			before: http.Header{}, want: http.Header{"X-Route-Family": {"code"}},
			detail: "added X-Route-Family",
		},
		{
			name: "add appends to existing values", config: `{"add":[{"name":"X-Tag","value":"b"},{"name":"x-tag","value":"c"}]}`,
			before: http.Header{"X-Tag": {"a"}}, want: http.Header{"X-Tag": {"a", "b", "c"}},
			detail: "added X-Tag",
		},
		{
			name: "update replaces every value", config: `{"update":[{"name":"x-tag","value":"z"}]}`,
			before: http.Header{"X-Tag": {"a", "b"}}, want: http.Header{"X-Tag": {"z"}},
			detail: "set X-Tag",
		},
		{
			name: "update adds an absent header", config: `{"update":[{"name":"x-new","value":""}]}`,
			before: http.Header{}, want: http.Header{"X-New": {""}},
		},
		{
			name: "delete removes", config: `{"delete":["x-tag","x-absent"]}`,
			before: http.Header{"X-Tag": {"a"}, "Accept": {"*/*"}}, want: http.Header{"Accept": {"*/*"}},
			detail: "removed X-Tag, X-Absent",
		},
		{
			name:   "all three",
			config: `{"add":[{"name":"x-a","value":"1"}],"update":[{"name":"x-b","value":"2"}],"delete":["x-c"]}`,
			before: http.Header{"X-B": {"0"}, "X-C": {"0"}}, want: http.Header{"X-A": {"1"}, "X-B": {"2"}},
			detail: "added X-A; set X-B; removed X-C",
		},
		{
			name: "nil header is created", config: `{"add":[{"name":"x-a","value":"1"}]}`,
			before: nil, want: http.Header{"X-A": {"1"}},
		},
		{
			name: "empty configuration", config: `{}`,
			before: http.Header{"X-A": {"1"}}, want: http.Header{"X-A": {"1"}}, detail: "no headers configured",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
			req.Header = tt.before
			out := runOne(t, ref(TypeHeaderMutation, tt.config), req)
			if out.Reports[0].Status != plugin.StatusApplied {
				t.Fatalf("report = %+v", out.Reports[0])
			}
			if tt.detail != "" && out.Reports[0].Detail != tt.detail {
				t.Errorf("detail = %q, want %q", out.Reports[0].Detail, tt.detail)
			}
			if !reflect.DeepEqual(req.Header, tt.want) {
				t.Errorf("header = %v, want %v", req.Header, tt.want)
			}
		})
	}
}

func TestHeaderMutationDoesNotLeakValues(t *testing.T) {
	req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	out := runOne(t, ref(TypeHeaderMutation, `{"update":[{"name":"x-api-key","value":"s3cret"}]}`), req)
	if strings.Contains(out.Reports[0].Detail, "s3cret") {
		t.Errorf("report shows a header value: %q", out.Reports[0].Detail)
	}
}

func TestRequestParams(t *testing.T) {
	tests := []struct {
		name, config, body string
		want               string // whole body, canonical
		detail             string
		check              func(t *testing.T, c *chat.Request)
	}{
		{
			name: "blocked params are removed", config: `{"blocked_params":["logit_bias","user","absent"]}`,
			body:   `{"model":"m","messages":[],"logit_bias":{"1":2},"user":"u","seed":1}`,
			want:   `{"model":"m","messages":[],"seed":1}`,
			detail: "removed logit_bias; removed user",
		},
		{
			name: "max_tokens above the limit is lowered", config: `{"max_tokens_limit":4096}`,
			body:   `{"model":"m","messages":[],"max_tokens":8000}`,
			want:   `{"model":"m","messages":[],"max_tokens":4096}`,
			detail: "lowered max_tokens from 8000 to 4096",
		},
		{
			name: "max_completion_tokens above the limit is lowered", config: `{"max_tokens_limit":100}`,
			body: `{"model":"m","messages":[],"max_completion_tokens":101,"max_tokens":100}`,
			want: `{"model":"m","messages":[],"max_completion_tokens":100,"max_tokens":100}`,
		},
		{
			name: "values within limits are kept", config: `{"max_tokens_limit":100,"max_n":2}`,
			body:   `{"model":"m","messages":[],"max_tokens":99,"n":2}`,
			want:   `{"model":"m","messages":[],"max_tokens":99,"n":2}`,
			detail: "nothing to change",
		},
		{
			name: "absent values are not added", config: `{"max_tokens_limit":100,"max_n":1}`,
			body: `{"model":"m","messages":[]}`,
			want: `{"model":"m","messages":[]}`,
		},
		{
			name: "null values are left alone", config: `{"max_tokens_limit":100}`,
			body: `{"model":"m","messages":[],"max_tokens":null}`,
			want: `{"model":"m","messages":[],"max_tokens":null}`,
		},
		{
			name: "n above max_n is lowered", config: `{"max_n":1}`,
			body:   `{"model":"m","messages":[],"n":4}`,
			want:   `{"model":"m","messages":[],"n":1}`,
			detail: "lowered n from 4 to 1",
		},
		{
			name: "strip_unknown keeps OpenAI parameters and chat_template_kwargs", config: `{"strip_unknown":true}`,
			body:   `{"model":"m","messages":[],"temperature":1,"stream":false,"tools":[],"x_vendor":1,"chat_template_kwargs":{"a":true}}`,
			want:   `{"model":"m","messages":[],"temperature":1,"stream":false,"tools":[],"chat_template_kwargs":{"a":true}}`,
			detail: "stripped x_vendor",
		},
		{
			name: "strip_unknown false keeps everything", config: `{"strip_unknown":false}`,
			body: `{"model":"m","messages":[],"x_vendor":1}`,
			want: `{"model":"m","messages":[],"x_vendor":1}`,
		},
		{
			name: "blocked then clamped then stripped", config: `{"blocked_params":["max_tokens","x"],"max_tokens_limit":10,"strip_unknown":true}`,
			body:   `{"model":"m","messages":[],"max_tokens":50,"max_completion_tokens":50,"x":1,"y":2}`,
			want:   `{"model":"m","messages":[],"max_completion_tokens":10}`,
			detail: "removed max_tokens; removed x; lowered max_completion_tokens from 50 to 10; stripped y",
		},
		{
			name: "removing stream resets the parsed view", config: `{"blocked_params":["stream","stream_options","tools"]}`,
			body: `{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"f"}}]}`,
			want: `{"model":"m","messages":[]}`,
			check: func(t *testing.T, c *chat.Request) {
				if c.Stream || c.IncludeUsage || c.Tools != 0 {
					t.Errorf("parsed view not reset: stream=%v include_usage=%v tools=%d", c.Stream, c.IncludeUsage, c.Tools)
				}
			},
		},
		{
			name: "empty configuration changes nothing", config: ``,
			body: `{"model":"m","messages":[],"x":1}`,
			want: `{"model":"m","messages":[],"x":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &chat.Request{}
			if err := json.Unmarshal([]byte(tt.body), &c.Fields); err != nil {
				t.Fatal(err)
			}
			if parsed, err := chat.Parse([]byte(tt.body)); err == nil {
				c = parsed
			}
			req := &plugin.Request{Chat: c, Decision: "d"}
			out := runOne(t, ref(TypeRequestParams, tt.config), req)
			if out.Reports[0].Status != plugin.StatusApplied {
				t.Fatalf("report = %+v", out.Reports[0])
			}
			if tt.detail != "" && out.Reports[0].Detail != tt.detail {
				t.Errorf("detail = %q, want %q", out.Reports[0].Detail, tt.detail)
			}
			body, _ := c.Encode()
			if canon(t, body) != canon(t, []byte(tt.want)) {
				t.Errorf("body = %s, want %s", body, tt.want)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestRequestParamsNonIntegerFails(t *testing.T) {
	c := &chat.Request{Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`), "max_tokens": json.RawMessage(`"many"`)}}
	out, err := native.Stage().Request(context.Background(), []recipes.PluginRef{ref(TypeRequestParams, `{"max_tokens_limit":5}`)}, &plugin.Request{Chat: c})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Reports[0]; r.Status != plugin.StatusFailed || r.Detail != "the plugin failed: max_tokens is a string, not an integer" {
		t.Errorf("report = %+v", r)
	}
	if string(c.Fields["max_tokens"]) != `"many"` {
		t.Errorf("failed plugin changed the request")
	}
}

func TestFastResponse(t *testing.T) {
	// A module's answer names no model: the front end reports the routed one
	// (internal/dataplane.ImmediateAnswer), as serve always has.
	for _, tt := range []struct{ model, want string }{{"small", ""}, {"", ""}} {
		req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		req.Model = tt.model
		out := runOne(t, ref(TypeFastResponse, `{"message":"I can't help with that request."}`), req)
		want := &plugin.Immediate{Status: 200, Content: "I can't help with that request.", Model: tt.want}
		if !reflect.DeepEqual(out.Immediate, want) {
			t.Errorf("immediate = %+v, want %+v", out.Immediate, want)
		}
		if out.Reports[0].Status != plugin.StatusApplied {
			t.Errorf("report = %+v", out.Reports[0])
		}
	}
}

func TestImmediateShortCircuits(t *testing.T) {
	req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	refs := []recipes.PluginRef{
		ref(TypeHeaderMutation, `{"add":[{"name":"x-before","value":"1"}]}`),
		ref(TypeFastResponse, `{"message":"no"}`),
		ref(TypeHeaderMutation, `{"add":[{"name":"x-after","value":"1"}]}`),
		ref(TypeSystemPrompt, `{"system_prompt":"P"}`),
		ref("response_cache", `{}`),
		ref(TypeFastResponse, `{"message":"second"}`),
	}
	out, err := native.Stage().Request(context.Background(), refs, req)
	if err != nil {
		t.Fatal(err)
	}
	if out.Immediate == nil || out.Immediate.Content != "no" {
		t.Fatalf("immediate = %+v", out.Immediate)
	}
	wantStatus := []string{plugin.StatusApplied, plugin.StatusApplied, plugin.StatusSkipped, plugin.StatusSkipped, plugin.StatusSkipped, plugin.StatusSkipped}
	for i, r := range out.Reports {
		if r.Status != wantStatus[i] || r.Type != refs[i].Type {
			t.Errorf("report %d = %+v, want %s", i, r, wantStatus[i])
		}
		if i > 1 && r.Detail != "not run: plugin 1 (fast_response) answered the request" {
			t.Errorf("report %d detail = %q", i, r.Detail)
		}
	}
	if req.Header.Get("X-Before") != "1" || req.Header.Get("X-After") != "" {
		t.Errorf("header = %v", req.Header)
	}
	if len(req.Chat.Messages) != 1 {
		t.Errorf("a plugin after the answer changed the messages")
	}
}

func TestRuntimeFailureLeavesRequestUnchanged(t *testing.T) {
	// A chat body whose messages are not an array: system_prompt fails, and
	// with no chat body at all request_params fails; both skip.
	c := &chat.Request{Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`), "messages": json.RawMessage(`{"oops":1}`)}}
	req := &plugin.Request{Chat: c, Decision: "d"}
	out, err := native.Stage().Request(context.Background(), []recipes.PluginRef{ref(TypeSystemPrompt, `{"system_prompt":"P"}`)}, req)
	if err != nil {
		t.Fatal(err)
	}
	if out.Reports[0].Status != plugin.StatusFailed || !strings.Contains(out.Reports[0].Detail, "messages") {
		t.Errorf("report = %+v", out.Reports[0])
	}
	if string(c.Fields["messages"]) != `{"oops":1}` {
		t.Errorf("messages changed")
	}
	out, err = native.Stage().Request(context.Background(), []recipes.PluginRef{ref(TypeRequestParams, `{"max_n":1}`)}, &plugin.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Reports[0].Status != plugin.StatusFailed || !strings.Contains(out.Reports[0].Detail, "the request body is not a JSON object") {
		t.Errorf("report = %+v", out.Reports[0])
	}
}
