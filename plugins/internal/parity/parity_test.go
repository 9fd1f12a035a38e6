package parity

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
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

func TestParityWithNative(t *testing.T) {
	header := http.Header{"X-Tag": {"a", "b"}, "X-B": {"0"}, "X-C": {"0"}, "Accept": {"*/*"}}
	for typ, cfgs := range Configs {
		for _, cfg := range cfgs {
			for _, body := range Requests {
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
