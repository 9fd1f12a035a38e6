package mgmt_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/junction-router/junction/internal/extmodel/extmodeltest"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/pluginsys"
)

// guardDecisions run the response checks and tool selection; the guard
// and judge external models are the fake judge.
const guardDecisions = `      - name: guarded
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]
        plugins: [{type: response_jailbreak, configuration: {detector: guardrail, action: redact}}]
      - name: grounded
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]
        plugins: [{type: hallucination, configuration: {action: block}}]
      - name: picked
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]
        plugins: [{type: tool_selection, configuration: {top_k: 1, similarity_threshold: "0.05"}}]
`

// newGuardEnv is the management API over serve's plugin system, prepared
// for a configuration with guardDecisions and the judge's external models.
func newGuardEnv(t *testing.T, judge *extmodeltest.Judge) *env {
	t.Helper()
	return newGuardEnvWith(t, judge, guardDecisions)
}

// newGuardEnvWith is newGuardEnv with other decisions in place of
// guardDecisions.
func newGuardEnvWith(t *testing.T, judge *extmodeltest.Judge, decisions string) *env {
	t.Helper()
	b, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, c := judge.ExternalModel("guard", "guardrail", 2), judge.ExternalModel("judge", "classification", 2)
	ext := fmt.Sprintf("global:\n  external_models:\n    - {name: guard, model_role: guardrail, llm_model_name: fake-judge, llm_endpoint: {address: %q, port: %d, protocol: http}}\n"+
		"    - {name: judge, model_role: classification, llm_model_name: fake-judge, llm_endpoint: {address: %q, port: %d, protocol: http}}\n",
		g.LLMEndpoint.Address, g.LLMEndpoint.Port, c.LLMEndpoint.Address, c.LLMEndpoint.Port)
	s := strings.Replace(string(b), "  - name: spare\n", decisions+"  - name: spare\n", 1)
	s = strings.Replace(s, "global:\n", ext, 1)
	path := writeConfig(t, s)
	ctx := context.Background()
	sys, err := pluginsys.New(ctx, pluginsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Close)
	cfg, err := mgmt.OpenConfig(ctx, mgmt.ConfigOptions{Path: path, Compile: compiler(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Prepare(ctx, cfg.Runtime().Current().Document()); err != nil {
		t.Fatal(err)
	}
	api, err := mgmt.New(mgmt.Options{Config: cfg, Startup: mgmt.NewStartup(), Version: "test", Plugins: sys})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	router, err := gorillamux.NewRouter(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, path: path, cfg: cfg, api: api, srv: srv, router: router}
}

func report(t *testing.T, p map[string]any) map[string]any {
	t.Helper()
	reps, _ := p["reports"].([]any)
	if len(reps) != 1 {
		t.Fatalf("reports %v", p["reports"])
	}
	return reps[0].(map[string]any)
}

// Guard and tool previews need a binding; a preview applies the policy to
// supplied conditions and calls nothing; a probe invokes the configured
// detector (the fake judge) or embedder.
func TestGuardAndToolPreviews(t *testing.T) {
	judge := extmodeltest.New(t, extmodeltest.Answer{Content: "jailbreak"})
	e := newGuardEnv(t, judge)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	binding := func(d string) map[string]any { return map[string]any{"recipe": "default", "decision": d} }

	for _, typ := range []string{"response_jailbreak", "hallucination", "tool_selection"} {
		r := must(t, e.call("POST", "/api/v1/plugins/"+typ+"/preview", map[string]any{"configuration": map[string]any{}, "request": map[string]any{"model": "MoM", "messages": msgs}}), 400)
		if !strings.Contains(string(r.body), "needs binding") {
			t.Fatalf("%s candidate: %s", typ, r.body)
		}
		if t1 := must(t, e.call("GET", "/api/v1/plugins/"+typ, nil), 200).json(t); t1["available"] != true {
			t.Fatalf("%s: %v", typ, t1)
		}
	}

	// response_jailbreak: a supplied score, no call.
	req := map[string]any{"model": "MoM", "messages": msgs, "supplied_answer": "As DAN, here is how.", "supplied_score": 0.9}
	p := must(t, e.call("POST", "/api/v1/plugins/response_jailbreak/preview", map[string]any{"binding": binding("guarded"), "request": req}), 200).json(t)
	im, _ := p["immediate"].(map[string]any)
	if p["backend_calls"] != 0.0 || im == nil || im["content"] != "[redacted: the response guard flagged this answer]" || len(judge.Requests()) != 0 ||
		strings.Contains(fmt.Sprint(p["request"]), "supplied_") {
		t.Fatalf("jailbreak preview: %v", p)
	}
	// Probe: the guard endpoint scores the supplied answer.
	delete(req, "supplied_score")
	p = must(t, e.call("POST", "/api/v1/plugins/response_jailbreak/preview", map[string]any{"mode": "probe", "binding": binding("guarded"), "request": req}), 200).json(t)
	if p["backend_calls"] != 1.0 || p["immediate"] == nil || len(judge.Requests()) != 1 || judge.Requests()[0].User != "As DAN, here is how." {
		t.Fatalf("jailbreak probe: %v (judge %v)", p, judge.Requests())
	}

	// hallucination: preview by word overlap, probe by the judge.
	req = map[string]any{"model": "MoM", "messages": msgs, "supplied_answer": "Berlin is the capital of France since 1900.",
		"supplied_context": []any{"Paris is the capital of France."}}
	p = must(t, e.call("POST", "/api/v1/plugins/hallucination/preview", map[string]any{"binding": binding("grounded"), "request": req}), 200).json(t)
	rep := report(t, p)
	if p["backend_calls"] != 0.0 || p["immediate"] == nil || len(judge.Requests()) != 1 || !strings.Contains(fmt.Sprint(rep["detail"]), "1 of 1 claims unsupported: block") {
		t.Fatalf("hallucination preview: %v", p)
	}
	judge.Script(extmodeltest.Answer{Content: "entailment"})
	p = must(t, e.call("POST", "/api/v1/plugins/hallucination/preview", map[string]any{"mode": "probe", "binding": binding("grounded"), "request": req}), 200).json(t)
	if p["backend_calls"] != 1.0 || p["immediate"] != nil || len(judge.Requests()) != 2 || !strings.Contains(judge.Requests()[1].User, "Premise: Paris is the capital of France.") {
		t.Fatalf("hallucination probe: %v", p)
	}

	// tool_selection: the preview is static, the probe embeds.
	tools := []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "weather forecast for a city"}},
		map[string]any{"type": "function", "function": map[string]any{"name": "send_email", "description": "send an email"}},
	}
	req = map[string]any{"model": "MoM", "messages": []any{map[string]any{"role": "user", "content": "weather forecast in Oslo city"}}, "tools": tools}
	p = must(t, e.call("POST", "/api/v1/plugins/tool_selection/preview", map[string]any{"binding": binding("picked"), "request": req}), 200).json(t)
	if rep := report(t, p); p["backend_calls"] != 0.0 || rep["status"] != "skipped" || !strings.Contains(fmt.Sprint(rep["detail"]), "needs mode probe") {
		t.Fatalf("tool_selection preview: %v", p)
	}
	p = must(t, e.call("POST", "/api/v1/plugins/tool_selection/preview", map[string]any{"mode": "probe", "binding": binding("picked"), "request": req}), 200).json(t)
	if body := fmt.Sprint(p["request"]); p["backend_calls"] != 3.0 || !strings.Contains(body, "get_weather") || strings.Contains(body, "send_email") {
		t.Fatalf("tool_selection probe: %v", p)
	}
}
