package recipes

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Reliability is a decision's retry and timeout policy (spec 001, "Decision
// reliability"). Every field is optional: an omitted one keeps the
// recipe's value, then global.router's, then the built-in default
// (ResolvePolicy). Durations are strings like "30s"; "0s" turns a timeout
// off (and overrides a value set further out).
type Reliability struct {
	// TotalTimeout bounds the whole upstream exchange: every attempt, the
	// waits between them, and the answer's body (a stream included).
	TotalTimeout *Duration `json:"total_timeout,omitempty"`
	// PerTryTimeout bounds one attempt until its answer is committed to the
	// client: a non-streamed answer until its body is read, a stream until
	// its first event. After that only IdleTimeout and TotalTimeout apply.
	PerTryTimeout *Duration `json:"per_try_timeout,omitempty"`
	// IdleTimeout bounds each gap while reading an answer (between stream
	// events). The standalone gateway only.
	IdleTimeout *Duration `json:"idle_timeout,omitempty"`
	// FirstByteTimeout bounds the wait for the answer's status line. The
	// standalone gateway only.
	FirstByteTimeout *Duration `json:"first_byte_timeout,omitempty"`
	// RetryBackOffBase and RetryBackOffMax shape the jittered exponential
	// back-off between retries (standalone only).
	RetryBackOffBase *Duration `json:"retry_back_off_base,omitempty"`
	RetryBackOffMax  *Duration `json:"retry_back_off_max,omitempty"`
	// RetryAfterMax is the longest Retry-After the gateway waits for; a
	// longer one ends the retries on that backend (standalone only; "0s"
	// ignores Retry-After).
	RetryAfterMax *Duration `json:"retry_after_max,omitempty"`
	// RetryCount is how many times an attempt is retried on the same
	// backend (0 to MaxRetryCount).
	RetryCount *int `json:"retry_count,omitempty"`
	// RetryOn is a comma-separated list of Envoy retry conditions
	// (RetryConditions).
	RetryOn *string `json:"retry_on,omitempty"`
	// RetriableStatusCodes are retried under the retriable-status-codes
	// condition.
	RetriableStatusCodes []int `json:"retriable_status_codes,omitempty"`
}

// Fallback is a decision's failover policy (spec 001, "Decision
// fallback"): when a candidate fails, the next one is tried — the
// decision's modelRefs in order, each over its backend_refs in order.
type Fallback struct {
	Enabled *bool `json:"enabled,omitempty"`
	// MaxAttempts bounds how many candidates are tried, the first one
	// included; 0 tries every candidate.
	MaxAttempts *int `json:"max_attempts,omitempty"`
	// TotalTimeout bounds the failover sequence as a whole, PerAttemptTimeout
	// one candidate (its retries included).
	TotalTimeout      *Duration `json:"total_timeout,omitempty"`
	PerAttemptTimeout *Duration `json:"per_attempt_timeout,omitempty"`
	// RetryableStatusCodes are the answers that move on to the next
	// candidate (connection failures and timeouts always do).
	RetryableStatusCodes []int `json:"retryable_status_codes,omitempty"`
}

// Limits and built-in defaults of reliability and fallback.
const (
	MaxRetryCount           = 5
	DefaultRetryBackOffBase = 25 * time.Millisecond
	DefaultRetryBackOffMax  = 250 * time.Millisecond
	DefaultRetryAfterMax    = 10 * time.Second
	DefaultRetryOn          = "5xx,reset,connect-failure,retriable-status-codes"
)

// DefaultRetriableStatusCodes and DefaultFallbackStatusCodes are the
// built-in status lists.
var (
	DefaultRetriableStatusCodes = []int{429}
	DefaultFallbackStatusCodes  = []int{429, 500, 502, 503, 504}
)

// Retry conditions (Envoy's x-envoy-retry-on names). The standalone gateway
// implements the first seven; the others are accepted for Envoy and never
// match there.
var RetryConditions = []string{
	"5xx", "gateway-error", "reset", "connect-failure", "retriable-4xx", "refused-stream", "retriable-status-codes",
	"reset-before-request", "envoy-ratelimited", "retriable-headers", "http3-post-connect-failure",
}

// Policy is the reliability and fallback in force for one decision, every
// layer merged and defaults applied. Zero durations are off.
type Policy struct {
	TotalTimeout, PerTryTimeout, IdleTimeout, FirstByteTimeout time.Duration
	RetryBackOffBase, RetryBackOffMax, RetryAfterMax           time.Duration
	RetryCount                                                 int
	// RetryOn is the parsed condition set (RetryConditions names).
	RetryOn              map[string]bool
	RetryOnText          string
	RetriableStatusCodes []int

	FallbackEnabled           bool
	FallbackMaxAttempts       int
	FallbackTotalTimeout      time.Duration
	FallbackPerAttemptTimeout time.Duration
	FallbackStatusCodes       []int

	// PreferredEndpoints are tried first among a model's backend_refs
	// (matched by PreferredEndpoint).
	PreferredEndpoints []string
}

