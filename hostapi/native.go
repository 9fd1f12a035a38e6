package hostapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/junction-router/junction/hostapi/abi"
)

// NativeBinding runs a plugin compiled into the router (a built-in's own Go
// code, called through sdk.HandleHost) with this host's functions: the same
// mode gate, host call budget, argument and answer sizes, deadline, backend
// counting and backends as a module's handler call gets, so a plugin behaves
// the same run natively or as a module. It is for trusted code only: a native
// plugin has no memory limit and cannot be interrupted (its deadline is
// checked when it returns, as for a trusted module, and a late answer is a
// fault). It is safe for concurrent use; each Call has its own host calls.
type NativeBinding struct {
	h      *Host
	typ    string
	config []byte
	limits Limits
}

// BindNative returns the native binding of plugin type typ with config (its
// JSON, "{}" when empty: what the config host function answers) and limits
// (zero fields take the host's; MemoryPages and MaxInstances do not apply).
// The caller checks the configuration (the plugin's factory does).
func (h *Host) BindNative(typ string, config []byte, lim Limits) *NativeBinding {
	if len(config) == 0 {
		config = []byte("{}")
	}
	return &NativeBinding{h: h, typ: typ, config: append([]byte(nil), config...), limits: lim.withDefaultsFrom(h.cfg.Limits)}
}

// HostCalls are one native handler call's host functions. Call implements
// sdk.Host; it answers unavailable once the handler call has returned.
type HostCalls struct {
	parent context.Context
	// ctx is parent with the call's state and deadline, as a module's host
	// functions get it; made at the first host call (most native plugins
	// make none) and canceled when the handler call returns.
	ctx    context.Context
	cancel context.CancelFunc
	// ctxDeadline is ctx's deadline: a remote call that moves the call's
	// deadline makes ctx anew.
	ctxDeadline time.Time
	st          *callState // &state during the handler call, nil after
	h           *Host
	state       callState // in the same allocation: one per call
}

// Call runs the host function named name (an abi.Import* name) on its
// argument record, as a module's import of it would run.
func (c *HostCalls) Call(name string, in []byte) ([]byte, abi.Status) {
	if c.st == nil {
		return nil, abi.StatusUnavailable
	}
	fn := c.h.funcs[name]
	if fn == nil {
		return nil, abi.StatusUnavailable
	}
	if st := admit(c.st, len(in)); st != abi.StatusOK {
		return nil, st
	}
	return run(c.context(), c.st, fn, in)
}

// context is the context host functions run under (ctx, made on first use).
func (c *HostCalls) context() context.Context {
	if c.ctx == nil || !c.ctxDeadline.Equal(c.st.deadline) {
		// First use, or a remote call moved the deadline back.
		if c.cancel != nil {
			c.cancel()
		}
		c.ctx, c.cancel = context.WithDeadline(context.WithValue(c.parent, stateKey{}, c.st), c.st.deadline)
		c.ctxDeadline = c.st.deadline
	}
	return c.ctx
}

// EmbedVector is Call(abi.ImportEmbed, …) with its argument and answer as
// Go values (sdk.VectorHost): the same budget, sizes, deadline, mode gate
// and backend as the record call, without encoding the text or the
// vector. An embedding is the largest thing most plugins move (4 KiB at
// 1,024 dims), and natively a record of it would be written and read only
// to be copied.
func (c *HostCalls) EmbedVector(text string) ([]float32, abi.Status) {
	if c.st == nil {
		return nil, abi.StatusUnavailable
	}
	if st := admit(c.st, 4+len(text)); st != abi.StatusOK {
		return nil, st
	}
	v, st := c.h.embed(c.context(), c.st, text)
	if st != abi.StatusOK {
		return nil, st
	}
	if 4+4*len(v) > c.st.limits.MaxOutput {
		return nil, abi.StatusLimit
	}
	return slices.Clone(v), abi.StatusOK
}

// CacheLookupVector is Call(abi.ImportCacheLookup, …) with its argument
// and answer as Go values (sdk.VectorHost), as EmbedVector is embed's. The
// entry's value may be the cache's own: the caller copies it.
func (c *HostCalls) CacheLookupVector(a *abi.CacheLookupArgs) (abi.CacheEntry, abi.Status) {
	if c.st == nil {
		return abi.CacheEntry{}, abi.StatusUnavailable
	}
	if st := admit(c.st, 16+len(a.Namespace)+len(a.Key)+4*len(a.Embedding)); st != abi.StatusOK {
		return abi.CacheEntry{}, st
	}
	e, st := c.h.cacheLookup(c.context(), c.st, a)
	if st != abi.StatusOK {
		return abi.CacheEntry{}, st
	}
	if 8+len(e.Value) > c.st.limits.MaxOutput {
		return abi.CacheEntry{}, abi.StatusLimit
	}
	return e, abi.StatusOK
}

// Call runs one handler call of req's phase: handle runs the plugin on req
// with the call's host functions and returns its result. The outcome is
// reported as Binding.Call reports a trusted module's: a late answer or a
// canceled request is a *Fault (counted, except cancellations), a result
// record larger than MaxOutput is an output fault.
func (b *NativeBinding) Call(ctx context.Context, req *abi.Request, handle func(*HostCalls) abi.Result) (CallResult, error) {
	start := time.Now()
	res := CallResult{Mode: req.Mode}
	if _, ok := modeName(req.Mode); !ok {
		return res, fmt.Errorf("unknown mode %d", req.Mode)
	}
	calls := &HostCalls{parent: ctx, h: b.h}
	st := &calls.state
	*st = callState{typ: b.typ, config: b.config, limits: &b.limits, mode: req.Mode, deadline: start.Add(b.limits.CallTimeout), parent: ctx}
	if req.Phase == abi.PhaseRequest {
		st.pii = req.PII // as Binding.Call: the response phase has no spans
	}
	calls.st = st
	r := handle(calls)
	calls.st = nil
	if calls.cancel != nil {
		calls.cancel()
	}
	elapsed := time.Since(start)
	res.BackendCalls, res.Persisted, res.Duration = st.backendCalls, st.persisted, elapsed
	var err error
	switch {
	case ctx.Err() != nil:
		err = &Fault{Kind: FaultCanceled, Err: errors.New("the request was canceled during the call")}
	case elapsed-st.remote > b.limits.CallTimeout: // remote waits had their own bound
		err = &Fault{Kind: FaultDeadline, Err: fmt.Errorf("the call ran past its deadline of %v (native plugin: it could not be stopped, its answer was dropped)", b.limits.CallTimeout)}
	case r.Size() > b.limits.MaxOutput:
		err = &Fault{Kind: FaultOutput, Err: fmt.Errorf("the plugin returned %d bytes, more than the limit of %d", r.Size(), b.limits.MaxOutput)}
	}
	if err != nil {
		if kind := faultKind(err); kind != FaultCanceled {
			b.h.metrics.fault(b.typ, kind)
		}
		return res, err
	}
	res.Result = r
	return res, nil
}
