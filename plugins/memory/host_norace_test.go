//go:build !race

// These tests run the memory guest in the real plugin host (wazero compiles
// it, which is slow under the race detector), with the in-memory memory of
// hostapi/plugintest behind memory_recall and memory_remember.

package memory_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/plugin"
)

func body(user, text string) string {
	u := ""
	if user != "" {
		u = `"user":"` + user + `",`
	}
	return `{"model":"m",` + u + `"messages":[{"role":"system","content":"Be kind."},{"role":"user","content":"` + text + `"}]}`
}

func TestMemoryThroughTheHost(t *testing.T) {
	p := plugintest.New(t, plugintest.Build(t, "./guest"))
	cfg := `{"scope_header":"x-user-id","min_score":0.05}`
	ada := http.Header{"X-User-Id": {"u-ada"}}

	// Live: nothing to recall yet; the statements are remembered.
	out := p.Run(t, plugintest.Fixture{Config: cfg, Header: ada, Body: body("", "My name is Ada. I live in Lisbon. What is a good weekend trip?")})
	m := out.Report.Module
	if out.Err != nil || out.Report.Status != plugin.StatusApplied || !m.Persisted || m.Values["remembered"] != "2" || out.HostCalls["memory_remember"] != 2 {
		t.Fatalf("live, first: %+v %+v %v", out.Report, m, out.HostCalls)
	}
	if got := p.Memory.Texts("u-ada"); !reflect.DeepEqual(got, []string{"My name is Ada.", "I live in Lisbon."}) {
		t.Fatalf("kept %q", got)
	}
	if strings.Contains(string(out.Body), "remember") {
		t.Fatalf("nothing should be injected yet: %s", out.Body)
	}

	// Live, later: the relevant memory is injected after the system prompt;
	// a question states nothing, so nothing more is kept.
	out = p.Run(t, plugintest.Fixture{Config: cfg, Header: ada, Body: body("", "Which city do I live in?")})
	m = out.Report.Module
	if out.Report.Status != plugin.StatusApplied || m.Persisted || m.Values["injected"] == "0" || m.Values["memories"] != "" {
		t.Fatalf("live, second: %+v %+v", out.Report, m)
	}
	if !strings.Contains(string(out.Body), `{"role":"system","content":"Be kind."},{"role":"system","content":"What you remember about this user`) ||
		!strings.Contains(string(out.Body), `- I live in Lisbon.`) {
		t.Fatalf("live, second, body: %s", out.Body)
	}
	// Another scope sees none of it (the user field when the header is missing).
	out = p.Run(t, plugintest.Fixture{Config: cfg, Body: body("bob", "Which city do I live in?")})
	if out.Report.Status != plugin.StatusSkipped || strings.Contains(string(out.Body), "Lisbon") || !strings.Contains(out.Report.Detail, "scope from user") {
		t.Fatalf("another scope: %+v %s", out.Report, out.Body)
	}

	// Probe: recalls for real, remembers nothing, says what it would keep.
	out = p.Run(t, plugintest.Fixture{Config: cfg, Header: ada, Mode: "probe", Body: body("", "I prefer trains to planes. Where do I live?")})
	m = out.Report.Module
	if m.Persisted || out.HostCalls["memory_remember"] != 0 || out.HostCalls["memory_recall"] != 1 ||
		m.Values["would_remember"] != `["I prefer trains to planes."]` || !strings.Contains(m.Values["memories"], "I live in Lisbon.") {
		t.Fatalf("probe: %+v %+v %v", out.Report, m, out.HostCalls)
	}
	if len(p.Memory.Texts("u-ada")) != 2 {
		t.Fatalf("probe kept something: %q", p.Memory.Texts("u-ada"))
	}

	// Preview: no backend call; supplied_memories are injected and removed.
	out = p.Run(t, plugintest.Fixture{Config: cfg, Header: ada, Mode: "preview",
		Body: `{"model":"m","supplied_memories":["I'm vegetarian."],"messages":[{"role":"user","content":"Call me Ada. Dinner ideas?"}]}`})
	m = out.Report.Module
	if m.BackendCalls != 0 || m.Persisted || len(out.HostCalls) != 0 || m.Values["would_remember"] != `["Call me Ada."]` ||
		!strings.Contains(string(out.Body), "- I'm vegetarian.") || strings.Contains(string(out.Body), "supplied_memories") {
		t.Fatalf("preview: %+v %+v %s", out.Report, m, out.Body)
	}

	// remember: false keeps nothing, even live.
	out = p.Run(t, plugintest.Fixture{Config: `{"remember":false}`, Body: body("carol", "My name is Carol.")})
	if out.Report.Status != plugin.StatusSkipped || out.Report.Module.Persisted || len(p.Memory.Texts("carol")) != 0 || !strings.Contains(out.Report.Detail, "remember is off") {
		t.Fatalf("remember off: %+v", out.Report)
	}
	// No scope: skipped, with the reason.
	out = p.Run(t, plugintest.Fixture{Config: cfg, Body: body("", "My name is Nobody.")})
	if out.Report.Status != plugin.StatusSkipped || !strings.Contains(out.Report.Detail, "no scope") || out.Report.Module.BackendCalls != 0 {
		t.Fatalf("no scope: %+v", out.Report)
	}
}
