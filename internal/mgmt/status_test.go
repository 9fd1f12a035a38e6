package mgmt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/mgmt"
)

func TestStartupAndStatus(t *testing.T) {
	e := newEnv(t, copyBase(t))
	must(t, e.call("GET", "/health", nil), 200)
	r := must(t, e.call("GET", "/ready", nil), 503)
	if r.json(t)["phase"] != "unobserved" {
		t.Fatalf("ready before startup: %s", r.body)
	}
	st := must(t, e.call("GET", "/api/v1/status", nil), 200).json(t)
	if st["schema_version"] != "v1" || st["instance_id"] == "" || !strings.Contains(fmt.Sprint(st["conditions"]), "StartupUnobserved") {
		t.Fatalf("status: %v", st)
	}
	e.startup.Begin()
	must(t, e.call("GET", "/startup-status", nil), 503)
	e.startup.Complete()
	must(t, e.call("GET", "/ready", nil), 200)
	ss := must(t, e.call("GET", "/startup-status", nil), 200).json(t)
	if ss["phase"] != "complete" || ss["model_deployments"] == nil {
		t.Fatalf("startup-status: %v", ss)
	}
	conds := map[string]string{}
	for _, c := range must(t, e.call("GET", "/api/v1/status", nil), 200).json(t)["conditions"].([]any) {
		m := c.(map[string]any)
		conds[m["type"].(string)] = m["status"].(string) + "/" + m["reason"].(string)
	}
	want := map[string]string{"Live": "True/ProcessRunning", "StartupComplete": "True/StartupComplete", "ActiveConfigAvailable": "True/ActiveConfigAvailable",
		"ConfigConverged": "True/ConfigHashesMatch", "Ready": "Unknown/RequiredDependenciesUnobserved"}
	for k, v := range want {
		if conds[k] != v {
			t.Errorf("condition %s = %s, want %s", k, conds[k], v)
		}
	}
}

