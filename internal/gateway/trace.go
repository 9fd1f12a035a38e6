package gateway

import (
	"context"
	"net"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/junction-router/junction/internal/dataplane"
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
	provider := c.ref.Provider
	switch {
	case x.dp.Anthropic():
		provider = tracing.ProviderAnthropic
	case provider == "":
		provider = tracing.ProviderOpenAI // an OpenAI-compatible backend
	}
	attrs := []attribute.KeyValue{
		tracing.GenAIOperationName.String(tracing.OperationChat),
		tracing.GenAIProviderName.String(provider),
		tracing.GenAIRequestModel.String(c.model.Name),
		tracing.Backend.String(c.key),
		tracing.Stream.Bool(c.stream),
	}
	if c.target != nil {
		host, port, err := net.SplitHostPort(c.target.Host)
		if err != nil {
			host = c.target.Hostname()
		}
		attrs = append(attrs, tracing.ServerAddress.String(host))
		if n, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, tracing.ServerPort.Int(n))
		}
	}
	capture := x.s.opts.Tracer.CaptureContent()
	if capture {
		if m := x.dp.Out.InputMessages(); m != nil {
			attrs = append(attrs, tracing.GenAIInputMessages.String(string(m)))
		}
	}
	ctx, span := tracing.Child(ctx, tracing.OperationChat+" "+c.model.Name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	tracing.Inject(ctx, c.header)
	x.dp.Trace(capture)
	return ctx, span
}

// endUpstreamSpan ends an attempt's span: the backend's status (0: no
// answer), what the answer said (GenAI conventions) and, for a failed
// attempt, errType.
func (x *exchange) endUpstreamSpan(span trace.Span, status int, errType string) {
	if span == nil {
		return
	}
	endModelSpan(span, x.dp.TracedAnswer(), status, errType)
}

// endModelSpan sets a model call's response attributes and ends it.
func endModelSpan(span trace.Span, a dataplane.TracedAnswer, status int, errType string) {
	attrs := make([]attribute.KeyValue, 0, 8)
	if status > 0 {
		attrs = append(attrs, tracing.HTTPResponseStatusCode.Int(status))
	}
	if a.ID != "" {
		attrs = append(attrs, tracing.GenAIResponseID.String(a.ID))
	}
	if a.Model != "" {
		attrs = append(attrs, tracing.GenAIResponseModel.String(a.Model))
	}
	if len(a.FinishReasons) > 0 {
		attrs = append(attrs, tracing.GenAIResponseFinish.StringSlice(a.FinishReasons))
	}
	if a.Usage != nil {
		attrs = append(attrs, tracing.GenAIUsageInputTokens.Int64(a.Usage.PromptTokens), tracing.GenAIUsageOutputTokens.Int64(a.Usage.CompletionTokens))
	}
	if a.Output != nil {
		attrs = append(attrs, tracing.GenAIOutputMessages.String(string(a.Output)))
	}
	if errType == "" && status >= 400 {
		errType = strconv.Itoa(status)
	}
	if errType != "" {
		attrs = append(attrs, tracing.ErrorType.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	span.SetAttributes(attrs...)
	span.End()
}
