package parity

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/junction-router/junction/engine/chat"
	"github.com/junction-router/junction/engine/plugin"
	"github.com/junction-router/junction/plugins/fastresponse"
	"github.com/junction-router/junction/plugins/headermutation"
	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/pconfig"
	"github.com/junction-router/junction/plugins/requestparams"
	"github.com/junction-router/junction/plugins/systemprompt"
	"github.com/junction-router/junction/recipes"
)

// outcome is what either implementation did to one request.
type outcome struct {
	Body      string // canonical JSON
	Header    http.Header
	Status    string
	Detail    string
	Immediate string
}

func canon(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("invalid JSON %s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func native(t *testing.T, typ, config, body string, header http.Header) (outcome, error) {
	t.Helper()
	c, err := chat.Parse([]byte(body))
	if err != nil {
		c = &chat.Request{}
		if err := json.Unmarshal([]byte(body), &c.Fields); err != nil {
			t.Fatal(err)
		}
	}
	req := &plugin.Request{Chat: c, Header: header.Clone(), Decision: "d", Model: "small"}
	ref := recipes.PluginRef{Type: typ, OnError: recipes.OnErrorFail}
	if config != "" {
		ref.Configuration = json.RawMessage(config)
	}
	out, err := plugin.NewNative().Request(context.Background(), []recipes.PluginRef{ref}, req)
	if err != nil {
		return outcome{}, err
	}
	enc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	o := outcome{Body: canon(t, enc), Header: req.Header, Status: out.Reports[0].Status, Detail: out.Reports[0].Detail}
	if out.Immediate != nil {
		o.Immediate = out.Immediate.Content
	}
	return o, nil
}

// wasmLogic runs the plugins/ package's logic and applies its result the way
// the host does.
func wasmLogic(t *testing.T, typ, config, body string, header http.Header) (outcome, error) {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &fields); err != nil {
		t.Fatal(err)
	}
	o := outcome{Header: header.Clone(), Status: plugin.StatusApplied}
	switch typ {
	case systemprompt.Type:
		c, err := systemprompt.ParseConfig([]byte(config))
		if err != nil {
			return o, err
		}
		msgs, err := chatmsg.Parse(fields["messages"])
		if err != nil {
			return o, err
		}
		res, err := c.Run(msgs)
		if err != nil {
			return o, err
		}
		next, err := chatmsg.Apply(chatmsg.Raws(msgs), res.Edits)
		if err != nil {
			return o, err
		}
		if next == nil {
			next = []json.RawMessage{}
		}
		if len(res.Edits) > 0 {
			fields["messages"], _ = json.Marshal(next)
		}
		o.Detail = res.Detail
		if res.Skipped {
			o.Status = plugin.StatusSkipped
		}
	case requestparams.Type:
		c, err := requestparams.ParseConfig([]byte(config))
		if err != nil {
			return o, err
		}
		res, err := c.Run(fields)
		if err != nil {
			return o, err
		}
		for _, name := range res.Remove {
			delete(fields, name)
		}
		for _, s := range res.Set {
			fields[s.Name] = s.Value
		}
		o.Detail = res.Detail
	case headermutation.Type:
		c, err := headermutation.ParseConfig([]byte(config))
		if err != nil {
			return o, err
		}
		if o.Header == nil && len(c.Ops()) > 0 {
			o.Header = http.Header{}
		}
		for _, op := range c.Ops() {
			switch op.Kind {
			case headermutation.Add:
				o.Header[op.Name] = append(o.Header[op.Name], op.Value)
			case headermutation.Set:
				o.Header[op.Name] = []string{op.Value}
			case headermutation.Remove:
				delete(o.Header, op.Name)
			}
		}
		o.Detail = c.Detail()
	case fastresponse.Type:
		c, err := fastresponse.ParseConfig([]byte(config))
		if err != nil {
			return o, err
		}
		o.Immediate, o.Detail = c.Message, fastresponse.Detail
	default:
		t.Fatalf("no logic for %s", typ)
	}
	b, _ := json.Marshal(fields)
	o.Body = canon(t, b)
	return o, nil
}

const user = `{"role":"user","content":"hi"}`

var requests = []string{
	`{"model":"m","messages":[` + user + `]}`,
	`{"model":"m","temperature":0.5,"messages":[{"role":"system","content":"Old."},` + user + `]}`,
	`{"model":"m","messages":[{"name":"sys","role":"system","content":"a\u00e9\"b","x":[1,{"y":"}"}]},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":""},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":null},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system"},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"Old.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"More."}]},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"Old."}]},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":[]},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":""}]},` + user + `]}`,
	`{"model":"m","messages":[` + user + `,{"role":"system","content":"Late."}]}`,
	`{"model":"m","messages":[{"role":"developer","content":"Dev."},` + user + `]}`,
	`{"model":"m","messages":[],"logit_bias":{"1":2},"user":"u","seed":1,"max_tokens":8000,"n":4}`,
	`{"model":"m","messages":[],"max_completion_tokens":101,"max_tokens":100,"x_vendor":1,"chat_template_kwargs":{"a":true}}`,
	`{"model":"m","messages":[],"max_tokens":null,"stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"f"}}]}`,
	`{"model":"m","messages":[],"max_tokens":"many"}`,
	`{"model":"m","messages":[],"max_tokens":4096.0,"n":2}`,
}

