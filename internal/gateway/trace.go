package gateway

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/junction-router/junction/internal/tracing"
)

// Tracing: one server span per request (a child of the client's
// traceparent when it sent one), under which the data plane records
// routing and the plugins, and one "chat {model}" client span per upstream
// attempt whose context goes to the backend as traceparent. Off (no
// Tracer), none of this runs: the client's traceparent is passed to the
// backend as it came.

// startSpan begins the request's server span.
func (x *exchange) startSpan() {
	t := x.s.opts.Tracer
	if t == nil {
		return
	}
	ctx := tracing.Extract(x.r.Context(), x.r.Header)
	ctx, x.span = t.Start(ctx, x.r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		tracing.HTTPRequestMethod.String(x.r.Method), tracing.URLPath.String(x.r.URL.Path), tracing.RequestID.String(x.id)))
	x.r = x.r.WithContext(ctx)
}

// endSpan ends the server span with what the client got.
func (x *exchange) endSpan(status int) {
	if x.span == nil {
		return
	}
	name := x.r.Method
	if x.endpoint != endpointOther {
		name += " " + x.endpoint
		x.span.SetAttributes(tracing.HTTPRoute.String(x.endpoint))
	}
	x.span.SetName(name)
	x.span.SetAttributes(tracing.HTTPResponseStatusCode.Int(status))
	if res := x.dp.Out.Result; res != nil {
		x.span.SetAttributes(tracing.Decision.String(x.dp.Category()), tracing.SelectedModel.String(res.Model))
	}
	if status >= 500 {
		x.span.SetStatus(codes.Error, strconv.Itoa(status))
	}
	x.span.End()
}

// startUpstreamSpan begins an upstream attempt's span and puts its
// traceparent on the attempt's headers; without a recording span the
// client's own traceparent goes instead. The span is nil then.
func (x *exchange) startUpstreamSpan(ctx context.Context, c *upstreamCall) (context.Context, trace.Span) {
	if !tracing.Recording(ctx) {
		tracing.PassThrough(c.header, x.r.Header)
		return ctx, nil
	}
	ctx, span := x.dp.StartModelSpan(ctx, x.s.opts.Tracer.CaptureContent())
	tracing.Inject(ctx, c.header)
	return ctx, span
}
