package mgmt

import (
	"net"
	"net/http"
	"time"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/recipes"
)

// CodeRateLimitExceeded is document 001's answer (429) to a caller over the
// management API's rate limit.
const CodeRateLimitExceeded = "RATE_LIMIT_EXCEEDED"

// RateLimitDetails say which limit refused a call and when to come back:
// the earlier revision's details{limit, window, retry_after}.
type RateLimitDetails struct {
	Limit      int64  `json:"limit"`
	Window     string `json:"window"`
	RetryAfter int64  `json:"retry_after"`
}

// rateLimited reports whether a call of a model-running route (permission
// classify.invoke) is over global.services.management_api.rate_limit, and
// then answers it 429. Admitted calls get the X-RateLimit headers. The
// limit is read from the serving document on each call, so a change applies
// with the next request; the counters are this process's own.
func (s *Server) rateLimited(w http.ResponseWriter, r *http.Request, rt *route, p *Principal) bool {
	if rt.perm != PermClassifyInvoke {
		return false
	}
	gen := s.cfg.Runtime().Current()
	if gen == nil {
		return false
	}
	rl := gen.Document().Global.Services.ManagementAPI.RateLimit
	if rl == nil || rl.Requests < 1 {
		return false
	}
	window := rl.Window.Duration
	if window <= 0 {
		window = recipes.DefaultRateLimitWindow
	}
	key := "principal\x00" + p.Name
	if p == anonymous {
		// Without authentication every caller is "anonymous": count per
		// client address instead, so one busy script does not starve others.
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		key = "address\x00" + host
	}
	take := []ratelimit.Take{{Bucket: ratelimit.Bucket{ID: key, Capacity: rl.Requests, Window: window}, N: 1}}
	var lv [1]ratelimit.Level
	now := time.Now()
	ok, _ := s.limits.Take(r.Context(), now, take, lv[:]) // Local never fails
	st := ratelimit.Status{Name: "management_api", Dimension: "requests", Limit: rl.Requests, Remaining: lv[0].Remaining, Reset: lv[0].Full, Window: window}
	if ok {
		st.Headers(w.Header().Set)
		return false
	}
	st.RetryAfter = lv[0].Wait
	st.Headers(w.Header().Set)
	e := newErr(http.StatusTooManyRequests, CodeRateLimitExceeded,
		"the management API allows %d model-running calls per %s to each caller (global.services.management_api.rate_limit); retry after %d s",
		rl.Requests, window, st.RetryAfterSeconds())
	e.body.Error.Details = &RateLimitDetails{Limit: rl.Requests, Window: window.String(), RetryAfter: st.RetryAfterSeconds()}
	writeError(w, e)
	return true
}