var configs = map[string][]string{
	systemprompt.Type: {
		`{"system_prompt":"Be careful.","mode":"insert"}`, `{"system_prompt":"P","mode":"replace"}`,
		`{"system_prompt":"P"}`, `{"system_prompt":"Use <b> & \"quotes\"\n."}`,
		`{"system_prompt":"P","enabled":false}`, `{"system_prompt":"P","enabled":true,"mode":"replace"}`,
		// refused
		`{"mode":"insert"}`, ``, `null`, `{"system_prompt":"  "}`, `{"system_prompt":"x","mode":"append"}`,
		`{"system_prompt":5}`, `{"system_prompt":"x","enabled":"yes"}`, `{"system_prompt":"x","prompt_mode":"insert"}`, `"be nice"`,
	},
	headermutation.Type: {
		`{"add":[{"name":"x-route-family","value":"code"}]}`, `{"add":[{"name":"X-Tag","value":"b"},{"name":"x-tag","value":"c"}]}`,
		`{"update":[{"name":"x-tag","value":"z"}]}`, `{"update":[{"name":"x-new","value":""}]}`, `{"delete":["x-tag","x-absent"]}`,
		`{"add":[{"name":"x-a","value":"1"}],"update":[{"name":"x-b","value":"2"}],"delete":["x-c"]}`, `{}`,
		// refused
		`{"remove":["x"]}`, `{"add":[{"name":"x","value":"1","append":true}]}`, `{"update":[{"value":"1"}]}`,
		`{"add":[{"name":"x"}]}`, `{"add":[{"name":"x a","value":"1"}]}`, `{"add":[{"name":":path","value":"/"}]}`,
		`{"add":[{"name":"x","value":"a\r\nb: c"}]}`, `{"update":[{"name":"authorization","value":"Bearer x"}]}`,
		`{"add":[{"name":"Host","value":"evil"}]}`, `{"delete":["content-length"]}`, `{"delete":["Connection"]}`,
		`{"add":[{"name":"te","value":"trailers"}]}`, `{"add":[{"name":"x-a","value":"1"}],"delete":["X-A"]}`,
		`{"add":[{"name":"x-a","value":"1"}],"update":[{"name":"x-a","value":"2"}]}`,
		`{"update":[{"name":"x-a","value":"1"},{"name":"x-a","value":"2"}]}`, `{"add":{"name":"x"}}`, `{"delete":[1]}`,
	},
	requestparams.Type: {
		`{"blocked_params":["logit_bias","user","absent"]}`, `{"max_tokens_limit":4096}`, `{"max_tokens_limit":100}`,
		`{"max_tokens_limit":100,"max_n":2}`, `{"max_n":1}`, `{"strip_unknown":true}`, `{"strip_unknown":false}`,
		`{"blocked_params":["max_tokens","x"],"max_tokens_limit":10,"strip_unknown":true}`,
		`{"blocked_params":["stream","stream_options","tools"]}`, ``, `{"max_tokens_limit":4096.0}`,
		// refused
		`{"max_tokens_limit":40.5}`, `{"max_tokens_limit":"4096"}`, `{"max_tokens_limit":0}`, `{"max_n":-1}`,
		`{"blocked_params":["model"]}`, `{"blocked_params":["x","messages"]}`, `{"blocked_params":[""]}`,
		`{"max_tokens":5}`, `{"strip_unknown":1}`,
	},
	fastresponse.Type: {`{"message":"I can't help with that request."}`, `{}`, `{"message":"no","status":403}`, `{"message":" "}`},
}

func TestParityWithNative(t *testing.T) {
	header := http.Header{"X-Tag": {"a", "b"}, "X-B": {"0"}, "X-C": {"0"}, "Accept": {"*/*"}}
	for typ, cfgs := range configs {
		for _, cfg := range cfgs {
			for _, body := range requests {
				want, werr := native(t, typ, cfg, body, header)
				got, gerr := wasmLogic(t, typ, cfg, body, header)
				var ce *plugin.ConfigError
				if errors.As(werr, &ce) {
					var pe *pconfig.Error
					if !errors.As(gerr, &pe) || pe.Field != ce.Field {
						t.Errorf("%s %s: native refuses at %s (%v), plugin: %v", typ, cfg, ce.Field, werr, gerr)
					}
					break // the same for every request
				}
				if (werr != nil) != (gerr != nil) {
					t.Errorf("%s %s on %s: native error %v, plugin error %v", typ, cfg, body, werr, gerr)
					continue
				}
				if werr != nil {
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s on %s:\nplugin %+v\nnative %+v", typ, cfg, body, got, want)
				}
			}
		}
	}
}
