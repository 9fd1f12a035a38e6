package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/recipes"
)

func newReq(t testing.TB, body string) *Request {
	t.Helper()
	c, err := chat.Parse([]byte(body))
	if err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	return &Request{Chat: c, Header: http.Header{}, Decision: "d1", Model: "small", Mode: ModeLive}
}

func ref(typ, config string) recipes.PluginRef {
	r := recipes.PluginRef{Type: typ}
	if config != "" {
		r.Configuration = json.RawMessage(config)
	}
	return r
}

func runOne(t *testing.T, r recipes.PluginRef, req *Request) Outcome {
	t.Helper()
	out, err := NewNative().Request(context.Background(), []recipes.PluginRef{r}, req)
	if err != nil {
		t.Fatalf("Request: %v", err)
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
			status:   StatusApplied, detail: "added a system message before the first message",
		},
		{
			name: "replace without system message adds one", config: `{"system_prompt":"P","mode":"replace"}`,
			messages: `[` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "default mode is insert", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":"Old."},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P\n\nOld."},` + user + `]`,
			wantFlat: flat("system", "P\n\nOld.", "user", "hi"),
			status:   StatusApplied, detail: "prepended to the system message",
		},
		{
			name: "insert keeps the other fields and the escapes of the old text", config: `{"system_prompt":"P","mode":"insert"}`,
			messages: `[ {"name":"sys", "role":"system","content":"a\u00e9\"b", "x":[1,{"y":"}"}]} , ` + user + ` ]`,
			wantRaw:  `[{"name":"sys", "role":"system","content":"P\n\na\u00e9\"b", "x":[1,{"y":"}"}]} , ` + user + ` ]`,
			wantFlat: flat("system", "P\n\naé\"b", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "replace keeps the other fields", config: `{"system_prompt":"P","mode":"replace"}`,
			messages: `[{"role":"system","name":"n","content":"Old."},` + user + `]`,
			wantRaw:  `[{"role":"system","name":"n","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   StatusApplied, detail: "replaced the system message's content",
		},
		{
			name: "insert into empty content gives just the prompt", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":""},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "insert into null content", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":null},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "insert into missing content adds it", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system"},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "insert into content parts prepends to the leading text part", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":[{"type":"text","text":"Old.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"More."}]},` + user + `]`,
			wantRaw:  `[{"role":"system","content":[{"type":"text","text":"P\n\nOld.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"More."}]},` + user + `]`,
			wantFlat: flat("system", "P\n\nOld.\nMore.", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "insert into content parts without a leading text part adds one", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"Old."}]},` + user + `]`,
			wantRaw:  `[{"role":"system","content":[{"type":"text","text":"P"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"Old."}]},` + user + `]`,
			wantFlat: flat("system", "P\nOld.", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "insert into empty content parts", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"system","content":[]},` + user + `]`,
			wantRaw:  `[{"role":"system","content":[{"type":"text","text":"P"}]},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "replace content parts with a string", config: `{"system_prompt":"P","mode":"replace"}`,
			messages: `[{"role":"system","content":[{"type":"text","text":"Old."}]},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "a later system message does not count", config: `{"system_prompt":"P"}`,
			messages: `[` + user + `,{"role":"system","content":"Late."}]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `,{"role":"system","content":"Late."}]`,
			wantFlat: flat("system", "P", "user", "hi", "system", "Late."),
			status:   StatusApplied,
		},
		{
			name: "a developer message is not a system message", config: `{"system_prompt":"P"}`,
			messages: `[{"role":"developer","content":"Dev."},` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},{"role":"developer","content":"Dev."},` + user + `]`,
			wantFlat: flat("system", "P", "developer", "Dev.", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "other messages keep tool_calls and content arrays", config: `{"system_prompt":"P","mode":"replace"}`,
			messages: `[{"role":"system","content":"S"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r"}]}]`,
			wantRaw:  `[{"role":"system","content":"P"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r"}]}]`,
			wantFlat: flat("system", "P", "assistant", "", "tool", "r"),
			status:   StatusApplied,
		},
		{
			name: "HTML characters are not escaped", config: `{"system_prompt":"Use <b> & \"quotes\"\n."}`,
			messages: `[` + user + `]`,
			wantRaw:  `[{"role":"system","content":"Use <b> & \"quotes\"\n."},` + user + `]`,
			wantFlat: flat("system", "Use <b> & \"quotes\"\n.", "user", "hi"),
			status:   StatusApplied,
		},
		{
			name: "disabled", config: `{"system_prompt":"P","enabled":false}`,
			messages: `[` + user + `]`,
			wantRaw:  `[` + user + `]`,
			wantFlat: flat("user", "hi"),
			status:   StatusSkipped, detail: "disabled by its configuration (enabled: false)",
		},
		{
			name: "enabled true", config: `{"system_prompt":"P","enabled":true,"mode":"replace"}`,
			messages: `[` + user + `]`,
			wantRaw:  `[{"role":"system","content":"P"},` + user + `]`,
			wantFlat: flat("system", "P", "user", "hi"),
			status:   StatusApplied,
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
	if _, err := NewNative().Request(context.Background(), refs, req); err != nil {
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
			if out.Reports[0].Status != StatusApplied {
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
			req := &Request{Chat: c, Decision: "d"}
			out := runOne(t, ref(TypeRequestParams, tt.config), req)
			if out.Reports[0].Status != StatusApplied {
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
	out, err := NewNative().Request(context.Background(), []recipes.PluginRef{ref(TypeRequestParams, `{"max_tokens_limit":5}`)}, &Request{Chat: c})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Reports[0]; r.Status != StatusFailed || r.Detail != "max_tokens is a string, not an integer" {
		t.Errorf("report = %+v", r)
	}
	if string(c.Fields["max_tokens"]) != `"many"` {
		t.Errorf("failed plugin changed the request")
	}
}

func TestFastResponse(t *testing.T) {
	for _, tt := range []struct{ model, want string }{{"small", "small"}, {"", FastResponseModel}} {
		req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		req.Model = tt.model
		out := runOne(t, ref(TypeFastResponse, `{"message":"I can't help with that request."}`), req)
		want := &Immediate{Status: 200, Content: "I can't help with that request.", Model: tt.want}
		if !reflect.DeepEqual(out.Immediate, want) {
			t.Errorf("immediate = %+v, want %+v", out.Immediate, want)
		}
		if out.Reports[0].Status != StatusApplied {
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
	out, err := NewNative().Request(context.Background(), refs, req)
	if err != nil {
		t.Fatal(err)
	}
	if out.Immediate == nil || out.Immediate.Content != "no" {
		t.Fatalf("immediate = %+v", out.Immediate)
	}
	wantStatus := []string{StatusApplied, StatusApplied, StatusSkipped, StatusSkipped, StatusSkipped, StatusSkipped}
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
	out, err := NewNative().Request(context.Background(), refs, req)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out.Reports {
		if r.Status != StatusApplied {
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
		wantFirst Report
	}{
		{
			name: "bad configuration, default skip", first: bad, onError: "",
			wantFirst: Report{Type: TypeSystemPrompt, Status: StatusFailed, Detail: `system_prompt plugin: configuration.mode must be insert or replace, not "sideways"`},
		},
		{
			name: "bad configuration, skip", first: bad, onError: "skip",
			wantFirst: Report{Type: TypeSystemPrompt, Status: StatusFailed, Detail: `system_prompt plugin: configuration.mode must be insert or replace, not "sideways"`},
		},
		{
			name: "bad configuration, fail", first: bad, onError: "fail",
			wantFirst: Report{Type: TypeSystemPrompt, Status: StatusFailed, Detail: `system_prompt plugin: configuration.mode must be insert or replace, not "sideways"`},
			wantErr:   `plugin 0 (system_prompt) of decision "code" failed (on_error: fail): system_prompt plugin: configuration.mode must be insert or replace, not "sideways"`,
		},
		{
			name: "unavailable, skip", first: ref("response_cache", `{"mode":"exact_then_semantic"}`), onError: "skip",
			wantFirst: Report{Type: "response_cache", Status: StatusUnavailable, Detail: "the response_cache plugin needs the WebAssembly plugin runtime, which is not built yet"},
		},
		{
			name: "unavailable, fail", first: ref("rag", ``), onError: "fail",
			wantFirst: Report{Type: "rag", Status: StatusUnavailable, Detail: "the rag plugin needs the WebAssembly plugin runtime, which is not built yet"},
			wantErr:   `plugin 0 (rag) of decision "code" is unavailable (on_error: fail): the rag plugin needs the WebAssembly plugin runtime, which is not built yet`,
		},
		{
			name: "unknown type is unavailable too", first: ref("my_wasm_plugin", `{}`), onError: "",
			wantFirst: Report{Type: "my_wasm_plugin", Status: StatusUnavailable, Detail: "the my_wasm_plugin plugin needs the WebAssembly plugin runtime, which is not built yet"},
		},
		{
			name: "invalid on_error fails the request", first: ref(TypeFastResponse, `{"message":"x"}`), onError: "ignore",
			wantFirst: Report{Type: TypeFastResponse, Status: StatusFailed, Detail: `fast_response plugin: on_error must be skip or fail, not "ignore"`},
			wantErr:   `plugin 0 (fast_response) of decision "code": fast_response plugin: on_error must be skip or fail, not "ignore"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
			req.Decision = "code"
			first := tt.first
			first.OnError = tt.onError
			out, err := NewNative().Request(context.Background(), []recipes.PluginRef{first, good}, req)
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
				if len(out.Reports) != 2 || out.Reports[1].Status != StatusApplied || req.Header.Get("X-A") != "1" {
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

func TestRuntimeFailureLeavesRequestUnchanged(t *testing.T) {
	// A chat body whose messages are not an array: system_prompt fails, and
	// with no chat body at all request_params fails; both skip.
	c := &chat.Request{Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`), "messages": json.RawMessage(`{"oops":1}`)}}
	req := &Request{Chat: c, Decision: "d"}
	out, err := NewNative().Request(context.Background(), []recipes.PluginRef{ref(TypeSystemPrompt, `{"system_prompt":"P"}`)}, req)
	if err != nil {
		t.Fatal(err)
	}
	if out.Reports[0].Status != StatusFailed || !strings.Contains(out.Reports[0].Detail, "messages") {
		t.Errorf("report = %+v", out.Reports[0])
	}
	if string(c.Fields["messages"]) != `{"oops":1}` {
		t.Errorf("messages changed")
	}
	out, err = NewNative().Request(context.Background(), []recipes.PluginRef{ref(TypeRequestParams, `{"max_n":1}`)}, &Request{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Reports[0].Status != StatusFailed || out.Reports[0].Detail != "the request has no chat body" {
		t.Errorf("report = %+v", out.Reports[0])
	}
}

type panicky struct{}

func (panicky) run(*Request) (*mutations, error) { panic("boom") }

func TestPanicFailsOnlyThatPlugin(t *testing.T) {
	steps := []step{
		{typ: "x", onError: recipes.OnErrorSkip, inst: panicky{}},
		{typ: TypeFastResponse, onError: recipes.OnErrorSkip, inst: &fastResponse{message: "ok"}},
	}
	out, err := Prepared{steps: steps}.Request(context.Background(), &Request{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Reports[0].Status != StatusFailed || out.Reports[0].Detail != "the plugin panicked: boom" {
		t.Errorf("report = %+v", out.Reports[0])
	}
	if out.Immediate == nil {
		t.Errorf("the plugin after the panic did not run")
	}
}

func TestStageGuardsOwnedFields(t *testing.T) {
	c := &chat.Request{Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`)}}
	for _, m := range []*mutations{
		{del: []string{"model"}},
		{del: []string{"messages"}},
		{set: []field{{"messages", json.RawMessage(`[]`)}}},
		{set: []field{{"stream", json.RawMessage(`true`)}}},
		{headers: []headerOp{{kind: headerSet, name: "Authorization", value: "x"}}},
	} {
		if err := apply(&Request{Chat: c}, m); err == nil {
			t.Errorf("apply(%+v) succeeded", m)
		}
	}
	if len(c.Fields) != 1 {
		t.Errorf("fields changed: %v", c.Fields)
	}
}

func TestModesAndContext(t *testing.T) {
	refs := []recipes.PluginRef{ref(TypeFastResponse, `{"message":"x"}`)}
	for _, mode := range []string{"", ModeLive, ModeProbe, ModePreview} {
		req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		req.Mode = mode
		out, err := NewNative().Request(context.Background(), refs, req)
		if err != nil || out.Immediate == nil {
			t.Errorf("mode %q: %v %+v", mode, err, out)
		}
	}
	req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	req.Mode = "dry"
	if _, err := NewNative().Request(context.Background(), refs, req); err == nil {
		t.Error("unknown mode accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req.Mode = ""
	if _, err := NewNative().Request(ctx, refs, req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if out, err := NewNative().Request(context.Background(), nil, req); err != nil || len(out.Reports) != 0 || out.Immediate != nil {
		t.Errorf("no plugins: %+v %v", out, err)
	}
	if _, err := NewNative().Request(context.Background(), refs, nil); err == nil {
		t.Error("nil request accepted")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		ref     recipes.PluginRef
		field   string // the ConfigError's Field; "" means valid
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
		{"system_prompt unknown field", ref(TypeSystemPrompt, `{"system_prompt":"x","prompt_mode":"insert"}`), "configuration.prompt_mode", "is not a field of the system_prompt configuration (fields: system_prompt, mode, enabled)"},
		{"configuration not an object", ref(TypeSystemPrompt, `"be nice"`), "configuration", "must be an object, not a string"},

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
		{"header add not an array", ref(TypeHeaderMutation, `{"add":{"name":"x"}}`), "configuration.add", "must be an array of objects"},
		{"header delete not strings", ref(TypeHeaderMutation, `{"delete":[1]}`), "configuration.delete[0]", "must be a string"},

		{"params ok", ref(TypeRequestParams, `{"blocked_params":["logit_bias"],"max_tokens_limit":4096,"max_n":1,"strip_unknown":true}`), "", ""},
		{"params whole float accepted", ref(TypeRequestParams, `{"max_tokens_limit":4096.0}`), "", ""},
		{"params limit not an integer", ref(TypeRequestParams, `{"max_tokens_limit":40.5}`), "configuration.max_tokens_limit", "must be an integer, not a number (40.5)"},
		{"params limit a string", ref(TypeRequestParams, `{"max_tokens_limit":"4096"}`), "configuration.max_tokens_limit", "must be an integer, not a string"},
		{"params limit zero", ref(TypeRequestParams, `{"max_tokens_limit":0}`), "configuration.max_tokens_limit", "at least 1"},
		{"params max_n negative", ref(TypeRequestParams, `{"max_n":-1}`), "configuration.max_n", "at least 1"},
		{"params block model", ref(TypeRequestParams, `{"blocked_params":["model"]}`), "configuration.blocked_params[0]", "cannot block model"},
		{"params block messages", ref(TypeRequestParams, `{"blocked_params":["x","messages"]}`), "configuration.blocked_params[1]", "cannot block messages"},
		{"params block empty", ref(TypeRequestParams, `{"blocked_params":[""]}`), "configuration.blocked_params[0]", "must not be empty"},
		{"params unknown field", ref(TypeRequestParams, `{"max_tokens":5}`), "configuration.max_tokens", "is not a field of the request_params configuration"},
		{"params strip not a bool", ref(TypeRequestParams, `{"strip_unknown":1}`), "configuration.strip_unknown", "must be a boolean"},

		{"fast ok", ref(TypeFastResponse, `{"message":"no"}`), "", ""},
		{"fast missing message", ref(TypeFastResponse, `{}`), "configuration.message", "is required"},
		{"fast unknown field", ref(TypeFastResponse, `{"message":"no","status":403}`), "configuration.status", "is not a field"},

		{"planned type accepted", ref("response_cache", `{"anything":1}`), "", ""},
		{"unknown type", ref("sytem_prompt", `{}`), "type", "known types: fast_response, header_mutation, request_params, system_prompt (built in), and context_compression"},
		{"missing type", ref("", `{}`), "type", "is required"},
		{"bad on_error", recipes.PluginRef{Type: TypeFastResponse, Configuration: json.RawMessage(`{"message":"x"}`), OnError: "retry"}, "on_error", `must be skip or fail, not "retry"`},
		{"on_error fail", recipes.PluginRef{Type: TypeFastResponse, Configuration: json.RawMessage(`{"message":"x"}`), OnError: "fail"}, "", ""},
	}
	n := NewNative()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := n.Validate(tt.ref)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want a *ConfigError", err, err)
			}
			if ce.Field != tt.field || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("err = %v (field %q), want field %q containing %q", err, ce.Field, tt.field, tt.message)
			}
		})
	}
}

func TestValidateExampleConfigPlugins(t *testing.T) {
	// The plugin references of ../shared/spec/example-config.yaml, as JSON.
	n := NewNative()
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
	n := NewNative()
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
	if !reflect.DeepEqual(got, []string{StatusApplied, StatusUnavailable, StatusApplied}) || out.Immediate == nil {
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
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "configuration.message" {
		t.Errorf("errors.As: %+v", ce)
	}

	var zero Prepared
	if out, err := zero.Request(context.Background(), req); err != nil || len(out.Reports) != 0 {
		t.Errorf("zero Prepared: %+v %v", out, err)
	}
}

func TestCompileCache(t *testing.T) {
	n := NewNative()
	r := ref(TypeSystemPrompt, `{"system_prompt":"P"}`)
	a := n.step(r).inst
	b := n.step(ref(TypeSystemPrompt, `{"system_prompt":"P"}`)).inst
	if a != b {
		t.Error("the same configuration was compiled twice")
	}
	if c := n.step(ref(TypeSystemPrompt, `{"system_prompt":"Q"}`)).inst; c == a {
		t.Error("a different configuration shared a compiled form")
	}
	for i := 0; i < maxCached+10; i++ {
		n.step(ref(TypeFastResponse, `{"message":"m`+strings.Repeat("x", i)+`"}`))
	}
	if n.size > maxCached {
		t.Errorf("cache size %d exceeds %d", n.size, maxCached)
	}
	if allocs := testing.AllocsPerRun(100, func() { n.step(r) }); allocs != 0 {
		t.Errorf("a cached step allocates %v times", allocs)
	}
}

func TestNoIO(t *testing.T) {
	// The package must not reach outside the request: its non-test files may
	// import only these.
	allowed := map[string]bool{
		`"bytes"`: true, `"context"`: true, `"encoding/json"`: true, `"errors"`: true, `"fmt"`: true,
		`"math"`: true, `"net/http"`: true, `"slices"`: true, `"strconv"`: true, `"strings"`: true, `"sync"`: true, `"unicode/utf8"`: true,
		`"github.com/junction-router/junction/internal/chat"`: true, `"github.com/junction-router/junction/recipes"`: true,
		// The plugin ABI's wire types: no I/O, no dependencies.
		`"github.com/junction-router/junction/hostapi/abi"`: true,
		// A JSON scanner: no I/O, only the standard library and the ABI.
		`"github.com/junction-router/junction/sdk/jsonscan"`: true,
	}
	for _, imp := range packageImports(t) {
		if !allowed[imp] {
			t.Errorf("internal/plugin imports %s", imp)
		}
	}
}
