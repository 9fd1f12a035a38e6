package hostapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/junction-router/junction/hostapi/abi"
)

// initTimeout bounds making an instance (the reactor's initializer), which
// is slower than a handler call.
const initTimeout = 5 * time.Second

// Binding is a module with one validated configuration, and the pool of
// instances configured with it. It is safe for concurrent use.
type Binding struct {
	m      *Module
	config []byte
	limits Limits
	rt     wazero.Runtime
	c      wazero.CompiledModule

	idle    chan *instance
	slots   chan struct{} // one token per live instance
	created atomic.Int64
}

// Bind validates config against the module's schema and returns a binding
// with its own limits (zero fields take the Host's). It makes one instance
// at once (so a broken module fails here, not on a request); Warm makes more.
func (h *Host) Bind(ctx context.Context, m *Module, config []byte, lim Limits) (*Binding, error) {
	if err := m.ValidateConfig(config); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(config)) == 0 {
		config = []byte("{}")
	}
	lim = lim.withDefaultsFrom(h.cfg.Limits)
	er, c, err := m.compiled(ctx, lim.MemoryPages)
	if err != nil {
		return nil, err
	}
	b := &Binding{
		m: m, config: append([]byte(nil), config...), limits: lim, rt: er.rt, c: c,
		idle:  make(chan *instance, lim.MaxInstances),
		slots: make(chan struct{}, lim.MaxInstances),
	}
	if err := b.Warm(ctx, 1); err != nil {
		return nil, err
	}
	return b, nil
}

func (l Limits) withDefaultsFrom(d Limits) Limits {
	if l.MemoryPages == 0 {
		l.MemoryPages = d.MemoryPages
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = d.CallTimeout
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = d.MaxOutput
	}
	if l.MaxInstances <= 0 {
		l.MaxInstances = d.MaxInstances
	}
	if l.MaxHostCalls <= 0 {
		l.MaxHostCalls = d.MaxHostCalls
	}
	return l.withDefaults()
}

// Module is the binding's module.
func (b *Binding) Module() *Module { return b.m }

// Config is the binding's configuration JSON.
func (b *Binding) Config() []byte { return b.config }

// Limits are the binding's limits.
func (b *Binding) Limits() Limits { return b.limits }

// Instances is how many instances the binding has made so far (a measure of
// instantiation on the request path).
func (b *Binding) Instances() int64 { return b.created.Load() }

// Warm makes instances until n are idle (at most MaxInstances), so requests
// find them ready.
func (b *Binding) Warm(ctx context.Context, n int) error {
	n = min(n, b.limits.MaxInstances)
	var made []*instance
	defer func() {
		for _, i := range made {
			b.idle <- i
		}
	}()
	for len(b.idle)+len(made) < n {
		select {
		case b.slots <- struct{}{}:
		default:
			return nil
		}
		i, err := b.newInstance(ctx)
		if err != nil {
			<-b.slots
			return fmt.Errorf("instantiating the %s plugin: %w", b.m.desc.Type, err)
		}
		made = append(made, i)
	}
	return nil
}

func (b *Binding) newInstance(ctx context.Context) (*instance, error) {
	i, err := b.m.instantiate(ctx, b.rt, b.c, b.limits)
	if err == nil {
		b.created.Add(1)
	}
	return i, err
}

// get takes an idle instance, makes one if the binding is below its limit,
// or waits for one.
func (b *Binding) get(ctx context.Context) (*instance, error) {
	select {
	case i := <-b.idle:
		return i, nil
	default:
	}
	select {
	case i := <-b.idle:
		return i, nil
	case b.slots <- struct{}{}:
		i, err := b.newInstance(ctx)
		if err != nil {
			<-b.slots
			b.m.h.metrics.fault(b.m.desc.Type, faultKind(err))
			return nil, err
		}
		return i, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a free %s plugin instance: %w", b.m.desc.Type, ctx.Err())
	}
}

func (b *Binding) put(i *instance) { b.idle <- i }

func (b *Binding) discard(ctx context.Context, i *instance) {
	i.close(ctx)
	<-b.slots
}

// Close closes the binding's idle instances. Calls in flight finish; their
// instances are closed when they come back only if the runtime is closed.
func (b *Binding) Close(ctx context.Context) {
	for {
		select {
		case i := <-b.idle:
			b.discard(ctx, i)
		default:
			return
		}
	}
}

