package extproc

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
)

// Body send modes, shorter.
const (
	modeNone       = filterv3.ProcessingMode_NONE
	modeStreamed   = filterv3.ProcessingMode_STREAMED
	modeBuffered   = filterv3.ProcessingMode_BUFFERED
	modePartial    = filterv3.ProcessingMode_BUFFERED_PARTIAL
	modeFullDuplex = filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
)

// phase is where a stream's request is.
type phase uint8

const (
	// phaseStart: nothing received yet.
	phaseStart phase = iota
	// phaseRequestBody: the request headers were seen; the body is being
	// collected.
	phaseRequestBody
	// phaseForwarded: the request went upstream; its answer has not begun.
	phaseForwarded
	// phaseResponseBody: the answer's headers were seen; its body is arriving.
	phaseResponseBody
	// phaseDone: answered by Junction, or the answer is complete.
	phaseDone
	// phasePassthrough: not a request Junction handles (another path); every
	// message is let through unchanged.
	phasePassthrough
)

var phaseNames = [...]string{"start", "request_body", "forwarded", "response_body", "done", "passthrough"}

// exchange is one stream: one HTTP request, its answer and its metrics.
type exchange struct {
	s      *Server
	stream extprocv3.ExternalProcessor_ProcessServer
	ctx    context.Context
	start  time.Time
	end    time.Time
	phase  phase
	seen   bool
	proto  *extprocv3.ProtocolConfiguration
	// observe: Envoy runs the filter in observability mode and ignores
	// answers, so none are sent.
	observe bool
	// wire: the stream is one of NewGRPCServer's (its tap made the
	// context), whose codec sends a reply's bytes as they are (sendReply).
	wire bool

	id        string
	endpoint  string
	gen       *engine.Generation
	reqHeader http.Header // the request's headers as Envoy holds them
	// headerVals holds reqHeader's values as received when they fit (a
	// request's dozen headers, pseudo-headers included).
	headerVals [12]string
	path       string // :path as Envoy holds it

	// The request body.
	early        mutation // header changes made before the body is seen
	deferHeaders bool     // the headers' answer waits for the body
	body         []byte
	chunks       int // body messages received
	replied      int // body messages answered
	bodyDeadline time.Time

	// dp is the request in the data plane: the request phase's outcome,
	// translation, usage, metrics and the response phase. What stays here is
	// Envoy's side: its message order, body modes and mutations.
	dp dataplane.Exchange

	// The answer.
	status     int
	sse        bool
	rewriteSSE bool
	scan       dataplane.EventScanner
	scanOff    bool
	respBuf    []byte
	respPieces int
	respTooBig bool
	respHeld   bool // full duplex: the pieces so far are held, not yet answered
	// held: a response check holds the stream until it is checked
	// (held.go); heldHeaders: its headers were answered with the override
	// that makes Envoy hold them. gateStatus: the status of the error a
	// response check answered instead of a JSON answer.
	held, heldHeaders bool
	gateStatus        int

	// responsesAPI marks a POST /v1/responses (translated by dp). The
	// answer of a translated request changes shape: a 2xx JSON answer is
	// held until complete (holdJSON), a Messages API error read whole
	// (errBody).
	responsesAPI bool
	holdJSON     bool
	errBody      bool

	mu       sync.Mutex // held by whichever goroutine works on the exchange
	timer    *time.Timer
	deadline time.Time // when the current wait ends
	fireAt   time.Time // when the timer is set to fire (at deadline or before); zero: not set
	closed   bool      // the time bound ended the stream; the worker must stop
	cut      bool      // the idle bound ended the stream's context
	endErr   error     // what the stream ends with when cut
	cancel   func()    // ends the stream's context (streamCtx.end)

	complete  bool // nothing more is needed: answered, or the answer ended
	quiet     bool // messages after complete are expected (an override Envoy may ignore)
	cancelled bool // the request was cancelled and counted as such
	recorded  bool

	replies replySlots // the first reply of each kind (replies.go)
	// answerMuts are the header changes of the answer's headers reply and
	// of the reply to its whole body (the first of each: answerMutation):
	// a reply keeps its mutation, so a function's own would be allocated.
	answerMuts [2]mutation
	answerUsed uint8 // bit i: answerMuts[i] was handed out

	// Tracing (trace.go): nil spans when it is off.
	span, modelSpan trace.Span
	phaseTimes      [msgKinds]spanTimes
}

func (s *Server) newExchange(stream extprocv3.ExternalProcessor_ProcessServer) *exchange {
	start := time.Now()
	return &exchange{
		s: s, stream: stream, ctx: stream.Context(), start: start,
		endpoint: dataplane.EndpointOther, dp: s.plane.NewExchange(start),
	}
}

