package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// A model with api_format anthropic is reached through the Messages API: the
// upstream receives a Messages request at /v1/messages with x-api-key and
// anthropic-version, and the OpenAI client reads chat completions back,
// streamed and not, with usage metered.
func TestAnthropicUpstreamThroughOpenAIClient(t *testing.T) {
	t.Setenv("JUNCTION_TEST_ANTHROPIC_KEY", "sk-ant-test")
	e := newEnv(t)
	params := openai.ChatCompletionNewParams{
		Model:               "claude",
		MaxCompletionTokens: openai.Int(2000),
		ReasoningEffort:     openai.ReasoningEffortLow,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage("hello anthropic"),
		},
	}
	cc, err := e.client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	want := `[demo:claude anthropic] reasoning on (thinking.budget_tokens=1024) — you said: "hello anthropic"`
	if len(cc.Choices) != 1 || cc.Choices[0].Message.Content != want || cc.Choices[0].FinishReason != "stop" {
		t.Fatalf("answer %+v", cc.Choices)
	}
	if cc.Usage.PromptTokens == 0 || cc.Usage.CompletionTokens == 0 {
		t.Fatalf("usage %+v", cc.Usage)
	}
	got := e.ups["claude"].last(t)
	if got.Path != "/v1/messages" || got.Header.Get("X-Api-Key") != "sk-ant-test" || got.Header.Get("Authorization") != "" ||
		got.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Fatalf("upstream request %s %v", got.Path, got.Header)
	}
	sys, _ := json.Marshal(got.Body["system"])
	if string(sys) != `[{"text":"Be brief.","type":"text"}]` || got.Body["max_tokens"] != float64(2000) || got.Body["messages"] == nil {
		t.Fatalf("upstream body %v", got.Body)
	}
	if _, ok := got.Body["reasoning_effort"]; ok {
		t.Fatalf("chat-only fields must not reach a Messages API backend: %v", got.Body)
	}

	stream := e.client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != want || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("streamed %+v", acc.Choices)
	}
	if acc.Usage.CompletionTokens != 0 {
		t.Fatalf("the client did not ask for usage, yet got %+v", acc.Usage)
	}
	if e.scalar("llm_model_requests_total", map[string]string{"model": "claude"}) != 2 {
		t.Fatal("both requests are counted for the model")
	}
	if e.scalar("llm_model_completion_tokens_total", map[string]string{"model": "claude"}) != 2*float64(cc.Usage.CompletionTokens) {
		t.Fatalf("completion tokens metered: %v", e.scalar("llm_model_completion_tokens_total", map[string]string{"model": "claude"}))
	}
}

func TestAnthropicUpstreamErrorsAndRefusals(t *testing.T) {
	e := newEnv(t)
	// What the Messages API cannot do is refused before any backend call.
	resp, b := e.post("/v1/chat/completions", `{"model":"claude","n":2,"messages":[{"role":"user","content":"hi"}]}`)
	eb := decodeError(t, b)
	if resp.StatusCode != 400 || eb.Error.Param == nil || *eb.Error.Param != "n" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if e.ups["claude"].count() != 0 {
		t.Fatal("a refused request must not reach the backend")
	}
	// A Messages API error comes back as an OpenAI-style error, status kept.
	e.ups["claude"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	}))
	resp, b = e.post("/v1/chat/completions", `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`)
	eb = decodeError(t, b)
	if resp.StatusCode != 529 || eb.Error.Type != "overloaded_error" || eb.Error.Message != "Overloaded" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	// An answer that is not a Messages API message is the backend's fault.
	e.ups["claude"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[]}`))
	}))
	resp, b = e.post("/v1/chat/completions", `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 502 || !strings.Contains(string(b), "not a Messages API answer") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	// An error event mid-stream reaches the client as an error event.
	e.ups["claude"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude\",\"usage\":{\"input_tokens\":3}}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))
	}))
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "claude", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "Overloaded") {
		t.Fatalf("stream error %v", err)
	}
}
