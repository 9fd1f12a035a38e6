package mgmt_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/extmodel/extmodeltest"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/recipes"
)

// judgeEnv serves the base configuration with a global.external_models
// classification entry naming j.
func judgeEnv(t *testing.T, j *extmodeltest.Judge, timeoutSeconds int) *env {
	t.Helper()
	base, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := j.ExternalModel("judge", recipes.ExternalRoleClassification, timeoutSeconds)
	entry := fmt.Sprintf("global:\n  external_models:\n    - {name: %s, model_role: %s, llm_model_name: %s, llm_endpoint: {address: %q, port: %d, protocol: http}, llm_timeout_seconds: %d}\n",
		m.Name, m.ModelRole, m.LLMModelName, m.LLMEndpoint.Address, m.LLMEndpoint.Port, m.LLMTimeoutSeconds)
	cfg := strings.Replace(string(base), "global:\n", entry, 1)
	return newEnv(t, writeConfig(t, cfg))
}

func TestExternalClassifiers(t *testing.T) {
	j := extmodeltest.New(t)
	e := judgeEnv(t, j, 1)
	for _, prefix := range []string{"/api/v1/diagnostics/classify/", "/api/v1/classify/"} {
		j.Script(extmodeltest.Answer{Content: "needs_fact_check"})
		fc := must(t, e.call("POST", prefix+"fact-check", map[string]any{"text": "The Eiffel Tower is 330 m tall."}), 200).json(t)
		if fc["needs_fact_check"] != true || fc["label"] != mgmt.LabelNeedsFactCheck || fc["model"] != "judge" || fc["method"] != "external_model" {
			t.Fatalf("%sfact-check: %v", prefix, fc)
		}
		j.Script(extmodeltest.Answer{Content: "no_fact_check_needed"})
		fc = must(t, e.call("POST", prefix+"fact-check", map[string]any{"text": "write me a poem"}), 200).json(t)
		if fc["needs_fact_check"] != false {
			t.Fatalf("%sfact-check: %v", prefix, fc)
		}
		j.Script(extmodeltest.Answer{Content: "wrong_answer"})
		fb := must(t, e.call("POST", prefix+"user-feedback", map[string]any{"text": "that is not right"}), 200).json(t)
		if fb["feedback_type"] != mgmt.FeedbackWrongAnswer || fb["model"] != "judge" {
			t.Fatalf("%suser-feedback: %v", prefix, fb)
		}
	}
	j.Script(extmodeltest.Answer{Content: "contradiction"})
	nli := must(t, e.call("POST", "/api/v1/diagnostics/nli", map[string]any{"premise": "It rains.", "hypothesis": "It is dry."}), 200).json(t)
	if nli["label"] != mgmt.NLIContradiction {
		t.Fatalf("nli: %v", nli)
	}
	reqs := j.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(last.User, "It rains.") || !strings.Contains(last.User, "It is dry.") || last.Temperature != 0 {
		t.Fatalf("nli request: %+v", last)
	}
	if !strings.Contains(reqs[0].System, mgmt.LabelNeedsFactCheck) || reqs[0].User != "The Eiffel Tower is 330 m tall." {
		t.Fatalf("fact-check request: %+v", reqs[0])
	}
}

func TestExternalClassifierErrors(t *testing.T) {
	j := extmodeltest.New(t)
	e := judgeEnv(t, j, 1)
	fact := map[string]any{"text": "The Eiffel Tower is 330 m tall."}

	j.Script(extmodeltest.Answer{Content: "probably yes"})
	if r := must(t, e.call("POST", "/api/v1/diagnostics/classify/fact-check", fact), 500); r.errCode(t) != mgmt.CodeClassificationError || !strings.Contains(string(r.body), "allowed label") {
		t.Fatalf("unparseable: %s", r.body)
	}
	j.Script(extmodeltest.Answer{Status: 502})
	if r := must(t, e.call("POST", "/api/v1/diagnostics/classify/user-feedback", fact), 500); r.errCode(t) != mgmt.CodeClassificationError || !strings.Contains(string(r.body), "502") {
		t.Fatalf("upstream status: %s", r.body)
	}
	j.Script(extmodeltest.Answer{Content: "entailment", Delay: 3 * time.Second})
	start := time.Now()
	if r := must(t, e.call("POST", "/api/v1/diagnostics/nli", map[string]any{"premise": "a", "hypothesis": "b"}), 408); r.errCode(t) != mgmt.CodeTimeout || !strings.Contains(string(r.body), "llm_timeout_seconds") {
		t.Fatalf("timeout: %s", r.body)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("timeout took %s; llm_timeout_seconds is 1", d)
	}
}

func TestExternalClassifierMissing(t *testing.T) {
	e := newEnv(t, copyBase(t))
	for _, path := range []string{"/api/v1/diagnostics/classify/fact-check", "/api/v1/classify/user-feedback"} {
		r := must(t, e.call("POST", path, map[string]any{"text": "the moon is made of cheese"}), 503)
		if r.errCode(t) != mgmt.CodeModelNotLoaded || !strings.Contains(string(r.body), "global.external_models") {
			t.Fatalf("%s: %s", path, r.body)
		}
	}
	r := must(t, e.call("POST", "/api/v1/diagnostics/nli", map[string]any{"premise": "a", "hypothesis": "b"}), 503)
	if !strings.Contains(string(r.body), "global.external_models") {
		t.Fatalf("nli: %s", r.body)
	}
}

// An external_models change applies live: a PATCH that adds the entry makes
// the next fact-check answer, and api_key_env's value reaches the model.
func TestExternalClassifierLiveChange(t *testing.T) {
	j := extmodeltest.New(t, extmodeltest.Answer{Content: "needs_fact_check"})
	e := newEnv(t, copyBase(t))
	fact := map[string]any{"text": "Water boils at 100 C at sea level."}
	must(t, e.call("POST", "/api/v1/diagnostics/classify/fact-check", fact), 503)

	m := j.ExternalModel("judge", recipes.ExternalRoleClassification, 2)
	patch := map[string]any{"global": map[string]any{"external_models": []any{map[string]any{
		"name": m.Name, "model_role": m.ModelRole, "llm_model_name": m.LLMModelName,
		"llm_endpoint": map[string]any{"address": m.LLMEndpoint.Address, "port": m.LLMEndpoint.Port},
		"api_key_env":  "JUNCTION_TEST_MGMT_JUDGE_KEY",
	}}}}
	must(t, e.call("PATCH", "/api/v1/config", patch, "If-Match", e.etag()), 200)
	if r := must(t, e.call("POST", "/api/v1/diagnostics/classify/fact-check", fact), 503); !strings.Contains(string(r.body), "JUNCTION_TEST_MGMT_JUDGE_KEY") {
		t.Fatalf("unset api_key_env: %s", r.body)
	}
	t.Setenv("JUNCTION_TEST_MGMT_JUDGE_KEY", "k-live")
	if fc := must(t, e.call("POST", "/api/v1/diagnostics/classify/fact-check", fact), 200).json(t); fc["needs_fact_check"] != true {
		t.Fatalf("fact-check: %v", fc)
	}
	if reqs := j.Requests(); len(reqs) != 1 || reqs[0].Authorization != "Bearer k-live" {
		t.Fatalf("judge requests: %+v", reqs)
	}
}
