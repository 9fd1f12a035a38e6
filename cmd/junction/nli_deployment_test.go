package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/synthetic"
	"github.com/junction-router/junction/internal/inference/worker/supervise"
)

// hallucination's judge can be a model deployment: external_model names a
// deployment (no external_models entry of that name), whose worker (this
// binary run as `junction worker`, serving a tiny synthetic sequence-pair
// classifier with the NLI labels) classifies each (grounding, claim) pair.
// A deployment whose model has other labels fails the check loudly. The
// same serve answers the management diagnostics nli and user-feedback from
// the deployments bound under global.model_catalog.bindings, and
// fact-check (bound to a model with other labels) fails naming them.
func TestServeHallucinationNLIDeployment(t *testing.T) {
	orttest.Library(t)
	t.Setenv(envRunMain, "1")
	t.Setenv(supervise.EnvThreads, "1")
	dir := t.TempDir()
	nliDir, otherDir, fbDir := filepath.Join(dir, "nli"), filepath.Join(dir, "other"), filepath.Join(dir, "feedback")
	if _, err := synthetic.Write(fbDir, synthetic.Spec{Task: synthetic.SequenceClassification,
		Labels: []string{"satisfied", "need_clarification", "wrong_answer", "want_different"}, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := synthetic.Write(nliDir, synthetic.Spec{Task: synthetic.SequenceClassification, TokenTypes: true,
		Labels: []string{"entailment", "neutral", "contradiction"}, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := synthetic.Write(otherDir, synthetic.Spec{Task: synthetic.SequenceClassification, Labels: []string{"benign", "jailbreak"}, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	gw, mg, met := freePort(t), freePort(t), freePort(t)
	cfg := writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      keywords:
        - {name: grounded, keywords: ["grounded"]}
        - {name: wrongmodel, keywords: ["wrongmodel"]}
    decisions:
      - name: grounded
        priority: 20
        rules: {operator: OR, conditions: [{type: keyword, name: grounded}]}
        modelRefs: [{model: small}]
        plugins: [{type: hallucination, configuration: {external_model: nli, min_claim_words: 2, action: warn}}]
      - name: wrongmodel
        priority: 10
        rules: {operator: OR, conditions: [{type: keyword, name: wrongmodel}]}
        modelRefs: [{model: small}]
        plugins: [{type: hallucination, on_error: skip, configuration: {external_model: other, min_claim_words: 2, action: warn}}]
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
  model_catalog:
    deployments:
      - {name: nli, artifact: %q, device: cpu}
      - {name: other, artifact: %q, device: cpu}
      - {name: feedback, artifact: %q, device: cpu}
    bindings:
      nli: {deployment: nli}
      user_feedback: {deployment: feedback}
      fact_check: {deployment: other}
`, gw, mg, met, nliDir, otherDir, fbDir))
	r := serveDeployments(t, cfg, gw, mg, met)
	ask := func(keyword string) (*http.Response, string) {
		t.Helper()
		body := fmt.Sprintf(`{"model":"MoM","messages":[{"role":"system","content":"You are a support agent."},{"role":"system","content":"Context: the cat sat on the mat in london."},{"role":"user","content":"%s: the dog sat on the mat"}]}`, keyword)
		resp, err := http.Post(r.gw+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	resp, body := ask("grounded")
	h := resp.Header.Get("X-Junction-Hallucination")
	if resp.StatusCode != 200 || !strings.Contains(h, "detector=judge") || !strings.Contains(h, "claims=") {
		t.Fatalf("status %d, header %q: %s\n%s", resp.StatusCode, h, body, r.stderr.String())
	}
	t.Logf("verdict header: %s", h)
	var claims int
	if _, err := fmt.Sscanf(h[strings.Index(h, "claims="):], "claims=%d", &claims); err != nil || claims < 1 {
		t.Fatalf("header %q: %v", h, err)
	}
	if n := r.metric(`router_model_runtime_requests_total{deployment="nli",outcome="ok"}`); int(n) != claims {
		t.Errorf("the nli deployment answered %v requests for %d claims", n, claims)
	}

	// A deployment that is not an NLI model: the check fails (on_error
	// skip releases the answer) and says why in its report.
	resp, body = ask("wrongmodel")
	if resp.StatusCode != 200 || resp.Header.Get("X-Junction-Hallucination") != "" || !strings.Contains(body, `"type":"hallucination","status":"failed"`) {
		t.Fatalf("a deployment with other labels: status %d, header %q: %s", resp.StatusCode, resp.Header.Get("X-Junction-Hallucination"), body)
	}
	if n := r.metric(`router_model_runtime_requests_total{deployment="other",outcome="ok"}`); n < 1 {
		t.Errorf("the other deployment was not asked: %v", n)
	}

	// The management diagnostics, from the bound deployments.
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(r.mgmt+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode, out
	}
	before := r.metric(`router_model_runtime_requests_total{deployment="nli",outcome="ok"}`)
	code, out := post("/api/v1/diagnostics/nli", `{"premise":"the cat sat on the mat","hypothesis":"a cat sat"}`)
	if l, _ := out["label"].(string); code != 200 || out["method"] != "model_deployment" || out["model"] != "worker:nli" ||
		(l != "entailment" && l != "neutral" && l != "contradiction") {
		t.Fatalf("nli: %d %v", code, out)
	}
	if n := r.metric(`router_model_runtime_requests_total{deployment="nli",outcome="ok"}`); n != before+1 {
		t.Errorf("the nli diagnostic made %v deployment calls, want 1", n-before)
	}
	code, out = post("/api/v1/classify/user-feedback", `{"text":"thanks, that works"}`)
	if ft, _ := out["feedback_type"].(string); code != 200 || out["method"] != "model_deployment" || out["model"] != "worker:feedback" ||
		!strings.Contains("satisfied need_clarification wrong_answer want_different", ft) || ft == "" {
		t.Fatalf("user-feedback: %d %v", code, out)
	}
	code, out = post("/api/v1/classify/fact-check", `{"text":"the moon is made of cheese"}`)
	if msg := fmt.Sprint(out["error"]); code != 500 || !strings.Contains(msg, "benign") || !strings.Contains(msg, "jailbreak") || !strings.Contains(msg, "needs_fact_check, no_fact_check_needed") {
		t.Fatalf("fact-check bound to a model with other labels: %d %v", code, out)
	}
}
