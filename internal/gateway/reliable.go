package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/recipes"
)

// This file is the attempt loop of a decision with an active reliability
// policy (recipes.Policy.Active): retries on the same backend with a
// jittered back-off (or the backend's Retry-After), the policy's timeouts,
// and fallback over the decision's candidates. A request whose decision has
// no policy takes forward's single attempt instead, untouched.
//
// An attempt is committed once its answer starts going to the client: a
// non-streamed answer when its whole body was read, a stream when its first
// event arrived. Until then it can fail and be retried or failed over; after
// that a failure ends the stream with an error event, as without a policy.

// upstreamTimeoutError is the cancellation cause of a timed-out upstream
// call: which bound it was and how long. It is errUpstreamTimeout for
// errors.Is.
type upstreamTimeoutError struct {
	what string
	d    time.Duration
}

func (e *upstreamTimeoutError) Error() string { return e.what + " of " + e.d.String() + " exceeded" }
func (e *upstreamTimeoutError) Is(target error) bool {
	return target == errUpstreamTimeout
}

// timeoutOf is the duration of the timeout that cancelled ctx, else d.
func timeoutOf(ctx context.Context, d time.Duration) time.Duration {
	var te *upstreamTimeoutError
	if errors.As(context.Cause(ctx), &te) {
		return te.d
	}
	return d
}

// candidate is one backend a request may be sent to: a model of the
// decision (ref, as the decision configured it) and one of its backend_refs.
type candidate struct {
	ref     recipes.ModelRef
	model   *recipes.Model
	backend *recipes.BackendRef
}

// plan lists the candidates in the order they are tried: the selected
// model's backend_refs (preferred_endpoints first), then, with fallback
// enabled, the decision's other modelRefs in order, each over its
// backend_refs. Backends passive health has ejected are left out unless
// that leaves nothing. Without fallback only the first is kept;
// fallback.max_attempts cuts the list.
func (x *exchange) plan(c *upstreamCall, p *recipes.Policy) []candidate {
	candidates := x.gen.Candidates(x.dp.Out.Result)
	first := recipes.ModelRef{Model: c.model.Name}
	for _, r := range candidates {
		if r.Model == c.model.Name {
			first = r
			break
		}
	}
	refs := []recipes.ModelRef{first}
	if p.FallbackEnabled {
		for _, r := range candidates {
			dup := false
			for _, have := range refs {
				dup = dup || have.Model == r.Model
			}
			if !dup {
				refs = append(refs, r)
			}
		}
	}
	var all []candidate
	for _, r := range refs {
		m := c.model
		if r.Model != m.Name {
			var ok bool
			if m, ok = x.gen.Model(r.Model); !ok {
				continue
			}
		}
		x.s.ups.health.learn(m)
		for _, b := range orderBackends(m, p.PreferredEndpoints) {
			all = append(all, candidate{ref: r, model: m, backend: b})
		}
	}
	healthy := make([]candidate, 0, len(all))
	for _, cd := range all {
		if x.s.ups.health.BackendHealthy(backendKey(cd.backend)) {
			healthy = append(healthy, cd)
		}
	}
	if len(healthy) > 0 {
		all = healthy
	}
	if !p.FallbackEnabled && len(all) > 1 {
		all = all[:1]
	}
	if n := p.FallbackMaxAttempts; n > 0 && len(all) > n {
		all = all[:n]
	}
	return all
}

// orderBackends is m's backend_refs with the preferred endpoints first (in
// preferred_endpoints order), the rest in configuration order.
func orderBackends(m *recipes.Model, preferred []string) []*recipes.BackendRef {
	out := make([]*recipes.BackendRef, 0, len(m.BackendRefs))
	taken := make([]bool, len(m.BackendRefs))
	for _, e := range preferred {
		for i := range m.BackendRefs {
			if !taken[i] && recipes.PreferredEndpoint(&m.BackendRefs[i], e) {
				taken[i] = true
				out = append(out, &m.BackendRefs[i])
			}
		}
	}
	for i := range m.BackendRefs {
		if !taken[i] {
			out = append(out, &m.BackendRefs[i])
		}
	}
	return out
}

