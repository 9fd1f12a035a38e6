package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/ratelimit"
)

// TypeRateLimit is the error type of a request over a rate limit.
const TypeRateLimit = "rate_limit_error"

// RateLimitDetails is the earlier-revision rate-limit detail: the limit
// (requests or tokens per window), the window and the seconds to wait.
type RateLimitDetails struct {
	Limit      int64  `json:"limit"`
	Window     string `json:"window"`
	RetryAfter int64  `json:"retry_after"`
}

// admit counts a routed request against global.rate_limits (nothing to do,
// and nothing allocated, when there are none). A refused request is
// answered 429 here; an admitted one keeps its admission for the answer's
// headers and for settling tokens from usage.
//
// On a shared store (Redis) with plugins to run, the take is held back
// instead (out.pending; ok is true): the returned context carries it to
// the plugin stage, whose first read from Redis (the response cache's
// lookup) sends it in the same round trip, and it gates the stage's
// effects (hostapi.WithEffectGate: a store, a remote classification, a log
// line wait for the verdict); resolve concludes it at the end of the stage
// at the latest, before anything is answered or forwarded.
func (p *Plane) admit(ctx context.Context, in *Request, out *Outcome, req *chat.Request, res *engine.Result, label string) (context.Context, bool) {
	doc := in.Gen.Document()
	if p.limiter == nil || len(doc.Global.RateLimits) == 0 {
		return ctx, true
	}
	client := in.ClientHeader
	if client == nil {
		client = in.Header
	}
	rl := &ratelimit.Request{
		APIKey:   clientKey(client),
		User:     jsonString(req.Fields["user"]),
		Model:    res.Model,
		Decision: res.Decision,
		Header:   client.Get,
		Tokens:   ratelimit.Estimate(promptBytes(req), maxCompletion(req)),
	}
	if len(res.Plugins) > 0 && p.plugins != nil {
		if pend, carry := p.limiter.Defer(ctx, doc, rl); pend != nil {
			out.pending = pend
			return hostapi.WithEffectGate(carry, func() bool { _, err := pend.Resolve(); return err == nil }), true
		}
	}
	a, err := p.limiter.Admit(ctx, doc, rl)
	return ctx, p.admitted(in, out, label, a, err)
}

// resolve concludes a held-back take (admit), once: false when the request
// is refused (answered, as admit answers it) or its client went away before
// the take was sent (nothing was taken; the request is cancelled).
func (p *Plane) resolve(ctx context.Context, in *Request, out *Outcome, label string) bool {
	pend := out.pending
	if pend == nil {
		return true
	}
	out.pending = nil
	a, err := pend.Resolve()
	if err != nil && ctx.Err() != nil {
		p.cancelled(out, label)
		return false
	}
	return p.admitted(in, out, label, a, err)
}

// admitted is the outcome of a take: the admission kept, or the refusal
// answered (429; 503 when the limits cannot be checked at all).
func (p *Plane) admitted(in *Request, out *Outcome, label string, a ratelimit.Admission, err error) bool {
	if err != nil {
		var r *ratelimit.Refusal
		if !asRefusal(err, &r) {
			// The shared store is unreachable: fail closed, saying so.
			p.fail(in, out, label, "unknown", NewError(http.StatusServiceUnavailable, TypeServer,
				"the rate limits cannot be checked: "+err.Error()))
			return false
		}
		out.Routing.Processing = time.Since(in.Start)
		h := p.idHeader(in)
		out.Routing.SetClientHeaders(h)
		r.Headers(h.Set)
		e := NewError(http.StatusTooManyRequests, TypeRateLimit,
			fmt.Sprintf("rate limit %q exceeded: %d %s per %s; retry after %d s", r.Name, r.Limit, r.Dimension, r.Window, r.RetryAfterSeconds())).WithCode("too_many_requests")
		e.Details = &RateLimitDetails{Limit: r.Limit, Window: r.Window.String(), RetryAfter: r.RetryAfterSeconds()}
		out.Answer = ErrorAnswer(e, h)
		return false
	}
	out.Routing.RateLimit = a.Tightest
	out.admission = a
	return true
}

func asRefusal(err error, r **ratelimit.Refusal) bool {
	v, ok := err.(*ratelimit.Refusal)
	*r = v
	return ok
}

// clientKey is the credential the client sent: a bearer token, else
// x-api-key or api-key.
func clientKey(h http.Header) string {
	if v := h.Get("Authorization"); v != "" {
		if k, ok := strings.CutPrefix(v, "Bearer "); ok {
			return k
		}
		if k, ok := strings.CutPrefix(v, "bearer "); ok {
			return k
		}
		return v
	}
	if v := h.Get("X-Api-Key"); v != "" {
		return v
	}
	return h.Get("Api-Key")
}

func jsonString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func promptBytes(req *chat.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	return n
}

// maxCompletion is the completion the request allows itself.
func maxCompletion(req *chat.Request) int64 {
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		var n int64
		if raw, ok := req.Fields[k]; ok && json.Unmarshal(raw, &n) == nil && n > 0 {
			return n
		}
	}
	return 0
}
