package recipes

import (
	"strings"
	"testing"
)

func TestTracingValidation(t *testing.T) {
	const p = "/global/services/observability/tracing"
	tests := []struct {
		name, ptr, value, wantPath, wantMsg string
	}{
		{"unknown exporter type", "/exporter/type", `zipkin`, p + "/exporter/type", "must be otlp"},
		{"unknown protocol", "/exporter/protocol", `thrift`, p + "/exporter/protocol", ""},
		{"endpoint without port", "/exporter/endpoint", `jaeger`, p + "/exporter/endpoint", "host:port"},
		{"endpoint with a bad scheme", "/exporter/endpoint", `ftp://jaeger:4317`, p + "/exporter/endpoint", "http:// or https://"},
		{"rate above 1", "/sampling", `{type: ratio, rate: 1.5}`, p + "/sampling/rate", ""},
		{"unknown sampler", "/sampling", `{type: sometimes}`, p + "/sampling/type", ""},
		{"rate without ratio", "/sampling", `{type: always_on, rate: 0.5}`, p + "/sampling/rate", "type ratio only"},
		{"resource value not a scalar", "/resource", `{team: {a: b}}`, p + "/resource/team", "string, number or boolean"},
		{"unknown provider", "/provider", `zipkin`, p + "/provider", "opentelemetry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := exampleValue(t)
			set(t, v, p+tt.ptr, y(t, tt.value))
			_, err := Parse(toJSON(t, v))
			for _, pr := range problemsOf(t, err) {
				if pr.Path == tt.wantPath && strings.Contains(pr.Message, tt.wantMsg) {
					return
				}
			}
			t.Errorf("no problem at %s containing %q; got:\n%v", tt.wantPath, tt.wantMsg, err)
		})
	}
	t.Run("accepted", func(t *testing.T) {
		v := exampleValue(t)
		set(t, v, p, y(t, `{enabled: true, capture_content: false, exporter: {type: otlp, protocol: http/protobuf, endpoint: "http://collector:4318", insecure: false},
  sampling: {type: ratio, rate: 0.25}, resource: {service_name: edge, deployment.environment.name: prod, replicas: 3}}`))
		doc, err := Parse(toJSON(t, v))
		if err != nil {
			t.Fatal(err)
		}
		tr := doc.Global.Services.Observability.Tracing
		if !tr.Enabled || tr.Exporter.Insecure == nil || *tr.Exporter.Insecure || tr.Sampling == nil || *tr.Sampling.Rate != 0.25 {
			t.Errorf("tracing: %+v", tr)
		}
		attrs, bad, err := TracingResource(tr.Resource)
		if err != nil || bad != "" || attrs["service.name"] != "edge" || attrs["replicas"] != 3.0 {
			t.Errorf("resource: %v %q %v", attrs, bad, err)
		}
	})
}
