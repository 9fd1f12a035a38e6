package junction

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/tracing/otlptest"
	"github.com/junction-router/junction/recipes"
)

// TestServeTracesAndFlushesAtShutdown: serve builds the tracer from the
// document (OTLP/gRPC to a receiver here) and, when it stops, sends the
// spans still queued: the request's spans arrive although the batch
// exporter's 5-second timer never fired.
func TestServeTracesAndFlushesAtShutdown(t *testing.T) {
	rcv := otlptest.NewGRPC(t)
	doc, err := recipes.Parse([]byte(`{version: v1, providers: {defaults: {default_model: m}, models: [{name: m, backend_refs: [{provider: demo}]}]},
  recipes: [{name: default}],
  global: {services: {observability: {tracing: {enabled: true, exporter: {endpoint: "` + rcv.Addr + `"}, resource: {service_name: edge}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Document: doc, DataDir: t.TempDir(), ListenerAddrs: map[string]string{"public": "127.0.0.1:0"},
		DisableExtproc: true, ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", SignalModels: SignalModelsLexical, Version: "v-test"})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	<-s.Ready()
	if s.GatewayAddr() == "" {
		t.Fatalf("not serving: %v", <-errc)
	}
	resp, err := http.Post("http://"+s.GatewayAddr()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"auto","messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Run has returned: whatever was queued has been sent or is lost.
	spans := rcv.Spans()
	server := otlptest.Named(spans, "POST /v1/chat/completions")
	if len(server) != 1 || len(otlptest.Named(spans, "chat m")) != 1 {
		t.Fatalf("spans after shutdown:\n%s", otlptest.Describe(spans))
	}
	if server[0].Resource["service.name"] != "edge" || server[0].Resource["service.version"] != "v-test" {
		t.Errorf("resource: %v", server[0].Resource)
	}
}
