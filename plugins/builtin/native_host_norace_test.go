//go:build !race

package builtin_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/plugins/builtin"
)

// hostWithCache is a plugin host over its own in-memory response cache and
// the harness's hashed embedder.
func hostWithCache(t *testing.T) (*hostapi.Host, *memstore.Cache) {
	t.Helper()
	be, cache, _, err := wasm.Backends(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := hostapi.New(context.Background(), hostapi.Config{CacheDir: plugintest.CacheDir(), Backends: be, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h, cache
}

// TestNativeWithHostMatchesModules runs the built-ins that call host
// functions natively (internal/plugin/native with a host, as serve runs
// them) and as their modules, each over its own host and response cache, on
// the same sequence of requests and answers in every mode: the results, the
// backend calls, what was persisted, and the caches' counts and sizes
// afterwards must be the same. The sequence has exact and semantic hits,
// refused near-misses, answers that must not be stored, bypass and
// no-store headers, per-user scope and each mode's gate.
func TestNativeWithHostMatchesModules(t *testing.T) {
	hm, mcache := hostWithCache(t)
	hn, ncache := hostWithCache(t)
	nat := native.WithHost(hn, hostapi.Limits{})
	var needHost []string
	for _, s := range builtin.Sources {
		if s.NeedsHost {
			needHost = append(needHost, s.Type)
			if !nat.Has(s.Type) {
				t.Fatalf("%s needs a host and the native modules with a host do not run it", s.Type)
			}
		}
	}
	if !reflect.DeepEqual(needHost, []string{"response_cache", "tool_selection", "response_jailbreak", "hallucination"}) {
		t.Fatalf("built-ins run natively with a host: %v; give each a parity sequence here (or in guards_parity_norace_test.go)", needHost)
	}
	mod, err := hm.LoadTrusted(context.Background(), mustModule(t, "response_cache"))
	if err != nil {
		t.Fatal(err)
	}
	if !mod.HasResponsePhase() || !nat.HasResponse("response_cache") {
		t.Fatalf("response phase: module %v, native %v", mod.HasResponsePhase(), nat.HasResponse("response_cache"))
	}
	const completion = `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}]}`
	answers := []struct {
		status int
		body   string
	}{
		{200, fmt.Sprintf(completion, "Paris.")},
		{500, `{"error":{"message":"upstream down"}}`},
		{200, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`},
		{200, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Ber\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lin.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"},
		{200, fmt.Sprintf(completion, "Rome.")},
	}
	questions := []string{
		"what is the capital of france",
		"tell me the capital of france",
		"what is the capital city of france",
		"what was the capital of france in 1700",
		"what is the capital of germany",
		"what is the capital of germany",
		"capital of italy?",
	}
	bodies := []string{`{"model":"small","messages":[{"role":"user","content":%q}]}`,
		`{"model":"small","user":"u1","stream":true,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":%q}]}`}
	headerSets := [][]abi.Header{nil, {{Name: "X-Cache-Bypass", Value: "true"}}, {{Name: "Cache-Control", Value: "no-store"}}}
	configs := []string{
		`{"mode":"exact"}`,
		`{"mode":"exact_then_semantic","semantic":{"similarity_threshold":0.8},"ttl_seconds":600}`,
		`{"mode":"semantic","semantic":{"similarity_threshold":0.5}}`,
		`{"mode":"exact","scope":{"user":true,"decision":false}}`,
		`{"mode":"semantic","ttl_seconds":0.5}`, // refused by both
	}
	compared, hits := 0, 0
	for _, cfg := range configs {
		b, bindErr := hm.Bind(context.Background(), mod, []byte(cfg), hostapi.Limits{})
		if bindErr != nil {
			if nat.Validate("response_cache", []byte(cfg)) == nil {
				t.Errorf("%s: the module refuses the configuration (%v), the native plugin accepts it", cfg, bindErr)
			}
			continue
		}
		step := 0
		for _, q := range questions {
			for _, bt := range bodies {
				for _, hs := range headerSets {
					for _, mode := range []abi.Mode{abi.ModeLive, abi.ModeProbe, abi.ModePreview} {
						step++
						req := request(t, mode, fmt.Sprintf(bt, q), hs...)
						where := fmt.Sprintf("%s step %d (%s, %s, %v)", cfg, step, q, mode, hs)
						mres, merr := b.Call(context.Background(), req)
						nres, nerr := nat.Call(context.Background(), "response_cache", []byte(cfg), req)
						same(t, where+" request", mres, merr, nres, nerr)
						if mres.CacheStatus == "hit" {
							hits++
						}
						a := answers[step%len(answers)]
						resp := request(t, mode, fmt.Sprintf(bt, q), hs...)
						resp.Phase, resp.Status, resp.ResponseBody = abi.PhaseResponse, uint32(a.status), []byte(a.body)
						mres, merr = b.Call(context.Background(), resp)
						nres, nerr = nat.Call(context.Background(), "response_cache", []byte(cfg), resp)
						same(t, where+" response", mres, merr, nres, nerr)
						compared += 2
					}
				}
			}
		}
	}
	mc, mn := mcache.Counts()
	nc, nn := ncache.Counts()
	if mc != nc || mn != nn {
		t.Errorf("caches differ afterwards: module %+v (%d entries), native %+v (%d entries)", mc, mn, nc, nn)
	}
	if compared < 1000 || hits < 20 || mc.ExactHits == 0 || mc.SemanticHits == 0 || mn == 0 {
		t.Fatalf("the sequence did not exercise the cache: %d comparisons, %d hits, counts %+v, %d entries", compared, hits, mc, mn)
	}
}

// same compares a module's call with a native one: the result records byte
// for byte, the backend calls and what was persisted.
func same(t *testing.T, where string, m hostapi.CallResult, merr error, n plugin.ModuleResult, nerr error) {
	t.Helper()
	if (merr != nil) != (nerr != nil) {
		t.Fatalf("%s: module error %v, native error %v", where, merr, nerr)
	}
	if merr != nil {
		return
	}
	if string(m.Result.Append(nil)) != string(n.Result.Append(nil)) || m.BackendCalls != n.BackendCalls || m.Persisted != n.Persisted {
		t.Fatalf("%s:\nmodule %+v backend calls %d persisted %v\nnative %+v backend calls %d persisted %v",
			where, m.Result, m.BackendCalls, m.Persisted, n.Result, n.BackendCalls, n.Persisted)
	}
}

func mustModule(t *testing.T, typ string) []byte {
	t.Helper()
	b, err := builtin.Module(typ)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
