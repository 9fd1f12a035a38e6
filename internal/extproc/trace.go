package extproc

import (
	"strconv"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/junction-router/junction/internal/tracing"
)

// Tracing behind Envoy: one server span per stream Junction serves (a
// child of the traceparent in the request's headers: the client's, or
// Envoy's own when Envoy traces), under which the data plane records
// routing and the plugins; a span per ext_proc phase (request_headers,
// request_body, …: from its first message to its last, so a streamed body
// is one span, not one per piece); and the "chat {model}" client span of
// the call Envoy makes, from the routed request to the end of its answer,
// whose context replaces traceparent on the request Envoy forwards. Off
// (no Tracer), none of this runs and Envoy forwards the client's
// traceparent as it came.

// extproc message kinds, for the phase spans.
const (
	msgRequestHeaders = iota
	msgRequestBody
	msgRequestTrailers
	msgResponseHeaders
	msgResponseBody
	msgResponseTrailers
	msgKinds
)

var phaseSpanNames = [msgKinds]string{"ext_proc request_headers", "ext_proc request_body", "ext_proc request_trailers",
	"ext_proc response_headers", "ext_proc response_body", "ext_proc response_trailers"}

var phaseAttr = [msgKinds]string{"request_headers", "request_body", "request_trailers", "response_headers", "response_body", "response_trailers"}

// spanTimes is when a phase's first message arrived and its last was
// answered.
type spanTimes struct{ first, last time.Time }

// messageKind is req's index in phaseSpanNames; -1 for none.
func messageKind(req *extprocv3.ProcessingRequest) int {
	switch req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return msgRequestHeaders
	case *extprocv3.ProcessingRequest_RequestBody:
		return msgRequestBody
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return msgRequestTrailers
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return msgResponseHeaders
	case *extprocv3.ProcessingRequest_ResponseBody:
		return msgResponseBody
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return msgResponseTrailers
	}
	return -1
}

// startSpan begins the stream's server span once its request headers say
// what it is.
func (x *exchange) startSpan(method, path string) {
	t := x.s.opts.Tracer
	if t == nil {
		return
	}
	ctx := tracing.Extract(x.ctx, x.reqHeader)
	ctx, x.span = t.Start(ctx, "ext_proc "+method+" "+path, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(x.start),
		trace.WithAttributes(tracing.HTTPRequestMethod.String(method), tracing.URLPath.String(path), tracing.RequestID.String(x.id),
			tracing.RPCSystem.String("envoy_ext_proc")))
	x.ctx = ctx
}

// notePhase records that a message of kind was handled between from and to.
func (x *exchange) notePhase(kind int, from, to time.Time) {
	if kind < 0 {
		return
	}
	p := &x.phaseTimes[kind]
	if p.first.IsZero() {
		p.first = from
	}
	p.last = to
}

// startModelSpan begins the span of the call Envoy is about to make and
// puts its traceparent on the headers Envoy forwards.
func (x *exchange) startModelSpan() {
	if x.span == nil {
		return
	}
	ctx, span := x.dp.StartModelSpan(x.ctx, x.s.opts.Tracer.CaptureContent())
	if span == nil {
		return
	}
	x.modelSpan = span
	tracing.Inject(ctx, x.dp.Out.Header)
}

// endSpans ends the stream's spans as it is recorded: the model call with
// the answer's status, the phases, then the server span.
func (x *exchange) endSpans(status int, end time.Time) {
	if x.span == nil {
		return
	}
	if x.modelSpan != nil {
		errType := ""
		if x.cancelled {
			errType = "cancelled"
		}
		x.dp.EndModelSpan(x.modelSpan, x.status, errType)
		x.modelSpan = nil
	}
	for k, p := range x.phaseTimes {
		if p.first.IsZero() {
			continue
		}
		_, s := tracing.Child(x.ctx, phaseSpanNames[k], trace.WithTimestamp(p.first),
			trace.WithAttributes(tracing.ExtprocPhase.String(phaseAttr[k])))
		s.End(trace.WithTimestamp(p.last))
	}
	x.span.SetAttributes(tracing.HTTPResponseStatusCode.Int(status))
	if x.endpoint != "" {
		x.span.SetAttributes(tracing.HTTPRoute.String(x.endpoint))
	}
	if res := x.dp.Out.Result; res != nil {
		x.span.SetAttributes(tracing.Decision.String(x.dp.Category()), tracing.SelectedModel.String(res.Model))
	}
	if status >= 500 {
		x.span.SetStatus(codes.Error, "status "+strconv.Itoa(status))
	}
	x.span.End(trace.WithTimestamp(end))
	x.span = nil
}