func TestAuditPaging(t *testing.T) {
	e := newEnv(t, copyBase(t))
	for i := 0; i < 3; i++ {
		must(t, e.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_reasoning_effort": []string{"low", "medium", "high"}[i]}}}, "If-Match", e.etag()), 200)
	}
	p := must(t, e.call("GET", "/api/v1/observability/audit?limit=2", nil), 200).json(t)
	if len(p["entries"].([]any)) != 2 || p["has_more"] != true {
		t.Fatalf("page 1: %v", p)
	}
	next := p["next_sequence"].(float64)
	p2 := must(t, e.call("GET", fmt.Sprintf("/api/v1/observability/audit?limit=1000&after_sequence=%.0f", next), nil), 200).json(t)
	first := p2["entries"].([]any)[0].(map[string]any)
	if first["sequence"].(float64) != next+1 || first["prev_hash"] != p["entries"].([]any)[1].(map[string]any)["hash"] {
		t.Fatalf("page 2 does not continue the chain: %v", first)
	}
	upd := must(t, e.call("GET", "/api/v1/observability/audit?action=config.update", nil), 200).json(t)["entries"].([]any)
	if len(upd) != 3 || upd[0].(map[string]any)["route"] != "/api/v1/config" || upd[0].(map[string]any)["status"] != 200.0 {
		t.Fatalf("config.update entries: %v", upd)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "after_sequence=-1"} {
		must(t, e.call("GET", "/api/v1/observability/audit?"+q, nil), 400)
	}
}

func TestBearerAuth(t *testing.T) {
	t.Setenv("JUNCTION_TEST_ADMIN", "admin-token-123")
	t.Setenv("JUNCTION_TEST_READER", "reader-token-456")
	base, _ := os.ReadFile("testdata/base.yaml")
	doc := strings.Replace(string(base), "    api: {batch_classification: {max_batch_size: 4}}", `    api: {batch_classification: {max_batch_size: 4}}
    management_api:
      auth:
        mode: bearer
        roles:
          - {name: admin, permissions: ["*"]}
          - {name: reader, permissions: [ready.read, config.read]}
        tokens:
          - {name: alice, roles: [admin], env: JUNCTION_TEST_ADMIN}
          - {name: bob, roles: [reader], env: JUNCTION_TEST_READER}`, 1)
	e := newEnv(t, writeConfig(t, doc))
	must(t, e.call("GET", "/health", nil), 200)
	r := must(t, e.call("GET", "/api/v1/config", nil), 401)
	if r.header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
	e.token = "wrong"
	must(t, e.call("GET", "/api/v1/status", nil), 401)
	e.token = "reader-token-456"
	cfg := must(t, e.call("GET", "/api/v1/config", nil), 200)
	if strings.Contains(string(cfg.body), "client-secret-key") || strings.Contains(string(cfg.body), "upstream-secret") || !strings.Contains(string(cfg.body), "<redacted>") {
		t.Fatalf("secrets not redacted for a reader: %s", cfg.body)
	}
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{}, "If-Match", cfg.header.Get("ETag")), 403)
	if r.json(t)["error"].(map[string]any)["required_permission"] != "config.write" {
		t.Fatalf("403: %s", r.body)
	}
	must(t, e.call("GET", "/api/v1/observability/audit", nil), 403)
	must(t, e.call("POST", "/api/v1/routing/preview", map[string]any{"text": "hi"}), 403)
	// Previews are config.read; header values need secret_view, probes classify.invoke.
	chatReq := map[string]any{"model": "MoM", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	pv := must(t, e.call("POST", "/api/v1/plugins/header_mutation/preview", map[string]any{"binding": map[string]any{"recipe": "default", "decision": "urgent"}, "request": chatReq}), 200).json(t)
	if pv["headers"].(map[string]any)["X-Route"] != "<redacted>" {
		t.Fatalf("preview headers for a reader: %v", pv["headers"])
	}
	must(t, e.call("POST", "/api/v1/plugins/header_mutation/preview", map[string]any{"mode": "probe", "binding": map[string]any{"recipe": "default", "decision": "urgent"}, "request": chatReq}), 403)
	e.token = "admin-token-123"
	full := must(t, e.call("GET", "/api/v1/config", nil), 200)
	if !strings.Contains(string(full.body), "client-secret-key") {
		t.Fatal("secret_view does not see secrets")
	}
	// Writing back a redacted document keeps the secrets it could not see.
	var redacted map[string]any
	_ = json.Unmarshal(cfg.body, &redacted)
	redacted["providers"].(map[string]any)["defaults"].(map[string]any)["default_model"] = "big"
	must(t, e.call("PUT", "/api/v1/config", redacted, "If-Match", full.header.Get("ETag")), 200)
	if keys := e.cfg.Runtime().Current().Document().Listeners[0].APIKeys; keys[0] != "client-secret-key" {
		t.Fatalf("api_keys after a redacted write: %v", keys)
	}
	// Listening beyond loopback, authentication cannot be switched off.
	e.cfg.GuardListener("0.0.0.0:8080", false)
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{"global": map[string]any{"services": map[string]any{"management_api": map[string]any{"auth": map[string]any{"mode": "none"}}}}}, "If-Match", e.etag()), 409)
	if !strings.Contains(string(r.body), "insecure_management_bind") {
		t.Fatalf("auth off on a remote bind: %s", r.body)
	}
	e.cfg.GuardListener("127.0.0.1:8080", false)
	// Tokens never reach the audit log; the principal does.
	a := must(t, e.call("GET", "/api/v1/observability/audit?limit=1000", nil), 200)
	if strings.Contains(string(a.body), "token-") || !strings.Contains(string(a.body), `"principal":"alice"`) {
		t.Fatalf("audit: %s", a.body)
	}
	// A token source that disappears rejects the activation (warm stage)
	// instead of locking everyone out.
	t.Setenv("JUNCTION_TEST_READER", "")
	r = must(t, e.call("PATCH", "/api/v1/config", map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "small"}}}, "If-Match", e.etag()), 503)
	if !strings.Contains(string(r.body), `"stage":"warm"`) || !strings.Contains(string(r.body), "JUNCTION_TEST_READER") {
		t.Fatalf("warm rejection: %s", r.body)
	}
	e.token = "admin-token-123"
	must(t, e.call("GET", "/api/v1/config", nil), 200)
}

func TestListenAddr(t *testing.T) {
	for _, c := range []struct {
		addr, mode string
		remote, ok bool
	}{
		{"127.0.0.1:8080", "", false, true},
		{"[::1]:8080", "none", false, true},
		{"localhost:8080", "", false, true},
		{"0.0.0.0:8080", "", false, false},
		{"10.1.2.3:8080", "none", false, false},
		{"0.0.0.0:8080", "bearer", false, true},
		{"0.0.0.0:8080", "", true, true},
		{"nonsense", "", false, false},
	} {
		err := mgmt.ListenAddr(c.addr, c.mode, c.remote)
		if (err == nil) != c.ok {
			t.Errorf("ListenAddr(%q, %q, %v) = %v", c.addr, c.mode, c.remote, err)
		}
	}
}

