package recipes

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Tracing exporter protocols, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	TracingProtocolGRPC = "grpc"
	TracingProtocolHTTP = "http/protobuf"
)

// Tracing defaults (spec 001: exporter endpoint jaeger:4317, insecure).
const (
	DefaultTracingEndpointGRPC = "jaeger:4317"
	DefaultTracingEndpointHTTP = "jaeger:4318"
)

// tracing checks global.services.observability.tracing, enabled or not, so
// that switching it on later is not the first time it is read.
func (c *checker) tracing() {
	const p = "/global/services/observability/tracing"
	t := &c.doc.Global.Services.Observability.Tracing
	if t.Provider != "" && t.Provider != "opentelemetry" {
		c.add(p+"/provider", CodeInvalidValue, "must be opentelemetry (got %q)", t.Provider)
	}
	e := t.Exporter
	if e.Type != "" && e.Type != "otlp" {
		c.add(p+"/exporter/type", CodeInvalidValue, "must be otlp (got %q); choose gRPC or HTTP with exporter.protocol", e.Type)
	}
	switch e.Protocol {
	case "", TracingProtocolGRPC, TracingProtocolHTTP:
	default:
		c.add(p+"/exporter/protocol", CodeInvalidValue, "must be grpc or http/protobuf (got %q)", e.Protocol)
	}
	if e.Endpoint != "" {
		if msg := tracingEndpointProblem(e.Endpoint); msg != "" {
			c.add(p+"/exporter/endpoint", CodeInvalidValue, "%s (got %q)", msg, e.Endpoint)
		}
	}
	if s := t.Sampling; s != nil {
		switch s.Type {
		case "", SamplingRatio, SamplingAlwaysOn, SamplingAlwaysOff:
		default:
			c.add(p+"/sampling/type", CodeInvalidValue, "must be ratio, always_on or always_off (got %q)", s.Type)
		}
		if s.Rate != nil && (*s.Rate < 0 || *s.Rate > 1) {
			c.add(p+"/sampling/rate", CodeInvalidValue, "must be between 0 and 1 (got %g)", *s.Rate)
		}
		if s.Rate != nil && s.Type != "" && s.Type != SamplingRatio {
			c.add(p+"/sampling/rate", CodeInvalidValue, "applies to type ratio only (type is %s)", s.Type)
		}
	}
	if _, bad, err := TracingResource(t.Resource); err != nil {
		c.add(p+"/resource", CodeInvalidValue, "must be an object of attribute names to strings, numbers or booleans: %v", err)
	} else if bad != "" {
		c.add(p+"/resource/"+escapePointer(bad), CodeInvalidValue, "must be a string, number or boolean")
	}
}

// tracingEndpointProblem says what is wrong with an exporter endpoint: it
// is host:port, or an http(s) URL with a host.
func tracingEndpointProblem(ep string) string {
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "must be host:port or an http:// or https:// URL with a host"
		}
		return ""
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil || host == "" {
		return "must be host:port such as jaeger:4317, or an http:// or https:// URL"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "must end with a port between 1 and 65535"
	}
	return ""
}

// TracingResource reads tracing.resource: attribute name → value (string,
// float64 or bool), service_name renamed service.name. bad names the first
// key whose value is not a scalar.
func TracingResource(raw json.RawMessage) (attrs map[string]any, bad string, err error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, "", nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", err
	}
	attrs = make(map[string]any, len(m))
	for k, v := range m {
		switch v.(type) {
		case string, float64, bool:
		default:
			if bad == "" || k < bad {
				bad = k
			}
			continue
		}
		if k == "service_name" {
			k = "service.name"
		}
		attrs[k] = v
	}
	return attrs, bad, nil
}
