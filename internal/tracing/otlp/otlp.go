// Package otlp builds Junction's tracer from
// global.services.observability.tracing: the OpenTelemetry SDK's
// TracerProvider with a batching OTLP exporter (gRPC or HTTP/protobuf), a
// parent-based sampler and the resource attributes. Serve builds it once at
// start and shuts it down (flushing what is queued) when serving ends.
package otlp

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/recipes"
)

// Options are what New needs besides the configuration.
type Options struct {
	// Version is service.version of the resource.
	Version string
	// BatchTimeout is how long ended spans wait before they are exported;
	// zero keeps the SDK's default (5s). Tests shorten it.
	BatchTimeout time.Duration
}

// New builds the tracer cfg describes; nil (tracing off) when cfg is not
// enabled. The exporter connects lazily: a collector that is not there yet
// costs dropped spans (the SDK logs them), not a failed start. Call the
// tracer's Shutdown when serving ends so the spans still queued are sent.
func New(cfg recipes.Tracing, o Options) (*tracing.Tracer, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	if cfg.Provider != "" && cfg.Provider != "opentelemetry" {
		return nil, fmt.Errorf("tracing.provider %q: only opentelemetry is supported", cfg.Provider)
	}
	exp, err := newExporter(cfg.Exporter)
	if err != nil {
		return nil, err
	}
	res, err := newResource(cfg.Resource, o.Version)
	if err != nil {
		return nil, err
	}
	sampler, err := newSampler(cfg.Sampling)
	if err != nil {
		return nil, err
	}
	var bopts []sdktrace.BatchSpanProcessorOption
	if o.BatchTimeout > 0 {
		bopts = append(bopts, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, bopts...),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler),
	)
	return tracing.NewTracer(tp, cfg.CaptureContent, o.Version), nil
}

// newExporter is the OTLP exporter of e: gRPC unless protocol is
// http/protobuf; to host:port without TLS unless insecure: false, to a URL
// as its scheme says.
func newExporter(e recipes.TracingExporter) (sdktrace.SpanExporter, error) {
	if e.Type != "" && e.Type != "otlp" {
		return nil, fmt.Errorf("tracing.exporter.type %q: only otlp is supported", e.Type)
	}
	insecure := e.Insecure == nil || *e.Insecure
	isURL := strings.Contains(e.Endpoint, "://")
	switch e.Protocol {
	case "", recipes.TracingProtocolGRPC:
		var opts []otlptracegrpc.Option
		switch {
		case e.Endpoint == "":
			opts = append(opts, otlptracegrpc.WithEndpoint(recipes.DefaultTracingEndpointGRPC))
		case isURL:
			opts = append(opts, otlptracegrpc.WithEndpointURL(e.Endpoint))
		default:
			opts = append(opts, otlptracegrpc.WithEndpoint(e.Endpoint))
		}
		if insecure && !isURL { // a URL's scheme decides: http plain, https TLS
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		// New does not dial: the connection is made when spans are sent.
		return otlptracegrpc.New(context.Background(), opts...)
	case recipes.TracingProtocolHTTP:
		var opts []otlptracehttp.Option
		switch {
		case e.Endpoint == "":
			opts = append(opts, otlptracehttp.WithEndpoint(recipes.DefaultTracingEndpointHTTP))
		case isURL:
			u, err := url.Parse(e.Endpoint)
			if err != nil {
				return nil, fmt.Errorf("tracing.exporter.endpoint %q: %w", e.Endpoint, err)
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/traces" // the collector's path, not its root
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		default:
			opts = append(opts, otlptracehttp.WithEndpoint(e.Endpoint))
		}
		if insecure && !isURL { // a URL's scheme decides: http plain, https TLS
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		return otlptracehttp.New(context.Background(), opts...)
	}
	return nil, fmt.Errorf("tracing.exporter.protocol %q: use grpc or http/protobuf", e.Protocol)
}

// newResource is the SDK's attributes (and OTEL_RESOURCE_ATTRIBUTES), then
// service.name junction and service.version, then the configuration's
// attributes over them.
func newResource(raw []byte, version string) (*resource.Resource, error) {
	attrs, bad, err := recipes.TracingResource(raw)
	if err != nil {
		return nil, fmt.Errorf("tracing.resource: %w", err)
	}
	if bad != "" {
		return nil, fmt.Errorf("tracing.resource.%s: want a string, number or boolean", bad)
	}
	kvs := []attribute.KeyValue{attribute.String("service.name", "junction")}
	if version != "" {
		kvs = append(kvs, attribute.String("service.version", version))
	}
	for k, v := range attrs {
		switch v := v.(type) {
		case string:
			kvs = append(kvs, attribute.String(k, v))
		case float64:
			if v == float64(int64(v)) {
				kvs = append(kvs, attribute.Int64(k, int64(v)))
			} else {
				kvs = append(kvs, attribute.Float64(k, v))
			}
		case bool:
			kvs = append(kvs, attribute.Bool(k, v))
		}
	}
	return resource.Merge(resource.Default(), resource.NewSchemaless(kvs...))
}

// newSampler is parent-based: a request whose traceparent says sampled is
// recorded, one that says not sampled is not, and new traces follow s
// (default: all).
func newSampler(s *recipes.TracingSampling) (sdktrace.Sampler, error) {
	root := sdktrace.AlwaysSample()
	if s != nil {
		switch s.Type {
		case "", recipes.SamplingRatio:
			if s.Rate != nil {
				if *s.Rate < 0 || *s.Rate > 1 {
					return nil, fmt.Errorf("tracing.sampling.rate %g: must be between 0 and 1", *s.Rate)
				}
				root = sdktrace.TraceIDRatioBased(*s.Rate)
			}
		case recipes.SamplingAlwaysOn:
		case recipes.SamplingAlwaysOff:
			root = sdktrace.NeverSample()
		default:
			return nil, fmt.Errorf("tracing.sampling.type %q: use ratio, always_on or always_off", s.Type)
		}
	}
	return sdktrace.ParentBased(root), nil
}
