package metrics

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/recipes"
)

// The cached children must be the vectors' own series, created no earlier
// than WithLabelValues would create them.
func TestCachedChildren(t *testing.T) {
	m := New(prometheus.NewRegistry())
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				m.ModelRequest("small")
				m.Request("/v1/chat/completions", "general", 200, time.Millisecond)
				m.TTFT("small", time.Millisecond)
			}
		}()
	}
	wg.Wait()
	m.Request("/v1/chat/completions", "general", 502, time.Millisecond)
	m.Error("small", ReasonUpstream5xx)
	m.Error("small", ReasonUpstream5xx)

	if got := testutil.ToFloat64(m.modelRequests.WithLabelValues("small")); got != 800 {
		t.Errorf("llm_model_requests_total{small} = %v, want 800", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("/v1/chat/completions", "general", "200")); got != 800 {
		t.Errorf("router_requests_total{200} = %v, want 800", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("/v1/chat/completions", "general", "502")); got != 1 {
		t.Errorf("router_requests_total{502} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.requestErrors.WithLabelValues("small", ReasonUpstream5xx)); got != 2 {
		t.Errorf("llm_request_errors_total = %v, want 2", got)
	}
	if got := testutil.CollectAndCount(m.ttft); got != 1 {
		t.Errorf("llm_model_ttft_seconds has %d series, want 1", got)
	}
	for name, c := range map[string]prometheus.Collector{
		"prompt tokens": m.promptTokens, "completion tokens": m.completionTokens, "cost": m.modelCost, "tpot": m.tpot,
	} {
		if n := testutil.CollectAndCount(c); n != 0 {
			t.Errorf("%s has %d series before anything was recorded", name, n)
		}
	}
	m.Usage("small", &recipes.Pricing{Currency: "USD", PromptPer1M: 1}, cost.Usage{PromptTokens: 10})
	if n := testutil.CollectAndCount(m.completionTokens); n != 0 {
		t.Errorf("completion tokens got a series from a usage without completion tokens")
	}
	if got := testutil.ToFloat64(m.promptTokens.WithLabelValues("small")); got != 10 {
		t.Errorf("prompt tokens = %v, want 10", got)
	}
}
