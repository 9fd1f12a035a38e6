//go:build !race

package builtin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/plugins/builtin"
	"github.com/junction-router/junction/recipes"
)

// benchBody is a typical short conversation.
const benchBody = `{"model":"MoM","temperature":0.2,"max_tokens":8000,"logit_bias":{"1":2},"x_vendor":true,
 "messages":[{"role":"system","content":"You are a helpful assistant."},
 {"role":"user","content":"Summarise the plot of Hamlet in three sentences, please."},
 {"role":"assistant","content":"Hamlet, prince of Denmark, seeks revenge on his uncle Claudius."},
 {"role":"user","content":"Now do the same for Macbeth, and mention the witches."}]}`

var benchRefs = map[string]recipes.PluginRef{
	"system_prompt":   {Type: "system_prompt", Configuration: json.RawMessage(`{"system_prompt":"Be careful.","mode":"insert"}`)},
	"header_mutation": {Type: "header_mutation", Configuration: json.RawMessage(`{"add":[{"name":"x-route-family","value":"code"}],"delete":["x-drop"]}`)},
	"request_params":  {Type: "request_params", Configuration: json.RawMessage(`{"max_tokens_limit":4096,"blocked_params":["logit_bias"],"strip_unknown":true}`)},
	"fast_response":   {Type: "fast_response", Configuration: json.RawMessage(`{"message":"I can't help with that request."}`)},
}

// BenchmarkStage runs one plugin through the plugin stage per request, natively
// (internal/plugin/native without a host, and with the host's functions as
// serve runs the built-ins: native-host) and as the embedded wasm module in
// the host: the difference is what the sandbox costs.
func BenchmarkStage(b *testing.B) {
	ctx := context.Background()
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: plugintest.CacheDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close(ctx)
	var reg hostapi.Registry
	for typ := range benchRefs {
		wasmBytes, err := builtin.Module(typ)
		if err != nil {
			b.Fatal(err)
		}
		if err := reg.RegisterTrusted(typ, wasmBytes); err != nil {
			b.Fatal(err)
		}
	}
	mods, err := wasm.Load(ctx, host, &reg, hostapi.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer mods.Close(ctx)
	runners := []struct {
		name string
		r    plugin.Runner
	}{{"native", native.Stage()}, {"native-host", plugin.New(native.WithHost(host, hostapi.Limits{}))}, {"wasm", plugin.New(mods)}}
	for _, typ := range []string{"system_prompt", "header_mutation", "request_params", "fast_response"} {
		refs := []recipes.PluginRef{benchRefs[typ]}
		for _, rn := range runners {
			b.Run(typ+"/"+rn.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c, err := chat.Parse([]byte(benchBody))
					if err != nil {
						b.Fatal(err)
					}
					req := &plugin.Request{Chat: c, Header: http.Header{"X-Drop": {"1"}}, Decision: "d", Model: "small"}
					out, err := rn.r.Request(ctx, refs, req)
					if err != nil || out.Reports[0].Status != plugin.StatusApplied {
						b.Fatalf("%v %+v", err, out.Reports)
					}
				}
			})
		}
	}
}