// Active reports whether the policy asks for anything beyond one plain
// attempt: the front ends skip the attempt machinery otherwise.
func (p *Policy) Active() bool {
	return p != nil && (p.RetryCount > 0 || p.FallbackEnabled || p.TotalTimeout > 0 || p.PerTryTimeout > 0 ||
		p.IdleTimeout > 0 || p.FirstByteTimeout > 0 || len(p.PreferredEndpoints) > 0)
}

// RetriesStatus reports whether an answer with status is retried on the
// same backend.
func (p *Policy) RetriesStatus(status int) bool {
	on := p.RetryOn
	switch {
	case on["5xx"] && status >= 500:
		return true
	case on["gateway-error"] && (status == 502 || status == 503 || status == 504):
		return true
	case on["retriable-4xx"] && status == 409:
		return true
	case on["retriable-status-codes"] && slices.Contains(p.RetriableStatusCodes, status):
		return true
	}
	return false
}

// RetriesConnect reports whether a connection that could not be made is
// retried; RetriesReset a connection that broke (or timed out) before the
// answer began.
func (p *Policy) RetriesConnect() bool {
	return p.RetryOn["connect-failure"] || p.RetryOn["5xx"] || p.RetryOn["gateway-error"] || p.RetryOn["reset"]
}

// RetriesReset: see RetriesConnect.
func (p *Policy) RetriesReset() bool {
	return p.RetryOn["reset"] || p.RetryOn["5xx"] || p.RetryOn["gateway-error"] || p.RetryOn["refused-stream"]
}

// FallsBackOn reports whether an answer with status moves on to the next
// candidate.
func (p *Policy) FallsBackOn(status int) bool {
	return p.FallbackEnabled && slices.Contains(p.FallbackStatusCodes, status)
}

// ResolvePolicy merges the reliability and fallback layers, innermost
// (the decision's) winning field by field, over the built-in defaults.
// Any layer may be nil.
func ResolvePolicy(router, recipe, decision *Reliability, routerFB, recipeFB, decisionFB *Fallback, preferred []string) *Policy {
	p := &Policy{
		RetryBackOffBase:     DefaultRetryBackOffBase,
		RetryBackOffMax:      DefaultRetryBackOffMax,
		RetryAfterMax:        DefaultRetryAfterMax,
		RetryOnText:          DefaultRetryOn,
		RetriableStatusCodes: DefaultRetriableStatusCodes,
		FallbackStatusCodes:  DefaultFallbackStatusCodes,
		PreferredEndpoints:   preferred,
	}
	for _, r := range []*Reliability{router, recipe, decision} {
		if r == nil {
			continue
		}
		setDur(&p.TotalTimeout, r.TotalTimeout)
		setDur(&p.PerTryTimeout, r.PerTryTimeout)
		setDur(&p.IdleTimeout, r.IdleTimeout)
		setDur(&p.FirstByteTimeout, r.FirstByteTimeout)
		setDur(&p.RetryBackOffBase, r.RetryBackOffBase)
		setDur(&p.RetryBackOffMax, r.RetryBackOffMax)
		setDur(&p.RetryAfterMax, r.RetryAfterMax)
		if r.RetryCount != nil {
			p.RetryCount = *r.RetryCount
		}
		if r.RetryOn != nil {
			p.RetryOnText = *r.RetryOn
		}
		if r.RetriableStatusCodes != nil {
			p.RetriableStatusCodes = r.RetriableStatusCodes
		}
	}
	for _, f := range []*Fallback{routerFB, recipeFB, decisionFB} {
		if f == nil {
			continue
		}
		if f.Enabled != nil {
			p.FallbackEnabled = *f.Enabled
		}
		if f.MaxAttempts != nil {
			p.FallbackMaxAttempts = *f.MaxAttempts
		}
		setDur(&p.FallbackTotalTimeout, f.TotalTimeout)
		setDur(&p.FallbackPerAttemptTimeout, f.PerAttemptTimeout)
		if f.RetryableStatusCodes != nil {
			p.FallbackStatusCodes = f.RetryableStatusCodes
		}
	}
	p.RetryOn = map[string]bool{}
	for _, c := range splitConditions(p.RetryOnText) {
		p.RetryOn[c] = true
	}
	if p.RetryBackOffMax < p.RetryBackOffBase {
		p.RetryBackOffMax = p.RetryBackOffBase
	}
	return p
}

func setDur(dst *time.Duration, v *Duration) {
	if v != nil {
		*dst = v.Duration
	}
}

func splitConditions(s string) []string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// DecisionPolicy is the policy in force for decision dec of recipe r (nil
// dec: the recipe's default route).
func (d *Document) DecisionPolicy(r *Recipe, dec *Decision) *Policy {
	var rr *Reliability
	var rf *Fallback
	if d.Global.Router != nil {
		rr, rf = d.Global.Router.Reliability, d.Global.Router.Fallback
	}
	if dec == nil {
		return ResolvePolicy(rr, r.Reliability, nil, rf, r.Fallback, nil, nil)
	}
	return ResolvePolicy(rr, r.Reliability, dec.Reliability, rf, r.Fallback, dec.Fallback, dec.PreferredEndpoints)
}

