package plugintest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/plugin"
)

const helloDir = "../testdata/hello"

func TestRequestMutationsAreApplied(t *testing.T) {
	p := plugintest.New(t, plugintest.Build(t, helloDir))
	out := p.Run(t, plugintest.Fixture{
		Config:   `{"greeting":"Be brief."}`,
		Decision: "general",
		Body:     `{"model":"auto","messages":[{"role":"user","content":"hi"}],"temperature":0.2}`,
	})
	if out.Err != nil || out.Report.Status != plugin.StatusApplied || out.Report.Detail != "greeted" {
		t.Fatalf("outcome = %+v", out)
	}
	want := `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"model":"auto","temperature":0.2}`
	if string(out.Body) != want {
		t.Fatalf("body = %s\nwant   %s", out.Body, want)
	}
	if got := out.Header.Get("X-Hello"); got != "live/general" {
		t.Fatalf("x-hello = %q", got)
	}
	if m := out.Report.Module; m == nil || m.Mode != "live" || m.BackendCalls != 0 || m.Persisted || m.Values["messages"] != "1" {
		t.Fatalf("module report = %+v", m)
	}
}

func TestImmediateAnswer(t *testing.T) {
	p := plugintest.New(t, plugintest.Build(t, helloDir))
	out := p.Run(t, plugintest.Fixture{Config: `{"greeting":"Closed today.","respond":true}`})
	if out.Immediate == nil || out.Immediate.Status != 200 || out.Immediate.Content != "Closed today." {
		t.Fatalf("immediate = %+v (%+v)", out.Immediate, out.Report)
	}
}

func TestValidationNamesTheField(t *testing.T) {
	p := plugintest.New(t, plugintest.Build(t, helloDir))
	err := p.Validate(`{"greeting":42}`)
	if err == nil || !strings.Contains(err.Error(), "configuration.greeting") {
		t.Fatalf("err = %v", err)
	}
	type fieldPath interface{ FieldPath() string }
	fp, ok := err.(fieldPath)
	if !ok || fp.FieldPath() != "configuration.greeting" {
		t.Fatalf("err %T has no field path configuration.greeting", err)
	}
}

