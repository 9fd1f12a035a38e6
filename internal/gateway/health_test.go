package gateway

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/recipes"
)

func TestHealthTracker(t *testing.T) {
	h := NewHealth(3, 10*time.Second)
	now := time.Unix(1000, 0)
	h.now = func() time.Time { return now }
	h.SetModels([]recipes.Model{
		{Name: "one", BackendRefs: []recipes.BackendRef{{BaseURL: "http://a/v1/"}}},
		{Name: "two", BackendRefs: []recipes.BackendRef{{BaseURL: "http://a/v1"}, {BaseURL: "http://b/v1"}}},
	})
	if !h.Healthy("one") || !h.Healthy("unknown-model") {
		t.Fatal("fresh tracker must report healthy")
	}
	h.Failure("http://a/v1")
	h.Failure("http://a/v1")
	if !h.Healthy("one") {
		t.Fatal("unhealthy before the threshold")
	}
	h.Failure("http://a/v1")
	if h.Healthy("one") {
		t.Fatal("healthy after 3 failures in a row")
	}
	if !h.Healthy("two") {
		t.Fatal("a model with another healthy backend is healthy")
	}
	now = now.Add(11 * time.Second)
	if !h.Healthy("one") {
		t.Fatal("still unhealthy after the cooldown")
	}
	// The probe after the cooldown fails: down again at once.
	h.Failure("http://a/v1")
	if h.Healthy("one") {
		t.Fatal("a failed probe must put the backend down again")
	}
	now = now.Add(11 * time.Second)
	h.Success("http://a/v1")
	h.Failure("http://a/v1")
	if !h.Healthy("one") {
		t.Fatal("a success must reset the failure count")
	}
}

func TestPickSkipsUnhealthyBackend(t *testing.T) {
	u := NewUpstreams(UpstreamOptions{FailureThreshold: 1})
	m := &recipes.Model{Name: "m", BackendRefs: []recipes.BackendRef{{BaseURL: "http://a"}, {BaseURL: "http://b"}}}
	if ref, _ := u.pick(m); ref.BaseURL != "http://a" {
		t.Fatalf("picked %s", ref.BaseURL)
	}
	u.Health().Failure("http://a")
	if ref, _ := u.pick(m); ref.BaseURL != "http://b" {
		t.Fatalf("picked %s after a failed", ref.BaseURL)
	}
	u.Health().Failure("http://b")
	if ref, _ := u.pick(m); ref.BaseURL != "http://a" {
		t.Fatalf("none healthy: picked %s, want the first", ref.BaseURL)
	}
	if u.Health().Healthy("m") {
		t.Fatal("model with every backend down reported healthy")
	}
}

func TestUpstreamPoolsSurviveRetain(t *testing.T) {
	u := NewUpstreams(UpstreamOptions{})
	a := &recipes.BackendRef{BaseURL: "http://a/v1"}
	b := &recipes.BackendRef{BaseURL: "http://b/v1"}
	ta, tb := u.transport(a), u.transport(b)
	u.Retain(&recipes.Document{Providers: recipes.Providers{Models: []recipes.Model{{Name: "m", BackendRefs: []recipes.BackendRef{*a}}}}})
	if u.transport(a) != ta {
		t.Fatal("a kept backend lost its pool on reload")
	}
	if u.transport(b) == tb {
		t.Fatal("a removed backend kept its pool")
	}
}

func TestGatewayMarksFailingBackend(t *testing.T) {
	dead := closedURL(t)
	e := newEnv(t, withYAML(func(y string) string {
		return strings.Replace(y, `"{{small}}/v1"`, `"`+dead+`/v1"`, 1)
	}))
	for i := 0; i < DefaultFailureThreshold; i++ {
		e.post("/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":"hi"}]}`)
	}
	if e.server.ups.Health().Healthy("small") {
		t.Fatal("a backend refusing connections stays healthy")
	}
}

func TestMetricsExposition(t *testing.T) {
	e := newEnv(t)
	e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"prove it"}]}`)
	e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"mail a@b.example"}]}`)
	e.post("/v1/chat/completions", `{"model":"MoM","messages":[`)
	e.busy.Wait() // an answer reaches the client before its handler records it
	srv := httptest.NewServer(metrics.Handler(e.reg))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	for _, want := range []string{
		`router_requests_total{category="hard_math",endpoint="/v1/chat/completions",status="200"} 1`,
		`router_requests_total{category="default",endpoint="/v1/chat/completions",status="403"} 1`,
		`router_requests_total{category="default",endpoint="/v1/chat/completions",status="400"} 1`,
		`llm_routing_reason_codes_total{model="big",reason_code="auto_routing"} 1`,
		`llm_reasoning_decisions_total{category="hard_math",effort="high",enabled="true",model="big"} 1`,
		`llm_reasoning_template_usage_total{family="deepseek",param="thinking"} 1`,
		`router_pii_detections_total{action="blocked"} 1`,
		`llm_request_errors_total{model="MoM",reason="pii_policy_denied"} 1`,
		`llm_request_errors_total{model="unknown",reason="parse_error"} 1`,
		`llm_model_requests_total{model="big"} 1`,
		`router_request_duration_seconds_count{endpoint="/v1/chat/completions"} 3`,
		`router_classification_duration_seconds_count 2`,
		"llm_model_ttft_seconds_bucket",
		"llm_model_tpot_seconds_bucket",
		"llm_model_cost_total",
		"llm_model_prompt_tokens_total",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %s", want)
		}
	}
}

func TestServesWithoutMetricsOrLogger(t *testing.T) {
	gen := compileYAML(t, fuzzConfig)
	srv := httptest.NewServer(New(Options{Runtime: engine.NewRuntime(gen)}))
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"MoM","stream":true,"messages":[{"role":"user","content":"prove it"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"model":"big"`) || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}