// PreferredEndpoint reports whether backend ref is named by endpoint: its
// base_url (a trailing slash ignored) or its host[:port].
func PreferredEndpoint(ref *BackendRef, endpoint string) bool {
	e := strings.TrimRight(strings.TrimSpace(endpoint), "/")
	if e == "" {
		return false
	}
	if strings.TrimRight(ref.BaseURL, "/") == e {
		return true
	}
	u, err := url.Parse(ref.BaseURL)
	return err == nil && u.Host != "" && (u.Host == e || u.Hostname() == e)
}

// reliability checks one layer of reliability at path p.
func (c *checker) reliability(p string, r *Reliability) {
	if r == nil {
		return
	}
	for _, d := range []struct {
		name string
		v    *Duration
	}{
		{"total_timeout", r.TotalTimeout}, {"per_try_timeout", r.PerTryTimeout}, {"idle_timeout", r.IdleTimeout},
		{"first_byte_timeout", r.FirstByteTimeout}, {"retry_back_off_base", r.RetryBackOffBase},
		{"retry_back_off_max", r.RetryBackOffMax}, {"retry_after_max", r.RetryAfterMax},
	} {
		if d.v != nil && d.v.Duration < 0 {
			c.add(p+"/"+d.name, CodeInvalidValue, "must not be negative (got %s); \"0s\" turns it off", d.v.Duration)
		}
	}
	if r.RetryCount != nil && (*r.RetryCount < 0 || *r.RetryCount > MaxRetryCount) {
		c.add(p+"/retry_count", CodeInvalidValue, "must be between 0 and %d (got %d)", MaxRetryCount, *r.RetryCount)
	}
	if r.RetryOn != nil {
		for _, cond := range strings.Split(*r.RetryOn, ",") {
			cond = strings.TrimSpace(cond)
			if cond == "" {
				continue
			}
			if !slices.Contains(RetryConditions, cond) {
				c.add(p+"/retry_on", CodeInvalidValue, "unknown retry condition %q: use a comma-separated list of %s", cond, strings.Join(RetryConditions, ", "))
			}
		}
	}
	c.statusCodes(p+"/retriable_status_codes", r.RetriableStatusCodes)
	if r.RetryBackOffBase != nil && r.RetryBackOffMax != nil && r.RetryBackOffMax.Duration > 0 && r.RetryBackOffMax.Duration < r.RetryBackOffBase.Duration {
		c.add(p+"/retry_back_off_max", CodeConflict, "must not be shorter than retry_back_off_base (%s)", r.RetryBackOffBase.Duration)
	}
}

// fallback checks one layer of fallback at path p.
func (c *checker) fallback(p string, f *Fallback) {
	if f == nil {
		return
	}
	if f.MaxAttempts != nil && *f.MaxAttempts < 0 {
		c.add(p+"/max_attempts", CodeInvalidValue, "must not be negative (got %d); 0 tries every candidate", *f.MaxAttempts)
	}
	for _, d := range []struct {
		name string
		v    *Duration
	}{{"total_timeout", f.TotalTimeout}, {"per_attempt_timeout", f.PerAttemptTimeout}} {
		if d.v != nil && d.v.Duration < 0 {
			c.add(p+"/"+d.name, CodeInvalidValue, "must not be negative (got %s); \"0s\" turns it off", d.v.Duration)
		}
	}
	c.statusCodes(p+"/retryable_status_codes", f.RetryableStatusCodes)
}

func (c *checker) statusCodes(p string, codes []int) {
	for i, s := range codes {
		if s < 100 || s > 599 {
			c.add(fmt.Sprintf("%s/%d", p, i), CodeInvalidValue, "must be an HTTP status between 100 and 599 (got %d)", s)
		}
	}
}

// preferredEndpoints checks that each preferred endpoint names a backend of
// one of the decision's models.
func (c *checker) preferredEndpoints(p string, dec *Decision) {
	for i, e := range dec.PreferredEndpoints {
		ep := fmt.Sprintf("%s/preferred_endpoints/%d", p, i)
		if strings.TrimSpace(e) == "" {
			c.add(ep, CodeMissingField, "name a backend by its base_url or host:port")
			continue
		}
		found := false
		var known []string
		for _, ref := range dec.ModelRefs {
			m, ok := c.doc.Model(ref.Model)
			if !ok {
				continue
			}
			for k := range m.BackendRefs {
				known = append(known, m.BackendRefs[k].BaseURL)
				if PreferredEndpoint(&m.BackendRefs[k], e) {
					found = true
				}
			}
		}
		if !found {
			c.add(ep, CodeUnknownRef, "%q is not a backend of the decision's models (name a backend_ref's base_url or host:port; known: %s)", e, strings.Join(known, ", "))
		}
	}
}
