package extproc_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/tracing/otlp"
	"github.com/junction-router/junction/internal/tracing/otlptest"
	"github.com/junction-router/junction/recipes"
)

// TestTraceBehindEnvoy runs a routed request through ext_proc as Envoy
// would, with the client's traceparent among its headers, and checks what
// an OTLP receiver gets: the stream's server span continues the client's
// trace; routing, the plugin, each ext_proc phase and the model call Envoy
// makes are its children; Envoy is told to forward the model call's span
// as traceparent; the prompt is in no span.
func TestTraceBehindEnvoy(t *testing.T) {
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	rcv := otlptest.NewGRPC(t)
	tr, err := otlp.New(recipes.Tracing{Enabled: true, Exporter: recipes.TracingExporter{Endpoint: rcv.Addr}},
		otlp.Options{Version: "test", BatchTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	t.Setenv("EXTPROC_TEST_BIG_KEY", "sk-upstream-big")
	e := newEnv(t, func(o *envOptions) { o.opts.Tracer = tr })

	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(userBody("please prove the zanzibar-walrus lemma"), "traceparent", "00-"+traceID+"-"+parentID+"-01"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Upstream == nil {
		t.Fatalf("not forwarded: %+v", out)
	}
	forwarded := out.Upstream.Headers.Values("traceparent")
	resp, err := s.SendResponse(e.answer(out.Upstream, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var answer struct {
		ID    string `json:"id"`
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(resp.Downstream.Body, &answer); err != nil {
		t.Fatalf("answer: %v: %s", err, resp.Downstream.Body)
	}
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.WaitFor(t, 10*time.Second, func(s []otlptest.Span) bool {
		return len(otlptest.Named(s, "ext_proc POST /v1/chat/completions")) == 1
	})
	get := func(name string) otlptest.Span {
		t.Helper()
		got := otlptest.Named(spans, name)
		if len(got) != 1 {
			t.Fatalf("%d spans named %q; spans:\n%s", len(got), name, otlptest.Describe(spans))
		}
		return got[0]
	}
	server := get("ext_proc POST /v1/chat/completions")
	call := get("chat big")
	if server.TraceID != traceID || server.ParentSpanID != parentID || server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span: trace %s parent %s kind %v", server.TraceID, server.ParentSpanID, server.Kind)
	}
	for _, name := range []string{"route", "plugin system_prompt", "chat big", "ext_proc request_headers", "ext_proc request_body",
		"ext_proc response_headers", "ext_proc response_body"} {
		if s := get(name); s.ParentSpanID != server.SpanID || s.TraceID != traceID {
			t.Errorf("%q: parent %s trace %s, want the server span %s", name, s.ParentSpanID, s.TraceID, server.SpanID)
		}
	}
	if d := get("decision hard_math"); d.ParentSpanID != get("route").SpanID {
		t.Errorf("the decision is not under route")
	}
	if len(forwarded) != 1 || forwarded[0] != "00-"+traceID+"-"+call.SpanID+"-01" {
		t.Errorf("Envoy forwards traceparent %q, want the model call's span %s", forwarded, call.SpanID)
	}
	if call.Kind != tracepb.Span_SPAN_KIND_CLIENT || call.Attrs["gen_ai.operation.name"] != "chat" || call.Attrs["gen_ai.request.model"] != "big" ||
		call.Attrs["gen_ai.response.id"] != answer.ID || call.Attrs["gen_ai.usage.input_tokens"] != answer.Usage.PromptTokens ||
		call.Attrs["http.response.status_code"] != int64(200) || answer.ID == "" {
		t.Errorf("model call attributes %v (answer id %q, prompt tokens %d)", call.Attrs, answer.ID, answer.Usage.PromptTokens)
	}
	if server.Attrs["http.response.status_code"] != int64(200) || server.Attrs["junction.decision"] != "hard_math" {
		t.Errorf("server span attributes: %v", server.Attrs)
	}
	for _, s := range spans {
		for k, v := range s.Attrs {
			if str, ok := v.(string); ok && strings.Contains(str, "zanzibar") {
				t.Errorf("span %q attribute %s holds the prompt", s.Name, k)
			}
		}
	}
}