// serve runs the stream on the handler's goroutine: messages are received
// and answered there (receiving and answering on one goroutine keeps a
// message's round trip free of handoffs). The time bounds, the body's
// deadline (answered 408) and the idle bound (the stream is ended), are a
// timer whose callback takes mu like the handler does; to end the stream it
// ends the stream's context (streamCtx, made by the tap NewGRPCServer
// installs), which unblocks Recv: gRPC then ends the stream with
// DEADLINE_EXCEEDED. No goroutine watches the stream. A Server registered
// on a grpc.Server without the tap gets the slower path, serveWatched.
func (x *exchange) serve() error {
	sc, _ := x.ctx.Value(streamCtxKey{}).(*streamCtx)
	if sc == nil {
		return x.serveWatched()
	}
	x.cancel = sc.end
	x.wire = true
	x.mu.Lock()
	x.arm()
	x.mu.Unlock()
	defer x.timer.Stop()
	err := x.work()
	x.mu.Lock()
	if x.cut {
		err = x.endErr
	}
	x.closed = true // a callback already under way does nothing
	x.mu.Unlock()
	return err
}

// expire is the timer's callback: the current wait is over, unless a
// message moved its deadline on meanwhile (the timer is then set again).
func (x *exchange) expire() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.fireAt = time.Time{} // it fired: not set any more
	if x.closed {
		return
	}
	if now := time.Now(); now.Before(x.deadline) {
		x.rearm(now) // a message moved the deadline on meanwhile
		return
	}
	err, end := x.timedOut()
	if !end {
		x.arm()
		return
	}
	x.closed, x.cut, x.endErr = true, true, err
	x.cancel() // Recv returns; serve returns endErr
}

// serveWatched runs the stream for a Server on a grpc.Server without
// streamTap: the stream's context cannot be cancelled from here, so the
// messages are handled on a second goroutine and this one watches the
// time, returning (which ends the stream) when the idle bound is reached.
func (x *exchange) serveWatched() error {
	x.timer = time.NewTimer(x.s.opts.IdleTimeout)
	x.fireAt = time.Now().Add(x.s.opts.IdleTimeout)
	defer x.timer.Stop()
	x.mu.Lock()
	x.arm()
	x.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- x.work() }()
	for {
		select {
		case err := <-done:
			return err
		case <-x.timer.C:
			x.mu.Lock()
			x.fireAt = time.Time{} // it fired: not set any more
			if now := time.Now(); now.Before(x.deadline) {
				x.rearm(now) // a message moved the deadline on meanwhile
				x.mu.Unlock()
				continue
			}
			err, end := x.timedOut()
			if end {
				x.closed = true
			} else {
				x.arm()
			}
			x.mu.Unlock()
			if end {
				return err
			}
		}
	}
}

