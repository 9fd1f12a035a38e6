//go:build !race

package builtin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/recipes"
)

// TestModulesMatchNative runs the four plugins that call no host function
// natively (internal/plugin/native: their guest code compiled for the host)
// and as the compiled modules on the same configurations and requests: the
// request afterwards, the headers, the status and the detail must be the
// same, and a configuration the native run refuses must be refused by the
// module. It is the same code both ways; this checks the embedded modules are
// built from it and that the ABI records carry everything.
func TestModulesMatchNative(t *testing.T) {
	h := newHost(t)
	header := http.Header{"X-Tag": {"a", "b"}, "X-B": {"0"}, "X-C": {"0"}, "Accept": {"*/*"}}
	var hs []abi.Header
	for k, vs := range header {
		for _, v := range vs {
			hs = append(hs, abi.Header{Name: k, Value: v})
		}
	}
	compared := 0
	for typ, cfgs := range parityConfigs {
		for _, cfg := range cfgs {
			b, bindErr := h.Bind(context.Background(), module(t, h, typ), []byte(cfg), hostapi.Limits{})
			for _, body := range parityRequests {
				c, err := chat.Parse([]byte(body))
				if err != nil {
					c = &chat.Request{}
					if err := json.Unmarshal([]byte(body), &c.Fields); err != nil {
						t.Fatal(err)
					}
				}
				nreq := &plugin.Request{Chat: c, Header: header.Clone(), Decision: "d", Model: "small"}
				ref := recipes.PluginRef{Type: typ, OnError: recipes.OnErrorFail, Configuration: json.RawMessage(cfg)}
				if cfg == "" {
					ref.Configuration = nil
				}
				nout, nerr := native.Stage().Request(context.Background(), []recipes.PluginRef{ref}, nreq)
				if bindErr != nil {
					if nerr == nil {
						t.Errorf("%s %s: the module refuses the configuration (%v), the native plugin accepts it", typ, cfg, bindErr)
					}
					break
				}
				req := request(t, abi.ModeLive, body, hs...)
				res, err := b.Call(context.Background(), req)
				if err != nil {
					t.Fatalf("%s %s: %v", typ, cfg, err)
				}
				if nerr != nil || res.Failed {
					if (nerr != nil) != res.Failed {
						t.Errorf("%s %s on %s: native error %v, module failed %v (%s)", typ, cfg, body, nerr, res.Failed, res.Error)
					}
					continue
				}
				got, err := apply(t, body, header, res.Result)
				if err != nil {
					t.Fatalf("%s %s: %v", typ, cfg, err)
				}
				enc, _ := nreq.Chat.Encode()
				want, _ := apply(t, string(enc), nreq.Header, abi.Result{})
				if got.Body != want.Body || !reflect.DeepEqual(got.Header, want.Header) {
					t.Errorf("%s %s on %s:\nmodule %+v\nnative %+v", typ, cfg, body, got, want)
				}
				rep := nout.Reports[0]
				if rep.Detail != res.Detail || (rep.Status == plugin.StatusSkipped) != res.Skipped {
					t.Errorf("%s %s: report %q skipped=%v, native %q %s", typ, cfg, res.Detail, res.Skipped, rep.Detail, rep.Status)
				}
				if (nout.Immediate == nil) != (res.Immediate == nil) || (res.Immediate != nil && res.Immediate.Content != nout.Immediate.Content) {
					t.Errorf("%s %s: immediate %+v, native %+v", typ, cfg, res.Immediate, nout.Immediate)
				}
				compared++
			}
		}
	}
	if compared < 300 {
		t.Fatalf("only %d comparisons ran", compared)
	}
}
