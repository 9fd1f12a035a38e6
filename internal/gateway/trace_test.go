package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/internal/tracing/otlp"
	"github.com/junction-router/junction/internal/tracing/otlptest"
	"github.com/junction-router/junction/recipes"
)

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	// secretPrompt must never appear in a span unless content capture is on.
	secretPrompt = "please prove the zanzibar-walrus lemma"
)

func newTracer(t *testing.T, cfg recipes.Tracing) *tracing.Tracer {
	t.Helper()
	cfg.Enabled = true
	tr, err := otlp.New(cfg, otlp.Options{Version: "test", BatchTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tr.Shutdown(ctx)
	})
	return tr
}

// traceparentOf splits a traceparent header into trace id and parent id.
func traceparentOf(t *testing.T, h string) (traceID, parentID string) {
	t.Helper()
	parts := strings.Split(h, "-")
	if len(parts) != 4 || parts[0] != "00" {
		t.Fatalf("traceparent %q is not W3C version 00", h)
	}
	return parts[1], parts[2]
}

func one(t *testing.T, spans []otlptest.Span, name string) otlptest.Span {
	t.Helper()
	got := otlptest.Named(spans, name)
	if len(got) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans:\n%s", len(got), name, otlptest.Describe(spans))
	}
	return got[0]
}

// TestTraceOfARoutedRequestOverGRPC sends a request with a client
// traceparent through the real gateway to a fake backend and checks the
// tree an OTLP/gRPC receiver gets: the server span continues the client's
// trace; routing (its signals and decision), the plugin and the model call
// are its children; the model call carries the GenAI attributes and is the
// parent the backend was told about; no span holds the prompt.
func TestTraceOfARoutedRequestOverGRPC(t *testing.T) {
	rcv := otlptest.NewGRPC(t)
	tr := newTracer(t, recipes.Tracing{Exporter: recipes.TracingExporter{Endpoint: rcv.Addr},
		Resource: json.RawMessage(`{"deployment.environment.name": "test"}`)})
	e := newEnv(t, withTracer(tr))

	body := fmt.Sprintf(`{"model":"auto","messages":[{"role":"user","content":%q}]}`, secretPrompt)
	resp, b := e.post("/v1/chat/completions", body, "traceparent", "00-"+clientTraceID+"-"+clientSpanID+"-01")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.WaitFor(t, 10*time.Second, func(s []otlptest.Span) bool {
		return len(otlptest.Named(s, "POST /v1/chat/completions")) == 1
	})

	server := one(t, spans, "POST /v1/chat/completions")
	route := one(t, spans, "route")
	signal := one(t, spans, "signal keyword proof")
	decision := one(t, spans, "decision hard_math")
	plug := one(t, spans, "plugin system_prompt")
	call := one(t, spans, "chat big")
	for _, s := range spans {
		if s.TraceID != clientTraceID {
			t.Errorf("span %q is in trace %s, not the client's %s", s.Name, s.TraceID, clientTraceID)
		}
	}
	parents := []struct {
		child, parent otlptest.Span
		parentID      string
	}{
		{server, otlptest.Span{Name: "the client's span"}, clientSpanID},
		{route, server, server.SpanID},
		{signal, route, route.SpanID},
		{decision, route, route.SpanID},
		{plug, server, server.SpanID},
		{call, server, server.SpanID},
	}
	for _, p := range parents {
		if p.child.ParentSpanID != p.parentID {
			t.Errorf("%q has parent %s, want %q (%s)", p.child.Name, p.child.ParentSpanID, p.parent.Name, p.parentID)
		}
	}
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER || call.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds: server %v, model call %v", server.Kind, call.Kind)
	}
	if server.Attrs["http.response.status_code"] != int64(200) || server.Attrs["junction.decision"] != "hard_math" {
		t.Errorf("server span attributes: %v", server.Attrs)
	}
	if decision.Attrs["junction.model"] != "big" || route.Attrs["junction.recipe"] != "default" {
		t.Errorf("decision %v, route %v", decision.Attrs, route.Attrs)
	}
	if signal.Attrs["junction.signal.matched"] != true || signal.Attrs["junction.signal.kind"] != "keyword" {
		t.Errorf("signal attributes: %v", signal.Attrs)
	}
	if plug.Attrs["junction.plugin.type"] != "system_prompt" || plug.Attrs["junction.plugin.mode"] != "live" ||
		plug.Attrs["junction.plugin.runtime"] != "native" || plug.Attrs["junction.plugin.status"] != "applied" {
		t.Errorf("plugin attributes: %v", plug.Attrs)
	}

	// The model call: GenAI conventions, from the backend's real answer.
	var answer struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"gen_ai.operation.name":      "chat",
		"gen_ai.provider.name":       "openai",
		"gen_ai.request.model":       "big",
		"gen_ai.response.model":      answer.Model,
		"gen_ai.response.id":         answer.ID,
		"gen_ai.usage.input_tokens":  answer.Usage.PromptTokens,
		"gen_ai.usage.output_tokens": answer.Usage.CompletionTokens,
		"server.address":             "127.0.0.1",
		"http.response.status_code":  int64(200),
	}
	for k, v := range want {
		if call.Attrs[k] != v {
			t.Errorf("model call %s = %v, want %v", k, call.Attrs[k], v)
		}
	}
	if answer.ID == "" || answer.Usage.PromptTokens == 0 {
		t.Fatalf("the backend's answer has no id or usage: %s", b)
	}
	if fr, _ := call.Attrs["gen_ai.response.finish_reasons"].([]any); len(fr) != 1 || fr[0] != "stop" {
		t.Errorf("finish reasons: %v", call.Attrs["gen_ai.response.finish_reasons"])
	}
	if _, ok := call.Attrs["server.port"].(int64); !ok {
		t.Errorf("server.port: %v", call.Attrs["server.port"])
	}

	// The backend was told the model call's span is its parent.
	got := e.ups["big"].last(t).Header.Get("traceparent")
	tid, pid := traceparentOf(t, got)
	if tid != clientTraceID || pid != call.SpanID {
		t.Errorf("backend got traceparent %q, want trace %s parent %s (the model call)", got, clientTraceID, call.SpanID)
	}

	// Resource: service.name, version and the configured attributes.
	if server.Resource["service.name"] != "junction" || server.Resource["service.version"] != "test" ||
		server.Resource["deployment.environment.name"] != "test" {
		t.Errorf("resource: %v", server.Resource)
	}

	// Prompts and answers are not captured by default.
	for _, s := range spans {
		for k, v := range s.Attrs {
			if str, ok := v.(string); ok && strings.Contains(str, "zanzibar") {
				t.Errorf("span %q attribute %s holds the prompt: %q", s.Name, k, str)
			}
			if k == "gen_ai.input.messages" || k == "gen_ai.output.messages" {
				t.Errorf("span %q has %s without capture_content", s.Name, k)
			}
		}
	}
}

