package extproc_test

import (
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/extproc/envoytest"
)

// TestPolicyHeadersForEnvoy: a decision's reliability reaches Envoy's
// router as its retry and timeout request headers, on the route the
// rewritten request picks; a decision without one leaves the route's own.
func TestPolicyHeadersForEnvoy(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.edit = func(y string) string {
			return strings.Replace(y, `        modelRefs:
          - {model: coder, use_reasoning: true, reasoning_effort: low}
`, `        modelRefs:
          - {model: coder, use_reasoning: true, reasoning_effort: low}
        reliability:
          retry_count: 3
          retry_on: "5xx,reset"
          total_timeout: 90s
          per_try_timeout: 1500ms
          first_byte_timeout: 5s
`, 1)
		}
	})
	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(userBody("write python please")))
	if err != nil {
		t.Fatal(err)
	}
	up := out.Upstream
	for k, want := range map[string]string{
		"x-selected-model":                       "coder",
		"x-envoy-max-retries":                    "3",
		"x-envoy-retry-on":                       "5xx,reset",
		"x-envoy-upstream-rq-timeout-ms":         "90000",
		"x-envoy-upstream-rq-per-try-timeout-ms": "1500",
	} {
		if got := up.Headers.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if up.Headers.Has("x-envoy-retriable-status-codes") {
		t.Error("retriable status codes sent without the retriable-status-codes condition")
	}
	if len(s.Rejected) > 0 || len(s.Ignored) > 0 {
		t.Errorf("mutations Envoy would refuse %v or ignore %v", s.Rejected, s.Ignored)
	}

	// No policy: nothing of Envoy's is touched.
	s = e.open(envoytest.Standard)
	out, err = s.SendRequest(chat(userBody("hello there")))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"x-envoy-max-retries", "x-envoy-retry-on", "x-envoy-upstream-rq-timeout-ms", "x-envoy-upstream-rq-per-try-timeout-ms"} {
		if out.Upstream.Headers.Has(k) {
			t.Errorf("%s set for a decision without a policy", k)
		}
	}
}

// TestFallbackPolicyHeadersForEnvoy: with fallback on, Envoy gets enough
// retries for the candidates and the fallback statuses, so that a cluster
// with several hosts (or priorities) fails over.
func TestFallbackPolicyHeadersForEnvoy(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.edit = func(y string) string {
			return strings.Replace(y, `          - {model: small, use_reasoning: false}
`, `          - {model: small, use_reasoning: false}
        fallback: {enabled: true, max_attempts: 3, per_attempt_timeout: 20s}
`, 1)
		}
	})
	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(userBody("hello there")))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"x-envoy-max-retries":                    "2",
		"x-envoy-retry-on":                       "5xx,reset,connect-failure,retriable-status-codes",
		"x-envoy-retriable-status-codes":         "429,500,502,503,504",
		"x-envoy-upstream-rq-per-try-timeout-ms": "20000",
	} {
		if got := out.Upstream.Headers.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