// attemptFailure is an attempt that failed before it committed: an error
// status (resp, its body unread) or a call that broke (err, with its
// context's cause).
type attemptFailure struct {
	resp    *http.Response
	err     error
	timeout bool // a timeout of the attempt, the candidate or the sequence
	connect bool // the connection could not be made
	// cancel ends the attempt's context and timers; close calls it.
	cancel func()
	// model and key are the attempt's model and backend (the call may have
	// moved on to another candidate when the failure is counted).
	model, key string
}

func (f *attemptFailure) close() {
	if f.resp != nil {
		// A little of the body lets the connection be reused; a large one
		// is not worth reading.
		_, _ = io.CopyN(io.Discard, f.resp.Body, 4<<10)
		f.resp.Body.Close()
	}
	f.cancel()
}

// reason is the llm_request_errors_total reason of the failure.
func (f *attemptFailure) reason() string {
	switch {
	case f.resp != nil:
		return dataplane.StatusReason(f.resp.StatusCode)
	case f.timeout:
		return metrics.ReasonTimeout
	}
	return metrics.ReasonUpstream5xx
}

// serverFault reports whether the failure counts against the backend's
// health (as forward counts it: 5xx, timeouts, connection failures).
func (f *attemptFailure) serverFault() bool { return f.resp == nil || f.resp.StatusCode >= 500 }

// retriable reports whether the policy retries the failure on the same
// backend.
func (f *attemptFailure) retriable(p *recipes.Policy) bool {
	switch {
	case f.resp != nil:
		return p.RetriesStatus(f.resp.StatusCode)
	case f.connect:
		return p.RetriesConnect()
	}
	return p.RetriesReset()
}

// fallsBack reports whether the failure moves on to the next candidate.
func (f *attemptFailure) fallsBack(p *recipes.Policy) bool {
	if !p.FallbackEnabled {
		return false
	}
	if f.resp != nil {
		return p.FallsBackOn(f.resp.StatusCode)
	}
	return true
}

// retryAfter is the wait a 429 or 503 asks for in Retry-After (seconds or
// an HTTP date); ok is false when there is none.
func (f *attemptFailure) retryAfter(now time.Time) (time.Duration, bool) {
	if f.resp == nil || (f.resp.StatusCode != http.StatusTooManyRequests && f.resp.StatusCode != http.StatusServiceUnavailable) {
		return 0, false
	}
	v := f.resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// backOff is the wait before retry number n (0 for the first retry): a
// Retry-After within retry_after_max, else a draw from [0, min(max,
// base·2ⁿ)]. ok is false when the backend asked for longer than
// retry_after_max: no more retries there.
func backOff(p *recipes.Policy, n int, f *attemptFailure) (time.Duration, bool) {
	if p.RetryAfterMax > 0 {
		if ra, ok := f.retryAfter(time.Now()); ok {
			if ra > p.RetryAfterMax {
				return 0, false
			}
			return ra, true
		}
	}
	ceil := p.RetryBackOffBase << min(n, 30)
	if ceil > p.RetryBackOffMax || ceil <= 0 {
		ceil = p.RetryBackOffMax
	}
	if ceil <= 0 {
		return 0, true
	}
	return rand.N(ceil + 1), true
}

// forwardReliably is forward under the decision's policy p.
func (x *exchange) forwardReliably(rt *dataplane.Routing, call *upstreamCall, p *recipes.Policy) {
	// The attempts keep the call beyond a stack frame (their cleanup
	// closures): work on a copy so that forward's call, on the path without
	// a policy, stays on the stack.
	cc := *call
	c := &cc
	ctx, cancel := context.WithCancelCause(x.r.Context())
	defer cancel(nil)
	if p.TotalTimeout > 0 {
		t := time.AfterFunc(p.TotalTimeout, func() { cancel(&upstreamTimeoutError{"total_timeout", p.TotalTimeout}) })
		defer t.Stop()
	}
	plan := x.plan(c, p)
	seqStart := time.Now()
	attempts := 0
	var last *attemptFailure
	defer func() {
		if last != nil {
			last.close()
		}
	}()
	for i, cd := range plan {
		if cd.backend != c.ref || cd.model != c.model {
			if !x.retarget(c, cd) {
				continue
			}
		}
		candStart := time.Now()
		for try := 0; ; try++ {
			deadline := preCommitDeadline(p, seqStart, candStart)
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				break
			}
			if last != nil {
				x.attemptFailed(last)
				last.close()
				last = nil
			}
			attempts++
			x.dp.Attempted(attempts)
			f := x.attempt(ctx, rt, c, p, deadline)
			if f == nil {
				return // committed: the answer went to the client
			}
			last = f
			if x.r.Context().Err() != nil {
				x.clientGone()
				return
			}
			if ctx.Err() != nil || try >= p.RetryCount || !f.retriable(p) {
				break
			}
			wait, ok := backOff(p, try, f)
			if !ok || !sleepUntil(ctx, wait, deadline) {
				break
			}
		}
		if last == nil || i == len(plan)-1 || ctx.Err() != nil || !last.fallsBack(p) {
			break
		}
		if p.FallbackTotalTimeout > 0 && time.Since(seqStart) >= p.FallbackTotalTimeout {
			break
		}
	}
	if x.r.Context().Err() != nil {
		x.clientGone()
		return
	}
	if last == nil {
		// Every candidate was left out before an attempt (misconfigured
		// backends); retarget said why.
		x.fail(rt, metrics.ReasonUpstream5xx, dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream,
			fmt.Sprintf("no backend of the decision's models could be tried for model %q", c.model.Name)))
		return
	}
	// The last failure is the answer, counted as forward counts it.
	f := last
	last = nil
	defer f.cancel()
	if f.resp != nil {
		defer f.resp.Body.Close()
		x.relayError(rt, c, f.resp)
		return
	}
	x.upstreamFailed(rt, c, f.err)
}

