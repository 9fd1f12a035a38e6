package otlp

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/recipes"
)

func rate(r float64) *float64 { return &r }

// TestSamplingIsParentBased: the configured sampler decides for traces that
// start at Junction; a traceparent's sampled flag decides for the others.
func TestSamplingIsParentBased(t *testing.T) {
	sampled := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	notSampled := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}}
	for _, tt := range []struct {
		name                         string
		sampling                     *recipes.TracingSampling
		root, underSampled, underNot bool
	}{
		{"default: every new trace", nil, true, true, false},
		{"ratio 0", &recipes.TracingSampling{Type: recipes.SamplingRatio, Rate: rate(0)}, false, true, false},
		{"ratio 1", &recipes.TracingSampling{Rate: rate(1)}, true, true, false},
		{"always_off", &recipes.TracingSampling{Type: recipes.SamplingAlwaysOff}, false, true, false},
		{"always_on", &recipes.TracingSampling{Type: recipes.SamplingAlwaysOn}, true, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Nothing listens there: spans are dropped, which is all this test needs.
			tr, err := New(recipes.Tracing{Enabled: true, Sampling: tt.sampling, Exporter: recipes.TracingExporter{Endpoint: "127.0.0.1:1"}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_ = tr.Shutdown(ctx)
			}()
			recording := func(h http.Header) bool {
				_, s := tr.Start(tracing.Extract(context.Background(), h), "x")
				defer s.End()
				return s.IsRecording()
			}
			if got := recording(http.Header{}); got != tt.root {
				t.Errorf("new trace recorded = %v, want %v", got, tt.root)
			}
			if got := recording(sampled); got != tt.underSampled {
				t.Errorf("under a sampled parent recorded = %v, want %v", got, tt.underSampled)
			}
			if got := recording(notSampled); got != tt.underNot {
				t.Errorf("under a parent not sampled recorded = %v, want %v", got, tt.underNot)
			}
		})
	}
}

func TestOffIsNil(t *testing.T) {
	tr, err := New(recipes.Tracing{}, Options{})
	if err != nil || tr != nil || tr.Enabled() {
		t.Fatalf("disabled: %v, %v", tr, err)
	}
	ctx := context.Background()
	if allocs := testing.AllocsPerRun(100, func() {
		c, s := tr.Start(ctx, "x")
		s.End()
		_ = c
		_ = tracing.Recording(ctx)
	}); allocs != 0 {
		t.Errorf("a nil tracer allocates %v times per span", allocs)
	}
}

func TestBadExporterSettingsAreRefused(t *testing.T) {
	for _, e := range []recipes.TracingExporter{{Type: "zipkin"}, {Protocol: "thrift"}} {
		if _, err := New(recipes.Tracing{Enabled: true, Exporter: e}, Options{}); err == nil {
			t.Errorf("%+v accepted", e)
		}
	}
}