func TestOpenAPICoversEveryRoute(t *testing.T) {
	e := newEnv(t, copyBase(t))
	raw := must(t, e.call("GET", "/openapi.json", nil), 200).body
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.0") {
		t.Fatalf("openapi %s", doc.OpenAPI)
	}
	disc := must(t, e.call("GET", "/api/v1", nil), 200).json(t)["endpoints"].([]any)
	for _, x := range disc {
		ep := x.(map[string]any)
		item := doc.Paths.Value(ep["path"].(string))
		if item == nil || item.GetOperation(ep["method"].(string)) == nil {
			t.Errorf("%s %s is not in the OpenAPI document", ep["method"], ep["path"])
		}
		if ep["permission"] == "" || ep["sensitivity"] == "" {
			t.Errorf("%s %s lacks permission or sensitivity", ep["method"], ep["path"])
		}
	}
	n := must(t, e.call("GET", "/openapi.json?path=/api/v1/config&method=patch", nil), 200).body
	nd, err := openapi3.NewLoader().LoadFromData(n)
	if err != nil {
		t.Fatal(err)
	}
	if nd.Paths.Len() != 1 || nd.Paths.Value("/api/v1/config").Patch == nil || nd.Paths.Value("/api/v1/config").Get != nil {
		t.Fatalf("narrowed: %s", n)
	}
	must(t, e.call("GET", "/openapi.json?path=/nope", nil), 404)
	must(t, e.call("GET", "/openapi.json?method=GET", nil), 400)
	// The API browser works offline: no external URL in the page.
	resp, err := http.Get(e.srv.URL + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "/openapi.json") || strings.Contains(string(page), "https://") || strings.Contains(string(page), "http://") {
		t.Fatalf("docs page: %d", resp.StatusCode)
	}
}

// Every route of the table answers through the real HTTP stack with a
// documented status and a body that matches the OpenAPI document; none is
// left to the router's 404.
func TestEveryRouteAnswers(t *testing.T) {
	e := newEnv(t, copyBase(t))
	e.startup.Begin()
	e.startup.Complete()
	disc := must(t, e.call("GET", "/api/v1", nil), 200).json(t)["endpoints"].([]any)
	fill := strings.NewReplacer("{name}", "spare", "{type}", "system_prompt", "{id}", "x1", "{file_id}", "f1")
	for _, x := range disc {
		ep := x.(map[string]any)
		method, path := ep["method"].(string), fill.Replace(ep["path"].(string))
		var body any
		if method != "GET" && method != "DELETE" {
			body = map[string]any{}
		}
		hdr := []string{}
		if ep["mutation"] == true {
			hdr = []string{"If-Match", `"stale"`}
		}
		r := e.call(method, path, body, hdr...) // validated against the document
		if r.status == 404 && strings.Contains(string(r.body), "no management route") {
			t.Errorf("%s %s is not routed", method, path)
		}
		if r.status == 500 {
			t.Errorf("%s %s: 500 %s", method, path, r.body)
		}
		if r.status == 405 {
			t.Errorf("%s %s: 405", method, path)
		}
	}
}

// TestStatusReportsBackendHealth: the gateway's passive health of each
// backend is in the status document.
func TestStatusReportsBackendHealth(t *testing.T) {
	e := newEnvOpts(t, copyBase(t), compiler(t), func(o *mgmt.Options) {
		o.Backends = func() []metrics.BackendState {
			return []metrics.BackendState{
				{Backend: "http://a.internal:8000/v1", Ejected: true, ConsecutiveFailures: 3, Ejections: 2},
				{Backend: "http://b.internal:8000/v1"},
			}
		}
	})
	var st mgmt.StatusDocument
	if err := json.Unmarshal(must(t, e.call("GET", "/api/v1/status", nil), 200).body, &st); err != nil {
		t.Fatal(err)
	}
	want := []mgmt.BackendStatus{
		{Backend: "http://a.internal:8000/v1", State: "ejected", ConsecutiveFailures: 3, Ejections: 2},
		{Backend: "http://b.internal:8000/v1", State: "healthy"},
	}
	if fmt.Sprint(st.Backends) != fmt.Sprint(want) {
		t.Errorf("backends = %+v, want %+v", st.Backends, want)
	}
}

// TestHealthEarlierShapeEndpoints: the earlier-revision /health carries
// cache (disabled without a response cache) and endpoints, each backend
// healthy or degraded as passive health sees it.
func TestHealthEarlierShapeEndpoints(t *testing.T) {
	e := newEnvOpts(t, copyBase(t), compiler(t), func(o *mgmt.Options) {
		o.Backends = func() []metrics.BackendState {
			return []metrics.BackendState{
				{Backend: "http://a.internal:8000/v1", Ejected: true, ConsecutiveFailures: 3},
				{Backend: "http://b.internal:8000/v1"},
			}
		}
	})
	var h mgmt.HealthResponse
	if err := json.Unmarshal(must(t, e.call("GET", "/health", nil), 200).body, &h); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"http://a.internal:8000/v1": "degraded", "http://b.internal:8000/v1": "healthy"}
	if fmt.Sprint(h.Endpoints) != fmt.Sprint(want) || h.Cache.Status != "disabled" || h.Models["pii_detector"] != "loaded" {
		t.Errorf("health = %+v", h)
	}
}