// attemptFailed counts a failed attempt that is not the answer: its error
// and, for a server fault, its backend's health.
func (x *exchange) attemptFailed(f *attemptFailure) {
	x.dp.AttemptFailed(f.model, f.reason())
	if f.serverFault() {
		x.s.ups.health.Failure(f.key)
	} else {
		x.s.ups.health.Success(f.key)
	}
}

// retarget points c at candidate cd, rewriting the request for it; false
// when cd cannot be tried.
func (x *exchange) retarget(c *upstreamCall, cd candidate) bool {
	t := x.s.ups.target(cd.backend, cd.model.APIFormat)
	if t.err != nil {
		x.s.log.Error("fallback candidate skipped", "request_id", x.id, "model", cd.model.Name, "error", t.err.Error())
		return false
	}
	if err := x.dp.Retarget(cd.ref, cd.model, cd.backend, t.url); err != nil {
		x.s.log.Error("fallback candidate skipped", "request_id", x.id, "model", cd.model.Name, "error", err.Error())
		return false
	}
	out := &x.dp.Out
	c.model, c.ref, c.key = cd.model, cd.backend, backendKey(cd.backend)
	c.target, c.reqURL = t.url, t.req
	c.header, c.body = out.Header, out.Body
	c.timeout = upstreamTimeout(cd.backend, x.listener)
	return true
}

// preCommitDeadline is when the current attempt must have committed: the
// earliest of the candidate's per_attempt_timeout and the sequence's
// fallback total_timeout (zero: none). per_try_timeout is added per
// attempt.
func preCommitDeadline(p *recipes.Policy, seqStart, candStart time.Time) time.Time {
	var d time.Time
	if p.FallbackPerAttemptTimeout > 0 {
		d = candStart.Add(p.FallbackPerAttemptTimeout)
	}
	if p.FallbackTotalTimeout > 0 {
		if t := seqStart.Add(p.FallbackTotalTimeout); d.IsZero() || t.Before(d) {
			d = t
		}
	}
	return d
}