// TestTraceOfAStreamOverHTTPWithContent exports over OTLP/HTTP with
// capture_content on: the model call of a streamed answer holds the
// prompt, the streamed text, the finish reason and the usage the stream
// reported; a request without traceparent starts a new trace that reaches
// the backend.
func TestTraceOfAStreamOverHTTPWithContent(t *testing.T) {
	rcv := otlptest.NewHTTP(t)
	tr := newTracer(t, recipes.Tracing{CaptureContent: true,
		Exporter: recipes.TracingExporter{Protocol: recipes.TracingProtocolHTTP, Endpoint: rcv.URL}})
	e := newEnv(t, withTracer(tr))

	body := fmt.Sprintf(`{"model":"auto","stream":true,"messages":[{"role":"user","content":%q}]}`, "write python for zanzibar")
	resp, b := e.post("/v1/chat/completions", body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.WaitFor(t, 10*time.Second, func(s []otlptest.Span) bool {
		return len(otlptest.Named(s, "POST /v1/chat/completions")) == 1
	})
	server := one(t, spans, "POST /v1/chat/completions")
	call := one(t, spans, "chat coder")
	if server.ParentSpanID != "" || call.ParentSpanID != server.SpanID {
		t.Errorf("server parent %q; model call parent %q, want %s", server.ParentSpanID, call.ParentSpanID, server.SpanID)
	}
	if in, _ := call.Attrs["gen_ai.input.messages"].(string); !strings.Contains(in, "write python for zanzibar") {
		t.Errorf("gen_ai.input.messages = %q", in)
	}
	var text strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &c) == nil && len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if out, _ := call.Attrs["gen_ai.output.messages"].(string); text.Len() == 0 || out != text.String() {
		t.Errorf("gen_ai.output.messages = %q, want the streamed text %q", out, text.String())
	}
	if fr, _ := call.Attrs["gen_ai.response.finish_reasons"].([]any); len(fr) != 1 || fr[0] != "stop" {
		t.Errorf("finish reasons: %v", call.Attrs["gen_ai.response.finish_reasons"])
	}
	if n, _ := call.Attrs["gen_ai.usage.output_tokens"].(int64); n == 0 {
		t.Errorf("usage from the stream: %v", call.Attrs)
	}
	if call.Attrs["gen_ai.provider.name"] != "vllm" || call.Attrs["junction.stream"] != true {
		t.Errorf("provider/stream: %v", call.Attrs)
	}
	tid, pid := traceparentOf(t, e.ups["coder"].last(t).Header.Get("traceparent"))
	if tid != call.TraceID || pid != call.SpanID {
		t.Errorf("backend traceparent: trace %s parent %s, want %s %s", tid, pid, call.TraceID, call.SpanID)
	}
}

