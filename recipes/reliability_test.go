package recipes

import (
	"strings"
	"testing"
	"time"
)

const reliabilityYAML = `
version: v1
providers:
  defaults: {default_model: a}
  models:
    - {name: a, backend_refs: [{base_url: "http://a1.internal:8000/v1"}, {base_url: "http://a2.internal:8000/v1"}]}
    - {name: b, backend_refs: [{base_url: "https://b.example.com/v1"}]}
global:
  router:
    reliability: {retry_count: 1, per_try_timeout: 20s, retry_on: "5xx"}
    fallback: {enabled: false, retryable_status_codes: [503]}
recipes:
  - name: r
    reliability: {retry_count: 2, first_byte_timeout: 5s}
    fallback: {enabled: true}
    decisions:
      - name: all
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: a}, {model: b}]
        preferred_endpoints: ["a2.internal:8000"]
        reliability:
          per_try_timeout: 0s
          total_timeout: 1m
          idle_timeout: 15s
          retry_back_off_base: 50ms
          retry_back_off_max: 1s
          retry_after_max: 3s
          retriable_status_codes: [429, 503]
          retry_on: "gateway-error,retriable-status-codes"
        fallback: {max_attempts: 3, total_timeout: 2m, per_attempt_timeout: 30s}
      - name: plain
        priority: -1
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: b}]
`

func TestReliabilityLayers(t *testing.T) {
	doc, err := Parse([]byte(reliabilityYAML))
	if err != nil {
		t.Fatal(err)
	}
	r := &doc.Recipes[0]
	p := doc.DecisionPolicy(r, &r.Decisions[0])
	if p.RetryCount != 2 { // the recipe's, over the router's 1
		t.Errorf("retry_count = %d, want the recipe's 2", p.RetryCount)
	}
	if p.PerTryTimeout != 0 { // "0s" at the decision turns the router's 20s off
		t.Errorf("per_try_timeout = %s, want off", p.PerTryTimeout)
	}
	if p.FirstByteTimeout != 5*time.Second || p.TotalTimeout != time.Minute || p.IdleTimeout != 15*time.Second {
		t.Errorf("timeouts = %s %s %s", p.FirstByteTimeout, p.TotalTimeout, p.IdleTimeout)
	}
	if p.RetryBackOffBase != 50*time.Millisecond || p.RetryBackOffMax != time.Second || p.RetryAfterMax != 3*time.Second {
		t.Errorf("back-off = %s %s %s", p.RetryBackOffBase, p.RetryBackOffMax, p.RetryAfterMax)
	}
	if !p.RetriesStatus(503) || !p.RetriesStatus(429) || p.RetriesStatus(500) || p.RetriesStatus(400) {
		t.Errorf("retry_on gateway-error,retriable-status-codes with [429 503]: wrong statuses retried")
	}
	if !p.FallbackEnabled || p.FallbackMaxAttempts != 3 || p.FallbackTotalTimeout != 2*time.Minute || p.FallbackPerAttemptTimeout != 30*time.Second {
		t.Errorf("fallback = %+v", p)
	}
	if !p.FallsBackOn(503) || p.FallsBackOn(500) { // the router's list, kept
		t.Errorf("fallback statuses: want the router's [503]")
	}
	if !p.Active() {
		t.Error("policy with retries is not active")
	}

	plain := doc.DecisionPolicy(r, &r.Decisions[1])
	if plain.RetryCount != 2 || plain.PerTryTimeout != 20*time.Second || !plain.FallbackEnabled {
		t.Errorf("a decision without its own keeps the recipe's and router's values: %+v", plain)
	}
	if !plain.RetriesStatus(500) || plain.RetriesStatus(429) {
		t.Errorf("router retry_on 5xx: wrong statuses retried")
	}

	if PreferredEndpoint(&doc.Providers.Models[0].BackendRefs[0], "a2.internal:8000") ||
		!PreferredEndpoint(&doc.Providers.Models[0].BackendRefs[1], "a2.internal:8000") ||
		!PreferredEndpoint(&doc.Providers.Models[1].BackendRefs[0], "https://b.example.com/v1/") {
		t.Error("PreferredEndpoint matches the wrong backends")
	}
}

func TestReliabilityDefaultsInactive(t *testing.T) {
	doc, err := Parse([]byte(minimalYAML))
	if err != nil {
		t.Fatal(err)
	}
	p := doc.DecisionPolicy(&doc.Recipes[0], &doc.Recipes[0].Decisions[0])
	if p.Active() {
		t.Errorf("a document without reliability has an active policy: %+v", p)
	}
	if p.RetryBackOffBase != DefaultRetryBackOffBase || !p.RetriesStatus(502) || !p.RetriesStatus(429) {
		t.Errorf("built-in defaults not applied: %+v", p)
	}
}

func TestReliabilityProblems(t *testing.T) {
	dec := "/recipes/0/decisions/0"
	tests := []struct {
		name, ptr string
		val       any
		wantPath  string
		wantMsg   string
	}{
		{"retry_count above 5", dec + "/reliability/retry_count", 6, dec + "/reliability/retry_count", "must be at most 5"},
		{"negative retry_count", "/recipes/0/reliability/retry_count", -1, "/recipes/0/reliability/retry_count", "must be at least 0"},
		{"unknown retry condition", dec + "/reliability/retry_on", "5xx,timeout", dec + "/reliability/retry_on", `unknown retry condition "timeout"`},
		{"status code out of range", dec + "/reliability/retriable_status_codes", []any{429, 600}, dec + "/reliability/retriable_status_codes/1", "599"},
		{"fallback status out of range", "/global/router/fallback/retryable_status_codes", []any{99}, "/global/router/fallback/retryable_status_codes/0", "100"},
		{"negative timeout", dec + "/reliability/idle_timeout", "-1s", dec + "/reliability/idle_timeout", "must not be negative"},
		{"malformed duration", dec + "/fallback/total_timeout", "soon", dec + "/fallback/total_timeout", ""},
		{"negative max_attempts", dec + "/fallback/max_attempts", -2, dec + "/fallback/max_attempts", "must be at least 0"},
		{"back-off max under base", dec + "/reliability/retry_back_off_max", "10ms", dec + "/reliability/retry_back_off_max", "retry_back_off_base"},
		{"unknown preferred endpoint", dec + "/preferred_endpoints", []any{"c.internal:1"}, dec + "/preferred_endpoints/0", "not a backend of the decision's models"},
		{"unknown reliability field", dec + "/reliability/retries", 2, dec + "/reliability/retries", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := y(t, reliabilityYAML).(map[string]any)
			set(t, v, tc.ptr, tc.val)
			_, err := Parse(toJSON(t, v))
			ve, ok := AsValidationError(err)
			if !ok {
				t.Fatalf("got %v, want a validation error at %s", err, tc.wantPath)
			}
			for _, p := range ve.Problems {
				if p.Path == tc.wantPath && strings.Contains(p.Message, tc.wantMsg) {
					return
				}
			}
			t.Fatalf("no problem at %s containing %q in %v", tc.wantPath, tc.wantMsg, ve.Problems)
		})
	}
}
