package metrics

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/engine/reasoning"
	"github.com/junction-router/junction/recipes"
)

// recordEverything touches every metric once so that each has a series.
func recordEverything(m *Metrics) {
	m.Request("/v1/chat/completions", "hard_math", 200, 120*time.Millisecond)
	m.Routed(&engine.Result{
		RequestedModel: "MoM", Decision: "hard_math", Model: "big", ReasonCode: engine.ReasonAutoRouting,
		Reasoning:          reasoning.Mode{Enabled: true, Effort: "high", Family: "deepseek", Type: recipes.FamilyChatTemplateKwargs, Param: "thinking"},
		PIIDetected:        true,
		JailbreakDetected:  true,
		ClassificationTime: 3 * time.Millisecond,
	})
	m.Routed(&engine.Result{
		RequestedModel: "MoM", Decision: "code", Model: "coder", ReasonCode: engine.ReasonAutoRouting,
		Reasoning: reasoning.Mode{Enabled: true, Effort: "low", Family: "gpt", Type: recipes.FamilyReasoningEffort, Param: "reasoning_effort"},
	})
	m.ModelRequest("big")
	m.Error("big", ReasonUpstream5xx)
	m.Usage("big", &recipes.Pricing{Currency: "USD", PromptPer1M: 1, CompletionPer1M: 4}, cost.Usage{PromptTokens: 1000, CompletionTokens: 500, TotalTokens: 1500})
	m.TTFT("big", 250*time.Millisecond)
	m.TPOT("big", time.Second, 50)
	m.SetCache(10, 0.25)
	m.SetClassificationAccuracy("math", 0.9)
}

func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	srv := httptest.NewServer(Handler(reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

func TestExpositionHasEverySpecMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	recordEverything(m)
	text := scrape(t, reg)
	for _, name := range Names {
		if !strings.Contains(text, "# TYPE "+name+" ") {
			t.Errorf("exposition lacks %s", name)
		}
	}
	for _, want := range []string{
		`router_requests_total{category="hard_math",endpoint="/v1/chat/completions",status="200"} 1`,
		`llm_reasoning_decisions_total{category="hard_math",effort="high",enabled="true",model="big"} 1`,
		`llm_reasoning_template_usage_total{family="deepseek",param="thinking"} 1`,
		`llm_reasoning_effort_usage_total{effort="low",family="gpt"} 1`,
		`router_pii_detections_total{action="allowed"} 1`,
		`router_jailbreak_attempts_total{action="allowed"} 1`,
		`llm_routing_reason_codes_total{model="big",reason_code="auto_routing"} 1`,
		`llm_model_ttft_seconds_bucket{model="big",le="0.25"} 1`,
		`llm_model_tpot_seconds_bucket{model="big",le="0.02"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
}

// TestPromtool runs `promtool check metrics` on the exposition. CI installs
// promtool (Debian package prometheus); without it the test is skipped.
func TestPromtool(t *testing.T) {
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH (Debian package prometheus); skipping exposition lint")
	}
	reg := prometheus.NewRegistry()
	recordEverything(New(reg))
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape(t, reg))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
}

func TestCostFollowsSpecFormula(t *testing.T) {
	m := New(prometheus.NewRegistry())
	p := &recipes.Pricing{Currency: "EUR", PromptPer1M: 1.0, CompletionPer1M: 4.0}
	m.Usage("big", p, cost.Usage{PromptTokens: 1000, CompletionTokens: 500})
	m.Usage("big", p, cost.Usage{PromptTokens: 10, CompletionTokens: 2})
	got := testutil.ToFloat64(m.modelCost.WithLabelValues("big", "EUR"))
	want := (1000*1.0+500*4.0)/1e6 + (10*1.0+2*4.0)/1e6
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("cost = %v, want %v", got, want)
	}
	if v := testutil.ToFloat64(m.promptTokens.WithLabelValues("big")); v != 1010 {
		t.Fatalf("prompt tokens = %v", v)
	}
	// No pricing: tokens only, no cost series.
	m.Usage("free", nil, cost.Usage{PromptTokens: 5, CompletionTokens: 5})
	if n := testutil.CollectAndCount(m.modelCost); n != 1 {
		t.Fatalf("cost series = %d, want 1 (unpriced model must not get one)", n)
	}
}

func TestBlockCountsErrorAndAction(t *testing.T) {
	m := New(prometheus.NewRegistry())
	m.Routed(&engine.Result{RequestedModel: "MoM", ReasonCode: engine.ReasonSecurityBlocked, PIIDetected: true,
		Block: &engine.Block{Code: "pii_detected", Entities: []string{"EMAIL"}}})
	m.Routed(&engine.Result{RequestedModel: "MoM", ReasonCode: engine.ReasonSecurityBlocked, JailbreakDetected: true,
		Block: &engine.Block{Code: "jailbreak_detected"}})
	for _, c := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{m.piiDetections.WithLabelValues(ActionBlocked), 1},
		{m.jailbreakAttempts.WithLabelValues(ActionBlocked), 1},
		{m.requestErrors.WithLabelValues("MoM", ReasonPIIPolicyDenied), 1},
		{m.requestErrors.WithLabelValues("MoM", ReasonJailbreakBlock), 1},
		{m.reasonCodes.WithLabelValues(engine.ReasonSecurityBlocked, "MoM"), 2},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("got %v want %v", got, c.want)
		}
	}
	// A blocked request made no reasoning decision.
	if n := testutil.CollectAndCount(m.reasoningDecisions); n != 0 {
		t.Fatalf("reasoning decisions recorded for blocked requests: %d", n)
	}
}

func TestModelSpecifiedRecordsNoReasoning(t *testing.T) {
	m := New(prometheus.NewRegistry())
	m.Routed(&engine.Result{RequestedModel: "big", Model: "big", ReasonCode: engine.ReasonModelSpecified})
	if n := testutil.CollectAndCount(m.reasoningDecisions); n != 0 {
		t.Fatalf("reasoning decisions = %d, want 0", n)
	}
	if got := testutil.ToFloat64(m.reasonCodes.WithLabelValues(engine.ReasonModelSpecified, "big")); got != 1 {
		t.Fatalf("reason code count = %v", got)
	}
}

func TestTwoInstancesDoNotCollide(t *testing.T) {
	New(prometheus.NewRegistry())
	New(prometheus.NewRegistry()) // would panic on a shared global registry
}

func TestNilMetricsIsNoOp(t *testing.T) {
	var m *Metrics
	recordEverything(m)
	m.Routed(&engine.Result{Block: &engine.Block{Code: "pii_detected"}})
}
