package extproc

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/junction-router/junction/recipes"
)

// Envoy's request headers for the route's retry policy and timeouts. The
// router filter reads them after ext_proc answered, so they apply to the
// route the rewritten request picks; they override the route's own
// retry_policy and timeout.
const (
	envoyMaxRetries       = "x-envoy-max-retries"
	envoyRetryOn          = "x-envoy-retry-on"
	envoyRetriableCodes   = "x-envoy-retriable-status-codes"
	envoyTimeoutMS        = "x-envoy-upstream-rq-timeout-ms"
	envoyPerTryTimeoutMS  = "x-envoy-upstream-rq-per-try-timeout-ms"
	retriableStatusCodeOn = "retriable-status-codes"
)

// putPolicyHeaders asks Envoy for the decision's reliability: retries
// (retry_count, or with fallback enabled enough retries for its candidates,
// which Envoy sends to the cluster's other hosts), the retry conditions and
// status codes, the total timeout and the per-try timeout. Nothing is set
// for a decision without a policy, so the route's own configuration stands.
// The five standalone-only fields (first_byte_timeout, idle_timeout, the
// back-off and retry_after_max) have no per-request header: Envoy's route
// configuration sets them.
func putPolicyHeaders(m *mutation, p *recipes.Policy) {
	if !p.Active() {
		return
	}
	retries := p.RetryCount
	codes := p.RetriableStatusCodes
	on := p.RetryOnText
	if p.FallbackEnabled {
		extra := p.FallbackMaxAttempts - 1
		if p.FallbackMaxAttempts == 0 {
			extra = recipes.MaxRetryCount
		}
		retries = max(retries, extra)
		codes = unionCodes(codes, p.FallbackStatusCodes)
		if !p.RetryOn[retriableStatusCodeOn] {
			on = joinConditions(on, retriableStatusCodeOn)
		}
		for _, c := range []string{"connect-failure", "reset"} {
			if !p.RetryOn[c] && !strings.Contains(on, c) {
				on = joinConditions(on, c)
			}
		}
	}
	if retries > 0 {
		m.put(envoyMaxRetries, strconv.Itoa(retries), false)
		if on != "" {
			m.put(envoyRetryOn, on, false)
		}
		if len(codes) > 0 && strings.Contains(on, retriableStatusCodeOn) {
			m.put(envoyRetriableCodes, joinCodes(codes), false)
		}
	}
	total := p.TotalTimeout
	if total == 0 {
		total = p.FallbackTotalTimeout
	}
	if total > 0 {
		m.put(envoyTimeoutMS, millis(total), false)
	}
	perTry := p.PerTryTimeout
	if perTry == 0 {
		perTry = p.FallbackPerAttemptTimeout
	}
	if perTry > 0 {
		m.put(envoyPerTryTimeoutMS, millis(perTry), false)
	}
}

func millis(d time.Duration) string {
	ms := d.Milliseconds()
	if ms == 0 {
		ms = 1 // a sub-millisecond timeout must not read as "no timeout"
	}
	return strconv.FormatInt(ms, 10)
}

func joinConditions(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func unionCodes(a, b []int) []int {
	out := slices.Clone(a)
	for _, c := range b {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

func joinCodes(codes []int) string {
	var b strings.Builder
	for i, c := range codes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c))
	}
	return b.String()
}
