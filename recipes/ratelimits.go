package recipes

import (
	"fmt"
	"strings"
	"time"
)

// RateLimit is one entry of global.rate_limits: at most Requests requests
// and Tokens tokens (prompt + completion) per Window for each value of Key.
// Zero leaves that dimension unlimited; at least one is set.
type RateLimit struct {
	Name string `json:"name"`
	// Key is what the limit counts per: api_key, user, model, decision, or
	// header:<name>.
	Key      string   `json:"key"`
	Requests int64    `json:"requests,omitempty"`
	Tokens   int64    `json:"tokens,omitempty"`
	Window   Duration `json:"window,omitempty"`
}

// Rate-limit keys (RateLimit.Key); a header key is RateLimitKeyHeader + name.
const (
	RateLimitKeyAPIKey   = "api_key"
	RateLimitKeyUser     = "user"
	RateLimitKeyModel    = "model"
	RateLimitKeyDecision = "decision"
	RateLimitKeyHeader   = "header:"
)

// DefaultRateLimitWindow is a rate limit's window when it names none.
const DefaultRateLimitWindow = time.Minute

// HeaderName is the header a header:<name> key counts per, or "".
func (r RateLimit) HeaderName() string {
	name, _ := strings.CutPrefix(r.Key, RateLimitKeyHeader)
	if name == r.Key {
		return ""
	}
	return name
}

func (c *checker) rateLimits() {
	seen := map[string]int{}
	for i, r := range c.doc.Global.RateLimits {
		p := fmt.Sprintf("/global/rate_limits/%d", i)
		switch {
		case r.Name == "":
			c.add(p+"/name", CodeMissingField, "every rate limit needs a name (it is reported in logs and metrics)")
		default:
			if j, dup := seen[r.Name]; dup {
				c.add(p+"/name", CodeDuplicate, "rate limit name %q is already used by /global/rate_limits/%d", r.Name, j)
			}
			seen[r.Name] = i
		}
		switch {
		case r.Key == RateLimitKeyAPIKey, r.Key == RateLimitKeyUser, r.Key == RateLimitKeyModel, r.Key == RateLimitKeyDecision:
		case strings.HasPrefix(r.Key, RateLimitKeyHeader):
			if !isToken(r.HeaderName()) {
				c.add(p+"/key", CodeInvalidValue, "header:<name> needs a valid HTTP header name after the colon (got %q)", r.Key)
			}
		case r.Key == "":
			c.add(p+"/key", CodeMissingField, "name what the limit counts per: api_key, user, model, decision or header:<name>")
		default:
			c.add(p+"/key", CodeInvalidValue, "must be api_key, user, model, decision or header:<name> (got %q)", r.Key)
		}
		if r.Requests < 0 {
			c.add(p+"/requests", CodeInvalidValue, "must not be negative (got %d)", r.Requests)
		}
		if r.Tokens < 0 {
			c.add(p+"/tokens", CodeInvalidValue, "must not be negative (got %d)", r.Tokens)
		}
		if r.Requests == 0 && r.Tokens == 0 {
			c.add(p, CodeMissingField, "set requests, tokens or both (per window)")
		}
		if r.Window.Duration < 0 || (r.Window.Duration > 0 && r.Window.Duration < time.Second) {
			c.add(p+"/window", CodeInvalidValue, "must be at least 1s (got %s)", r.Window.Duration)
		}
	}
}
