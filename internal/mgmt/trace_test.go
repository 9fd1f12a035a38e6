package mgmt_test

import (
	"context"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/tracing/otlp"
	"github.com/junction-router/junction/internal/tracing/otlptest"
	"github.com/junction-router/junction/recipes"
)

// TestMutationsAreTraced: a configuration update is a server span (its
// route, audit action, status and the version it made, continuing the
// caller's traceparent); a read is not traced.
func TestMutationsAreTraced(t *testing.T) {
	rcv := otlptest.NewGRPC(t)
	tr, err := otlp.New(recipes.Tracing{Enabled: true, Exporter: recipes.TracingExporter{Endpoint: rcv.Addr}},
		otlp.Options{BatchTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	e := newEnvOpts(t, copyBase(t), compiler(t), func(o *mgmt.Options) { o.Tracer = tr })

	etag := must(t, e.call("GET", "/api/v1/config", nil), 200).header.Get("ETag")
	patch := map[string]any{"providers": map[string]any{"defaults": map[string]any{"default_model": "big"}}}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	must(t, e.call("PATCH", "/api/v1/config", patch, "If-Match", etag, "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01"), 200)
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.WaitFor(t, 10*time.Second, func(s []otlptest.Span) bool { return len(s) > 0 })
	if len(spans) != 1 {
		t.Fatalf("want one span (the PATCH; the GET is a read):\n%s", otlptest.Describe(spans))
	}
	s := spans[0]
	if s.Name != "PATCH /api/v1/config" || s.TraceID != traceID || s.ParentSpanID != "00f067aa0ba902b7" ||
		s.Attrs["junction.management.action"] != "config.update" || s.Attrs["http.response.status_code"] != int64(200) ||
		s.Attrs["junction.management.config_version"] != "2" {
		t.Errorf("span %s (trace %s parent %s): %v", s.Name, s.TraceID, s.ParentSpanID, s.Attrs)
	}
}
