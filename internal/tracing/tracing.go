// Package tracing is what every traced package of Junction shares: the
// Tracer the front ends and the management API start their spans with,
// starting a child of the span in a context, W3C trace-context propagation,
// and the attribute names of the spans (OpenTelemetry's GenAI conventions
// on model calls). It depends on OpenTelemetry's API only; the SDK and the
// OTLP exporters that global.services.observability.tracing describes are
// built by internal/tracing/otlp, so that packages the plugin author's
// harness imports (internal/plugin) stay light.
//
// Nothing is global: serve builds one *Tracer and hands it to the front ends
// and the management API; deeper packages find the tracer through the span
// in their context (Child), so they need no option of their own. A nil
// *Tracer is tracing off: every method and helper then returns at once and
// allocates nothing, which keeps the request path as it was.
//
// Prompts and answers are never span attributes unless the configuration
// says capture_content: true.
package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span Junction makes.
const ScopeName = "github.com/junction-router/junction"

// Tracer starts Junction's spans. A nil *Tracer is tracing off.
type Tracer struct {
	provider Provider
	tracer   trace.Tracer
	content  bool
}

// Provider is the TracerProvider behind a Tracer (the SDK's, built by
// internal/tracing/otlp from the configuration).
type Provider interface {
	trace.TracerProvider
	ForceFlush(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// NewTracer returns a Tracer over p; captureContent puts prompts and
// answers on model-call spans.
func NewTracer(p Provider, captureContent bool, version string) *Tracer {
	return &Tracer{provider: p, tracer: p.Tracer(ScopeName, trace.WithInstrumentationVersion(version)), content: captureContent}
}

// Enabled reports whether spans are made.
func (t *Tracer) Enabled() bool { return t != nil }

// CaptureContent reports whether prompts and answers go on model-call spans.
func (t *Tracer) CaptureContent() bool { return t != nil && t.content }

// Start begins a span (a root of Junction's work, or a child of the span in
// ctx). Off, it returns ctx and a span that records nothing.
func (t *Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t == nil {
		return ctx, noopSpan
	}
	return t.tracer.Start(ctx, name, opts...)
}

// ForceFlush exports the spans that have ended.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Shutdown exports what is queued, within ctx, and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// noopSpan is boxed once: a noop.Span made into a trace.Span on each call would
// allocate.
var noopSpan trace.Span = noop.Span{}

// Recording reports whether the span in ctx records: the cheap test a
// package makes before building a span's name or attributes.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// Child starts a span under the one in ctx with that span's tracer
// provider, so a package deep in the request needs no tracer of its own.
// When the span in ctx does not record, it returns ctx and a span that
// records nothing; callers test Recording first when the name or options
// cost something to build.
func Child(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noopSpan
	}
	return parent.TracerProvider().Tracer(ScopeName).Start(ctx, name, opts...)
}

// propagator is W3C Trace Context: traceparent and tracestate.
var propagator propagation.TraceContext

// Extract returns ctx with the remote span context h's traceparent names
// (ctx unchanged without a valid one).
func Extract(ctx context.Context, h http.Header) context.Context {
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject writes traceparent (and tracestate) of the span in ctx into h.
func Inject(ctx context.Context, h http.Header) {
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Trace-context header names.
const (
	HeaderTraceparent = "Traceparent"
	HeaderTracestate  = "Tracestate"
)

// PassThrough copies the client's traceparent and tracestate to an upstream
// request's headers unchanged: with tracing off the backend's spans still
// join the client's trace.
func PassThrough(dst, client http.Header) {
	if v, ok := client[HeaderTraceparent]; ok {
		dst[HeaderTraceparent] = v
		if v, ok := client[HeaderTracestate]; ok {
			dst[HeaderTracestate] = v
		}
	}
}
