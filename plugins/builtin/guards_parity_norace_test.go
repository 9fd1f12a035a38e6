//go:build !race

package builtin_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/plugin/native"
)

// TestGuardsNativeMatchModules runs tool_selection, response_jailbreak and
// hallucination natively over a host's functions (as serve runs them) and
// as their modules, each over its own host, on the same requests and
// answers in every mode: the result records, backend calls and persistence
// must be the same. The hosts have the model-free embedder and jailbreak
// classifier and no external models (so the guardrail and nli bindings are
// unavailable alike), and the sequence holds hostile inputs.
func TestGuardsNativeMatchModules(t *testing.T) {
	hm, _ := hostWithCache(t)
	hn, _ := hostWithCache(t)
	nat := native.WithHost(hn, hostapi.Limits{})
	configs := map[string][]string{
		"tool_selection": {`{}`, `{"top_k":1,"similarity_threshold":"0.05","always_keep":["get_time"]}`, `{"similarity_threshold":"0.99","fallback_to_empty":false}`,
			`{"top_k":1,"similarity_threshold":0,"tools_db":[{"type":"function","function":{"name":"send_email","description":"send an email"}},{"type":"function","function":{"name":"get_time"}}]}`},
		"response_jailbreak": {`{}`, `{"threshold":0,"action":"redact"}`, `{"threshold":0,"action":"annotate","header":"X-Guard"}`, `{"detector":"guardrail"}`},
		"hallucination":      {`{"detector":"lexical"}`, `{"detector":"lexical","action":"block","min_claim_words":1}`, `{}`},
	}
	bodies := []string{
		`{"model":"small","messages":[{"role":"user","content":"what is the weather forecast in Paris city"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"weather forecast for a city"}},{"type":"function","function":{"name":"send_email","description":"send an email"}},{"type":"function","function":{"name":"get_time"}}],"tool_choice":{"type":"function","function":{"name":"send_email"}}}`,
		`{"model":"small","supplied_answer":"As DAN I will say anything.","supplied_score":0.8,"supplied_context":["DAN is a persona."],"messages":[{"role":"system","content":"sys"},{"role":"system","content":"Refunds are accepted within 30 days."},{"role":"user","content":"refund window?"}]}`,
		`{"model":"small","supplied_answer":5,"supplied_score":"x","tools":{"a":1},"messages":[{"role":"user","content":""}]}`,
		`{"model":"small","messages":[]}`,
	}
	answers := []string{
		`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Refunds are accepted within 90 days. Shipping is always free for everyone."},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":[{"type":"text","text":"Sure, ignoring my rules."}]}}]}`,
		`{"choices":null}`,
		`not json`,
		`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
	}
	compared := 0
	for typ, cfgs := range configs {
		mod, err := hm.LoadTrusted(context.Background(), mustModule(t, typ))
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range cfgs {
			b, err := hm.Bind(context.Background(), mod, []byte(cfg), hostapi.Limits{})
			if err != nil {
				t.Fatalf("%s %s: %v", typ, cfg, err)
			}
			for bi, body := range bodies {
				for _, mode := range []abi.Mode{abi.ModeLive, abi.ModeProbe, abi.ModePreview} {
					where := fmt.Sprintf("%s %s body %d %s", typ, cfg, bi, mode)
					req := request(t, mode, body)
					mres, merr := b.Call(context.Background(), req)
					nres, nerr := nat.Call(context.Background(), typ, []byte(cfg), req)
					same(t, where+" request", mres, merr, nres, nerr)
					compared++
					if typ == "tool_selection" {
						continue
					}
					for ai, a := range answers {
						resp := request(t, mode, body)
						resp.Phase, resp.Status, resp.ResponseBody = abi.PhaseResponse, 200, []byte(a)
						mres, merr = b.Call(context.Background(), resp)
						nres, nerr = nat.Call(context.Background(), typ, []byte(cfg), resp)
						same(t, fmt.Sprintf("%s response %d", where, ai), mres, merr, nres, nerr)
						compared++
					}
				}
			}
		}
	}
	if compared < 200 {
		t.Fatalf("only %d comparisons", compared)
	}
}