// sleepUntil waits d unless ctx ends or the wait would pass deadline.
func sleepUntil(ctx context.Context, d time.Duration, deadline time.Time) bool {
	if !deadline.IsZero() && time.Now().Add(d).After(deadline) {
		return false
	}
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// attempt makes one upstream call for c. It returns nil once the answer
// committed and went to the client (the request is then answered), or the
// failure, with its response open for the caller to relay or close.
func (x *exchange) attempt(parent context.Context, rt *dataplane.Routing, c *upstreamCall, p *recipes.Policy, deadline time.Time) *attemptFailure {
	ctx, cancel := context.WithCancelCause(parent)
	c.ctx = ctx
	firstByte, idle := c.timeout, c.timeout
	if p.FirstByteTimeout > 0 {
		firstByte = p.FirstByteTimeout
	}
	if p.IdleTimeout > 0 {
		idle = p.IdleTimeout
	}
	c.timer = time.AfterFunc(firstByte, func() { cancel(&upstreamTimeoutError{"first_byte_timeout", firstByte}) })
	// pre bounds the attempt until it commits: per_try_timeout, the
	// candidate's and the sequence's deadlines.
	var pre *time.Timer
	preAt, why := deadline, &upstreamTimeoutError{"fallback deadline", time.Until(deadline).Round(time.Millisecond)}
	if p.PerTryTimeout > 0 {
		if t := time.Now().Add(p.PerTryTimeout); preAt.IsZero() || t.Before(preAt) {
			preAt, why = t, &upstreamTimeoutError{"per_try_timeout", p.PerTryTimeout}
		}
	}
	if !preAt.IsZero() {
		pre = time.AfterFunc(time.Until(preAt), func() { cancel(why) })
	}
	stop := func() {
		c.timer.Stop()
		if pre != nil {
			pre.Stop()
		}
		cancel(nil)
	}
	// Each attempt is a "chat {model}" span (trace.go), ended when it fails
	// or once its answer was relayed.
	rctx, span := x.startUpstreamSpan(ctx, c)
	fail := func(resp *http.Response, err error) *attemptFailure {
		f := &attemptFailure{resp: resp, err: err, cancel: stop, model: c.model.Name, key: c.key}
		if resp == nil {
			f.timeout = errors.Is(context.Cause(ctx), errUpstreamTimeout)
			f.connect = !f.timeout && isConnectError(err)
		}
		if span != nil {
			status, errType := 0, "error"
			switch {
			case resp != nil:
				status, errType = resp.StatusCode, ""
			case f.timeout:
				errType = "timeout"
			case f.connect:
				errType = "unreachable"
			case ctx.Err() != nil:
				errType = "cancelled"
			}
			x.dp.EndModelSpan(span, status, errType)
		}
		return f
	}

	req := newUpstreamRequest(rctx, c.reqURL, c.header, c.body)
	x.dp.Forwarded()
	resp, err := x.s.ups.transport(c.ref).RoundTrip(req)
	if err != nil {
		return fail(nil, err)
	}
	if resp.StatusCode >= 400 {
		return fail(resp, nil)
	}
	c.timer.Reset(idle) // the status line came: from here on the timeout bounds gaps
	c.timeout = idle
	if c.stream && isEventStream(resp.Header) {
		events := newStreamEvents(resp.Body)
		if err := events.readAhead(); err != nil {
			resp.Body.Close()
			if err == io.EOF {
				err = errors.New("the stream ended before its first event")
			}
			return fail(nil, err)
		}
		if pre != nil {
			pre.Stop()
		}
		x.s.ups.health.Success(c.key)
		defer stop()
		if span != nil { // before stop cancels ctx
			defer func() { x.dp.EndModelSpan(span, resp.StatusCode, upstreamErrorType(ctx)) }()
		}
		defer resp.Body.Close()
		x.relayStreamFrom(rt, c, resp, &events)
		return nil
	}
	buf := getAnswerBuffer()
	defer putAnswerBuffer(buf)
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxUpstreamBody+1))
	resp.Body.Close()
	if err != nil {
		return fail(nil, err)
	}
	if pre != nil {
		pre.Stop()
	}
	x.s.ups.health.Success(c.key)
	defer stop()
	if span != nil { // before stop cancels ctx
		defer func() { x.dp.EndModelSpan(span, resp.StatusCode, upstreamErrorType(ctx)) }()
	}
	x.writeJSON(rt, c, resp, buf.Bytes())
	return nil
}

// isConnectError reports whether err is a failure to connect (nothing was
// sent).
func isConnectError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