// TestTraceparentPassesThroughWhenTracingIsOff: without a tracer the
// backend gets the client's traceparent and tracestate as they came, so its
// spans still join the client's trace.
func TestTraceparentPassesThroughWhenTracingIsOff(t *testing.T) {
	e := newEnv(t)
	tp := "00-" + clientTraceID + "-" + clientSpanID + "-01"
	resp, b := e.post("/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"hello"}]}`,
		"traceparent", tp, "tracestate", "vendor=1")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	h := e.ups["small"].last(t).Header
	if h.Get("traceparent") != tp || h.Get("tracestate") != "vendor=1" {
		t.Errorf("backend got traceparent %q tracestate %q", h.Get("traceparent"), h.Get("tracestate"))
	}
	resp, _ = e.post("/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"hello"}]}`)
	if resp.StatusCode != 200 || e.ups["small"].last(t).Header.Get("traceparent") != "" {
		t.Errorf("a request without traceparent: backend got %q", e.ups["small"].last(t).Header.Get("traceparent"))
	}
}

// TestEveryAttemptIsASpan: a retry and a fallback make one "chat {model}"
// span per upstream attempt, all children of the request's span, the
// failed ones marked with the status they got; each backend call carries
// its own attempt's span as traceparent.
func TestEveryAttemptIsASpan(t *testing.T) {
	rcv := otlptest.NewGRPC(t)
	tr := newTracer(t, recipes.Tracing{Exporter: recipes.TracingExporter{Endpoint: rcv.Addr}})
	e := newEnv(t, withTracer(tr), withPolicy(`[{model: small, use_reasoning: false}, {model: big, use_reasoning: true}]`,
		`        reliability: {retry_count: 1, retry_back_off_base: 1ms}
        fallback: {enabled: true}
`))
	h, calls := failing(2, http.StatusBadGateway, nil, demo())
	e.ups["small"].setHandler(h)
	resp, body := e.post("/v1/chat/completions", chatBody(false))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(dataplane.HeaderAttempts) != "3" || calls.Load() != 2 {
		t.Fatalf("status %d, attempts %q, small called %d: %s", resp.StatusCode, resp.Header.Get(dataplane.HeaderAttempts), calls.Load(), body)
	}
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.WaitFor(t, 10*time.Second, func(s []otlptest.Span) bool {
		return len(otlptest.Named(s, "POST /v1/chat/completions")) == 1
	})
	server := one(t, spans, "POST /v1/chat/completions")
	failed := otlptest.Named(spans, "chat small")
	answered := one(t, spans, "chat big")
	if len(failed) != 2 {
		t.Fatalf("%d spans for small's attempts, want 2:\n%s", len(failed), otlptest.Describe(spans))
	}
	for _, s := range append(failed, answered) {
		if s.ParentSpanID != server.SpanID {
			t.Errorf("attempt %q is not a child of the request span", s.Name)
		}
	}
	for _, s := range failed {
		if !s.StatusError || s.Attrs["http.response.status_code"] != int64(502) || s.Attrs["error.type"] != "502" {
			t.Errorf("failed attempt: error %v, attributes %v", s.StatusError, s.Attrs)
		}
	}
	if answered.StatusError || answered.Attrs["gen_ai.request.model"] != "big" || answered.Attrs["gen_ai.response.model"] == nil {
		t.Errorf("answering attempt: error %v, attributes %v", answered.StatusError, answered.Attrs)
	}
	_, pid := traceparentOf(t, e.ups["big"].last(t).Header.Get("traceparent"))
	if pid != answered.SpanID {
		t.Errorf("big got parent %s, want its attempt's span %s", pid, answered.SpanID)
	}
	seen := map[string]bool{}
	for _, r := range e.ups["small"].reqs {
		_, pid := traceparentOf(t, r.Header.Get("traceparent"))
		seen[pid] = true
	}
	if !seen[failed[0].SpanID] || !seen[failed[1].SpanID] {
		t.Errorf("small's calls carried parents %v, want its attempts' spans %s and %s", seen, failed[0].SpanID, failed[1].SpanID)
	}
}