// work receives and answers messages until the stream ends.
func (x *exchange) work() error {
	for {
		req, rerr := x.stream.Recv()
		x.mu.Lock()
		if x.closed || rerr != nil {
			// io.EOF: Envoy closed its side; anything else: the stream was
			// reset (the client went away) or the connection failed. Either
			// way there is nobody to answer; finish tells them apart.
			x.mu.Unlock()
			return nil
		}
		x.seen = true
		err := x.handleSafely(req)
		x.arm()
		x.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// handleSafely handles one message, turning a panic into the end of the
// stream (Envoy answers 500) and an unknown error, so one bad request
// cannot take the server down.
func (x *exchange) handleSafely(req *extprocv3.ProcessingRequest) (err error) {
	defer func() {
		if p := recover(); p != nil {
			// A panic after routing (dataplane.RoutedPanic) is labelled with
			// the decision: dp took it before the panic.
			x.s.log.Error("panic serving ext_proc stream", "request_id", x.id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			x.failed(metrics.ReasonUnknown)
			err = status.Errorf(codes.Internal, "internal error while processing the request (request id %s)", x.id)
		}
	}()
	return x.handle(req)
}

// arm sets the timer for the current wait: the body's deadline while the
// body is awaited, the idle bound otherwise. Called with mu held, after
// every message. The timer is only reset when the wait ends sooner than it
// is set to fire; a later deadline (the idle bound moving on with each
// message) is left to the expiry, which re-arms for what remains: one timer
// reset per stream instead of one per message.
func (x *exchange) arm() {
	now := time.Now()
	if x.phase == phaseRequestBody {
		x.deadline = x.bodyDeadline
	} else {
		x.deadline = now.Add(x.s.opts.IdleTimeout)
	}
	if x.timer == nil {
		x.fireAt = x.deadline
		x.timer = time.AfterFunc(x.deadline.Sub(now), x.expire)
		return
	}
	if x.fireAt.IsZero() || x.deadline.Before(x.fireAt) {
		x.rearm(now)
	}
}

// rearm sets the timer to fire at the deadline. Called with mu held.
func (x *exchange) rearm(now time.Time) {
	x.fireAt = x.deadline
	x.timer.Reset(x.deadline.Sub(now))
}

func (x *exchange) handle(req *extprocv3.ProcessingRequest) error {
	if x.s.opts.Tracer == nil {
		return x.dispatch(req)
	}
	from := time.Now()
	err := x.dispatch(req)
	if x.span != nil {
		x.notePhase(messageKind(req), from, time.Now())
	}
	return err
}

func (x *exchange) dispatch(req *extprocv3.ProcessingRequest) error {
	if pc := req.GetProtocolConfig(); pc != nil && x.proto == nil {
		x.proto = pc
	}
	x.observe = req.GetObservabilityMode()
	switch r := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return x.requestHeaders(r.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		return x.requestBody(r.RequestBody)
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return x.requestTrailers()
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return x.responseHeaders(r.ResponseHeaders)
	case *extprocv3.ProcessingRequest_ResponseBody:
		return x.responseBody(r.ResponseBody)
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return x.responseTrailers()
	}
	// A message without a request (flow control only) or of a kind this
	// server does not know: there is nothing to answer.
	x.stray("empty")
	return nil
}

// timedOut handles the expiry of the current wait; end says the stream is
// to be ended with err.
func (x *exchange) timedOut() (err error, end bool) {
	switch x.phase {
	case phaseRequestBody:
		x.dp.Error(metrics.ReasonTimeout)
		e := dataplane.NewError(http.StatusRequestTimeout, dataplane.TypeInvalidRequest,
			fmt.Sprintf("the request body did not arrive within %s", x.s.opts.BodyTimeout)).WithCode("request_timeout")
		return x.answer(dataplane.ErrorAnswer(e, x.idHeader())), false
	case phaseForwarded, phaseResponseBody:
		x.dp.Error(metrics.ReasonTimeout)
		x.status = http.StatusGatewayTimeout
		x.markComplete()
		x.s.log.Warn("ext_proc stream idle", "request_id", x.id, "phase", phaseNames[x.phase], "idle", x.s.opts.IdleTimeout)
		return status.Errorf(codes.DeadlineExceeded, "junction ext_proc: no message from Envoy for %s while the request was %s",
			x.s.opts.IdleTimeout, phaseNames[x.phase]), true
	}
	return nil, true
}

// ---- accounting ----------------------------------------------------------------

func (x *exchange) markComplete() {
	if !x.complete {
		x.complete = true
		x.end = time.Now()
	}
}

// stray counts a message that arrived where it was not expected but can be
// answered safely.
func (x *exchange) stray(message string) {
	x.s.unexpected.WithLabelValues(message, "ignored").Inc()
	x.s.log.Debug("unexpected ext_proc message, let through", "request_id", x.id, "message", message, "phase", phaseNames[x.phase])
}

// protocolError ends the stream on a message that cannot be answered
// without risking an unrouted request reaching a backend. Envoy then fails
// the request (or, with failure_mode_allow, lets it through: the operator's
// explicit choice).
func (x *exchange) protocolError(message, detail string) error {
	x.s.unexpected.WithLabelValues(message, "rejected").Inc()
	x.s.log.Warn("ext_proc protocol violation: ending the stream", "request_id", x.id, "message", message,
		"phase", phaseNames[x.phase], "detail", detail)
	x.failed(metrics.ReasonUnknown)
	return status.Errorf(codes.FailedPrecondition, "junction ext_proc: %s (phase %s)", detail, phaseNames[x.phase])
}

// failed counts a request Junction could not finish: Envoy answers it 500
// unless failure_mode_allow lets it through.
func (x *exchange) failed(reason string) {
	x.dp.Error(reason)
	x.status = http.StatusInternalServerError
	x.markComplete()
}

// finish records the request once its stream is over: router_requests_total
// and its duration, a cancellation when the stream ended before the answer
// did, and the log line.
func (x *exchange) finish() {
	if !x.seen || x.phase == phasePassthrough || x.recorded {
		return
	}
	x.recorded = true
	if !x.complete && !x.cancelled {
		// The stream ended before the answer did: the client went away (or
		// the upstream broke off, which Envoy reports the same way).
		x.cancelled = true
		x.dp.Error(metrics.ReasonCancellation)
	}
	x.dp.RecordUsage()
	ctx := x.ctx
	if x.cut {
		// Junction ended the stream (idle bound) and cancelled its context to
		// do so: what runs at the stream's end still gets to run.
		ctx = context.WithoutCancel(ctx)
	}
	x.dp.StreamEnded(ctx, x.status, false) // a stream that ended before its answer did
	st := x.status
	switch {
	case x.cancelled:
		st = dataplane.StatusClientClosed
	case st == 0:
		st = http.StatusOK
	}
	end := x.end
	if end.IsZero() {
		end = time.Now()
	}
	d := end.Sub(x.start)
	x.dp.Record(x.endpoint, st, d)
	x.endSpans(st, end)
	if !x.s.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := []any{"request_id", x.id, "endpoint", x.endpoint, "status", st, "duration_ms", d.Milliseconds(), "via", "ext_proc"}
	if res := x.dp.Out.Result; res != nil {
		attrs = append(attrs, "decision", x.dp.Category(), "model", res.Model, "reason_code", res.ReasonCode)
	}
	x.s.log.Info("request", attrs...)
}