// TestModesAreEnforced calls every host function in every mode: preview
// makes no backend call, probe makes backend calls but uses no cache, live
// does everything; the host counts what it let through.
func TestModesAreEnforced(t *testing.T) {
	p := plugintest.New(t, plugintest.Build(t, helloDir))
	if err := p.Vectors.Upsert("docs", "a", []float32{1, 0}, []byte("alpha")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, c := range []memstore.Chunk{
		{ID: "py", Text: "python functions sort lists of integers", Attributes: map[string]any{"lang": "en"}},
		{ID: "de", Text: "python Funktionen sortieren Listen", Attributes: map[string]any{"lang": "de"}},
	} {
		c.ChunkIndex = i
		if err := p.Retriever.Add(ctx, "docs", c); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Memory.Remember(ctx, "u1", "I write python every day"); err != nil {
		t.Fatal(err)
	}
	type want struct {
		value   string
		backend int
	}
	cases := map[string]map[string]want{
		"embed":           {"live": {"1024", 1}, "probe": {"1024", 1}, "preview": {"denied", 0}},
		"classify":        {"live": {"computer science", 1}, "probe": {"computer science", 1}, "preview": {"denied", 0}},
		"vector_search":   {"live": {"a:alpha;", 1}, "probe": {"a:alpha;", 1}, "preview": {"denied", 0}},
		"retrieve":        {"live": {"py;", 1}, "probe": {"py;", 1}, "preview": {"denied", 0}},
		"memory_recall":   {"live": {"1", 1}, "probe": {"1", 1}, "preview": {"denied", 0}},
		"memory_remember": {"live": {"", 1}, "probe": {"denied", 0}, "preview": {"denied", 0}},
		"cache_lookup":    {"live": {"not_found", 1}, "probe": {"denied", 0}, "preview": {"denied", 0}},
		"cache_store":     {"live": {"", 1}, "probe": {"denied", 0}, "preview": {"denied", 0}},
		"token_count":     {"live": {"13", 0}, "probe": {"13", 0}, "preview": {"13", 0}},
		"config":          {"live": {`{"greeting":"x"}`, 0}, "probe": {`{"greeting":"x"}`, 0}, "preview": {`{"greeting":"x"}`, 0}},
	}
	for call, byMode := range cases {
		for mode, w := range byMode {
			t.Run(call+"/"+mode, func(t *testing.T) {
				out := p.Run(t, plugintest.Fixture{
					Config: `{"greeting":"x"}`, Mode: mode, Header: http.Header{"X-Call": {call}},
					Body: `{"model":"auto","messages":[{"role":"user","content":"write a python function to sort a list of integers"}]}`,
				})
				if out.Err != nil || out.Report.Status != plugin.StatusApplied {
					t.Fatalf("outcome = %+v", out)
				}
				m := out.Report.Module
				if got := m.Values[call]; got != w.value {
					t.Errorf("%s in %s = %q, want %q", call, mode, got, w.value)
				}
				if m.BackendCalls != w.backend || m.Mode != mode {
					t.Errorf("mode %s backend_calls %d, want mode %s, %d", m.Mode, m.BackendCalls, mode, w.backend)
				}
				seen := 0
				for _, n := range out.HostCalls {
					seen += n
				}
				if seen != w.backend {
					t.Errorf("backends saw %d calls (%v), the host counted %d", seen, out.HostCalls, m.BackendCalls)
				}
				if m.Persisted != ((call == "cache_store" || call == "memory_remember") && mode == "live") {
					t.Errorf("persisted = %v", m.Persisted)
				}
				if wantFresh := call == "retrieve" && mode == "probe"; (out.FreshRetrieves == 1) != wantFresh || out.FreshRetrieves > 1 {
					t.Errorf("fresh retrieves = %d, want fresh only in probe", out.FreshRetrieves)
				}
			})
		}
	}
	// Only the live memory_remember kept something.
	if got := p.Memory.Texts("u2"); len(got) != 1 {
		t.Errorf("memories kept = %q, want the live call's only", got)
	}
}

func TestHostFunctionsWithoutBackendOrClock(t *testing.T) {
	p := plugintest.New(t, plugintest.Build(t, helloDir))
	out := p.Run(t, plugintest.Fixture{Config: `{"greeting":"x"}`, Header: http.Header{"X-Call": {"now"}}})
	if v := out.Report.Module.Values["now"]; len(v) < 18 {
		t.Fatalf("now = %q (the engine's backends give the wall clock)", v)
	}
	// A large answer (over the SDK's 16 KiB scratch buffer) comes back whole
	// through junction.result.
	big := `{"greeting":"x","padding":"` + strings.Repeat("p", 40000) + `"}`
	out = p.Run(t, plugintest.Fixture{Config: big, Header: http.Header{"X-Call": {"big"}}})
	if v := out.Report.Module.Values["big"]; v != "40029" {
		t.Fatalf("big config length = %q, want 40029", v)
	}
}

func TestResponsePhaseStoresInLiveOnly(t *testing.T) {
	p := plugintest.New(t, plugintest.Build(t, helloDir))
	fx := plugintest.Fixture{Config: `{"greeting":"x"}`}
	rep, calls, err := p.Respond(t, fx, 200, `{"choices":[]}`)
	if err != nil || rep.Status != plugin.StatusApplied || rep.Detail != "stored" || !rep.Module.Persisted || calls["cache_store"] != 1 {
		t.Fatalf("live: %+v %v %v", rep, calls, err)
	}
	if p.Cache.Len("hello") != 1 {
		t.Fatal("nothing in the cache")
	}
	fx.Mode = "probe"
	rep, calls, err = p.Respond(t, fx, 200, `{"choices":[]}`)
	if err != nil || rep.Status != plugin.StatusSkipped || rep.Module.Persisted || len(calls) != 0 {
		t.Fatalf("probe: %+v %v %v", rep, calls, err)
	}
	// A failed upstream answer has no response phase.
	rep, _, _ = p.Respond(t, plugintest.Fixture{Config: `{"greeting":"x"}`}, 500, `{}`)
	if rep.Type != "" {
		t.Fatalf("500: %+v", rep)
	}
	// The cached answer is what a later lookup finds.
	out := p.Run(t, plugintest.Fixture{Config: `{"greeting":"x"}`, Header: http.Header{"X-Call": {"cache_lookup"}}})
	if v := out.Report.Module.Values["cache_lookup"]; v != `{"choices":[]}` {
		t.Fatalf("lookup = %q", v)
	}
}

func TestBadPluginsFailOnlyTheirStep(t *testing.T) {
	p := plugintest.New(t, plugintest.Build(t, "../testdata/hostile"))
	for _, tc := range []struct {
		config, want string
	}{
		{`{"do":"malformed"}`, "mutation 0 (field_set): the value of temperature is not valid JSON"},
		{`{"do":"exit"}`, "plugin module fault (exit)"},
		{`{}`, "the plugin failed: configuration: do is required"},
	} {
		skip := p.Run(t, plugintest.Fixture{Config: tc.config})
		if skip.Err != nil || skip.Report.Status != plugin.StatusFailed || !strings.Contains(skip.Report.Detail, tc.want) {
			t.Errorf("%s, on_error skip: %+v", tc.config, skip)
		}
		if string(skip.Body) != `{"messages":[{"role":"user","content":"hello"}],"model":"auto"}` {
			t.Errorf("%s changed the request: %s", tc.config, skip.Body)
		}
		fail := p.Run(t, plugintest.Fixture{Config: tc.config, OnError: "fail"})
		if fail.Err == nil || !strings.Contains(fail.Err.Error(), "on_error: fail") {
			t.Errorf("%s, on_error fail: err = %v", tc.config, fail.Err)
		}
	}
	// The same module, configured to behave, runs after all that.
	ok := p.Run(t, plugintest.Fixture{Config: `{"do":"ok"}`})
	if ok.Err != nil || ok.Header.Get("X-Hostile") != "ok" {
		t.Fatalf("ok: %+v", ok)
	}
}
