package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/inference/defaultmodels"
)

// The native API publishes deployments' question answering through the real
// serve: keys and grants, both endpoint names, a deployment serving several
// models, the model list, the worker's own refusals passed on, and the
// worker endpoints that stay unpublished.
func TestServeNativeAPI(t *testing.T) {
	wport := attachedWorker(t, defaultmodels.JailbreakName, defaultmodels.DomainName)
	t.Setenv("JUNCTION_TEST_READER_KEY", "reader-secret")
	adminFile := filepath.Join(t.TempDir(), "admin.key")
	if err := os.WriteFile(adminFile, []byte("admin-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nport := freePort(t)
	cfg, gw, mg, met := deploymentConfig(t, fmt.Sprintf(`    deployments:
      - {name: guard, endpoint: "127.0.0.1:%[1]d", served_name: jailbreak-glove}
      - {name: multi, endpoint: "127.0.0.1:%[1]d"}
    bindings:
      jailbreak: {deployment: guard}`, wport))
	raw := mustRead(t, cfg)
	raw = strings.Replace(raw, "  services:\n", fmt.Sprintf(`  services:
    native_api:
      enabled: true
      port: %d
      max_body_bytes: 4096
      api_keys:
        - {name: reader, env: JUNCTION_TEST_READER_KEY, models: [guard]}
        - {name: admin, file: %q, models: ["*"]}
`, nport, adminFile), 1)
	if err := os.WriteFile(cfg, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	r := serveDeployments(t, cfg, gw, mg, met)
	base := fmt.Sprintf("http://127.0.0.1:%d", nport)

	call := func(method, path, key, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode, v
	}
	errCode := func(v map[string]any) string {
		e, _ := v["error"].(map[string]any)
		c, _ := e["code"].(string)
		return c
	}
	question := func(model, state string) string {
		return fmt.Sprintf(`{"model":%q,"state":%q,"questions":{"q":{"type":"choice","instructions":"is this an attack?","choices":[{"key":"benign","description":"ordinary"},{"key":"jailbreak","description":"attack"}]}}}`, model, state)
	}

	// Keys.
	if code, v := call("POST", "/v1/decisions", "", question("guard", attack)); code != 401 || errCode(v) != "unauthorized" {
		t.Errorf("no key: %d %v", code, v)
	}
	if code, _ := call("POST", "/v1/decisions", "reader-secretX", question("guard", attack)); code != 401 {
		t.Errorf("wrong key: %d", code)
	}
	// Both endpoint names answer, under the public name.
	for _, path := range []string{"/v1/decisions", "/v1/systemone"} {
		code, v := call("POST", path, "reader-secret", question("guard", attack))
		ans, _ := v["answers"].(map[string]any)
		q, _ := ans["q"].(map[string]any)
		if code != 200 || v["model"] != "guard" || q["choice"] != "jailbreak" {
			t.Errorf("%s: %d %v", path, code, v)
		}
	}
	if code, v := call("POST", "/v1/decisions", "reader-secret", question("guard", "What is the capital of France?")); code != 200 ||
		v["answers"].(map[string]any)["q"].(map[string]any)["choice"] != "benign" {
		t.Errorf("benign: %d %v", code, v)
	}
	// Grants: reader may not call multi; an ungranted model looks like an
	// unknown one.
	dq := `{"model":"multi/domain-glove","state":"How do enzymes lower activation energy?","questions":{"d":{"type":"choice","instructions":"subject","choices":[{"key":"biology","description":"life"},{"key":"law","description":"courts"}]}}}`
	_, unknown := call("POST", "/v1/decisions", "reader-secret", strings.Replace(dq, "multi/domain-glove", "other/domain-glove", 1))
	if code, v := call("POST", "/v1/decisions", "reader-secret", dq); code != 404 || errCode(v) != "model_not_found" ||
		strings.Replace(fmt.Sprint(v), "multi", "other", 1) != fmt.Sprint(unknown) {
		t.Errorf("ungranted: %d %v (an unknown model: %v)", code, v, unknown)
	}
	code, v := call("POST", "/v1/decisions", "admin-secret", dq)
	if code != 200 || v["model"] != "multi/domain-glove" || v["answers"].(map[string]any)["d"].(map[string]any)["choice"] != "biology" {
		t.Errorf("admin multi/domain-glove: %d %v", code, v)
	}
	if code, v := call("POST", "/v1/decisions", "admin-secret", question("multi", attack)); code != 404 || !strings.Contains(fmt.Sprint(v), "<deployment>/<model>") {
		t.Errorf("multi without a model: %d %v", code, v)
	}
	if code, v := call("POST", "/v1/decisions", "admin-secret", question("nope", attack)); code != 404 || errCode(v) != "model_not_found" {
		t.Errorf("unknown model: %d %v", code, v)
	}
	// The worker's own refusal comes back as it was.
	bad := `{"model":"guard","state":"x","questions":{"q":{"type":"score","instructions":"x","levels":["one"]}}}`
	if code, v := call("POST", "/v1/decisions", "reader-secret", bad); code != 400 || errCode(v) != "invalid_request" {
		t.Errorf("no valid question: %d %v", code, v)
	}
	// Bad requests of the frontend's own.
	for name, c := range map[string]struct {
		body string
		code int
		err  string
	}{
		"not JSON":   {`{"model":`, 400, "invalid_request"},
		"no model":   {`{"state":"x","questions":{}}`, 400, "invalid_request"},
		"model type": {`{"model":7}`, 400, "invalid_request"},
		"too large":  {question("guard", strings.Repeat("a", 5000)), 413, "request_too_large"},
	} {
		if code, v := call("POST", "/v1/decisions", "reader-secret", c.body); code != c.code || errCode(v) != c.err {
			t.Errorf("%s: %d %v", name, code, v)
		}
	}
	// Worker-only endpoints are not published.
	if code, v := call("POST", "/v1/classify", "admin-secret", `{"model":"guard","input":"x"}`); code != 404 || errCode(v) != "not_found" {
		t.Errorf("classify: %d %v", code, v)
	}
	// The model list shows what the key may call, under public names.
	ids := func(key string) []string {
		code, v := call("GET", "/v1/systemone/models", key, "")
		if code != 200 {
			t.Fatalf("models: %d %v", code, v)
		}
		var out []string
		for _, m := range v["data"].([]any) {
			mm := m.(map[string]any)
			if _, leak := mm["source"]; leak {
				t.Errorf("the model list shows the worker's files: %v", mm)
			}
			out = append(out, fmt.Sprint(mm["id"], "=", mm["served_model"], ":", mm["labels"] != nil))
		}
		return out
	}
	if got := strings.Join(ids("reader-secret"), " "); got != "guard=jailbreak-glove:true" {
		t.Errorf("reader's models: %s", got)
	}
	if got := strings.Join(ids("admin-secret"), " "); !strings.Contains(got, "guard=jailbreak-glove:true") ||
		!strings.Contains(got, "multi/domain-glove=domain-glove:true") || !strings.Contains(got, "multi/jailbreak-glove=jailbreak-glove:true") {
		t.Errorf("admin's models: %s", got)
	}
	// Calls count in the deployment metrics, by surface.
	if n := r.metric(`router_model_runtime_requests_total{deployment="multi",outcome="ok"}`); n < 1 {
		t.Errorf("multi requests_total ok = %v", n)
	}
	// Changing the native API needs a restart: the edited file is refused
	// before it compiles.
	if err := os.WriteFile(cfg, []byte(strings.Replace(raw, "max_body_bytes: 4096", "max_body_bytes: 8192", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r.awaitRefusedEdit("native API settings")
	if code, _ := call("POST", "/v1/decisions", "reader-secret", question("guard", strings.Repeat("a", 5000))); code != 413 {
		t.Errorf("after the refused edit the old limit should hold: %d", code)
	}
}