// CallResult is one handler call's outcome as the host saw it.
type CallResult struct {
	abi.Result
	// Mode is the mode the call ran in; BackendCalls how many backend host
	// calls it made (embed, vector_search, classify, cache_lookup);
	// Persisted whether it wrote anything that outlives the request.
	Mode         abi.Mode
	BackendCalls int
	Persisted    bool
	// Duration is the call's time, waiting for an instance included.
	Duration time.Duration
}

// ErrNoResponsePhase is returned by Call for the response phase of a module
// without one.
var ErrNoResponsePhase = errors.New("the plugin has no response phase")

// Call runs the handler of req.Phase on an instance of the binding. A fault
// discards the instance, is counted, and is returned as a *Fault; a result
// record that does not decode is a fault too. The mode comes from req.Mode
// and the host functions enforce it.
func (b *Binding) Call(ctx context.Context, req *abi.Request) (CallResult, error) {
	start := time.Now()
	res := CallResult{Mode: req.Mode}
	if _, ok := modeName(req.Mode); !ok {
		return res, fmt.Errorf("unknown mode %d", req.Mode)
	}
	if req.Phase == abi.PhaseResponse && !b.m.response {
		return res, ErrNoResponsePhase
	}
	inst, err := b.get(ctx)
	if err != nil {
		return res, err
	}
	if n := req.Size(); cap(inst.rec) < n {
		inst.rec = make([]byte, 0, n+n/4)
	}
	rec := req.Append(inst.rec[:0])
	inst.rec = rec
	st := &callState{typ: b.m.desc.Type, config: b.config, limits: &b.limits, mode: req.Mode}
	if req.Phase == abi.PhaseRequest {
		// The spans describe the request before it is sent; the response
		// phase has none (pii_spans answers unavailable), as documented.
		st.pii = req.PII
	}
	// An interruptible call runs under a context with the deadline, which
	// wazero watches. A trusted call cannot be interrupted, so it skips that
	// context's cost; the host functions it calls get the deadline instead.
	var cctx context.Context
	cancel := context.CancelFunc(func() {})
	if b.m.trusted {
		st.deadline = start.Add(b.limits.CallTimeout)
		st.parent = ctx // remote classify calls wait under it (RemoteClassifier)
		cctx = context.WithValue(ctx, stateKey{}, st)
	} else {
		cctx, cancel = context.WithTimeout(context.WithValue(ctx, stateKey{}, st), b.limits.CallTimeout)
	}
	fn := inst.exp.onRequest
	if req.Phase == abi.PhaseResponse {
		fn = inst.exp.onResponse
	}
	out, err := inst.handle(cctx, fn, rec, b.limits.MaxOutput)
	// One clock read for the deadline check and the duration: on a VM each
	// costs about 0.1 µs, a visible share of a call. The deadline counts from
	// the call's start (the record is built in a microsecond or two).
	elapsed := time.Since(start)
	// Trusted code is not interrupted; a late answer is still a fault. The
	// clock decides, not the context: its timer may not have fired yet.
	if err == nil && b.m.trusted && (elapsed-st.remote > b.limits.CallTimeout || ctx.Err() != nil) {
		if ctx.Err() == nil {
			err = &Fault{Kind: FaultDeadline, Err: fmt.Errorf("the call ran past its deadline of %v (trusted module: it could not be stopped, its answer was dropped)", b.limits.CallTimeout)}
		} else {
			err = &Fault{Kind: FaultCanceled, Err: errors.New("the request was canceled during the call")}
		}
	}
	cancel()
	res.BackendCalls, res.Persisted = st.backendCalls, st.persisted
	if err == nil {
		res.Result, err = abi.DecodeResult(out)
		if err != nil {
			err = &Fault{Kind: FaultMalformed, Err: fmt.Errorf("the result record is malformed: %w", err)}
		}
	}
	res.Duration = elapsed
	if err != nil {
		b.discard(ctx, inst)
		// A request the client gave up on is not the plugin's fault.
		if kind := faultKind(err); kind != FaultCanceled {
			b.m.h.metrics.fault(b.m.desc.Type, kind)
		}
		return res, err
	}
	b.put(inst)
	return res, nil
}

func faultKind(err error) string {
	var f *Fault
	if errors.As(err, &f) {
		return f.Kind
	}
	return "instantiate"
}

func modeName(m abi.Mode) (string, bool) {
	switch m {
	case abi.ModeLive, abi.ModeProbe, abi.ModePreview:
		return m.String(), true
	}
	return "", false
}
