package translate_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/junction-router/junction/internal/demobackend"
	"github.com/junction-router/junction/internal/translate"
)

// demoAnswer asks the demo backend's Messages API for an answer, streamed or
// not, and returns its raw body.
func demoAnswer(t *testing.T, stream bool) []byte {
	t.Helper()
	body := `{"model":"claude-demo","max_tokens":100,"messages":[{"role":"user","content":"hello"}],"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
	rec := httptest.NewRecorder()
	demobackend.New(demobackend.Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body)))
	if rec.Code != 200 {
		t.Fatalf("demo answered %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

func TestAnthropicToChatReadByOpenAIClientTypes(t *testing.T) {
	out, err := translate.AnthropicToChat(demoAnswer(t, false), 1700000000)
	if err != nil {
		t.Fatal(err)
	}
	var cc openai.ChatCompletion
	if err := json.Unmarshal(out, &cc); err != nil {
		t.Fatal(err)
	}
	if cc.Object != "chat.completion" || cc.Model != "claude-demo" || len(cc.Choices) != 1 ||
		!strings.Contains(cc.Choices[0].Message.Content, `you said: "hello"`) || cc.Choices[0].FinishReason != "stop" {
		t.Fatalf("%s", out)
	}
	if cc.Usage.PromptTokens == 0 || cc.Usage.TotalTokens != cc.Usage.PromptTokens+cc.Usage.CompletionTokens {
		t.Fatalf("usage %+v", cc.Usage)
	}

	tools := `{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"tool_use",
	  "content":[{"type":"thinking","thinking":"let me see","signature":"s"},{"type":"text","text":"Checking."},
	             {"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Paris"}}],
	  "usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":90,"cache_creation_input_tokens":0}}`
	out, err = translate.AnthropicToChat([]byte(tools), 1)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, out, `{"id":"msg_1","object":"chat.completion","created":1,"model":"m",
	  "choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Checking.","reasoning_content":"let me see",
	    "tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]}}],
	  "usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":90}}}`)

	if _, err := translate.AnthropicToChat([]byte(`{"type":"error"}`), 1); err == nil {
		t.Fatal("an error body is not a message")
	}
}

func TestAnthropicErrorToChat(t *testing.T) {
	got := translate.AnthropicErrorToChat([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	jsonEqual(t, got, `{"error":{"message":"Overloaded","type":"overloaded_error","param":null,"code":null}}`)
	if got := translate.AnthropicErrorToChat([]byte(`upstream said no`)); string(got) != "upstream said no" {
		t.Fatalf("%s", got)
	}
}

// streamChunks translates an Anthropic SSE body into chat chunk data.
func streamChunks(t *testing.T, sse []byte) [][]byte {
	t.Helper()
	s := translate.NewAnthropicStream(1700000000)
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(sse))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		chunks, err := s.Event([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, chunks...)
	}
	if !s.Finished() {
		t.Fatal("the stream did not finish")
	}
	return out
}

func TestAnthropicStreamAccumulatesLikeTheAnswer(t *testing.T) {
	chunks := streamChunks(t, demoAnswer(t, true))
	if string(chunks[len(chunks)-1]) != "[DONE]" {
		t.Fatalf("last chunk %s", chunks[len(chunks)-1])
	}
	var acc openai.ChatCompletionAccumulator
	for _, c := range chunks[:len(chunks)-1] {
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal(c, &chunk); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if !acc.AddChunk(chunk) {
			t.Fatalf("the accumulator refused %s", c)
		}
	}
	whole, err := translate.AnthropicToChat(demoAnswer(t, false), 1700000000)
	if err != nil {
		t.Fatal(err)
	}
	var cc openai.ChatCompletion
	if err := json.Unmarshal(whole, &cc); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != cc.Choices[0].Message.Content || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("streamed %q (%s), whole %q", acc.Choices[0].Message.Content, acc.Choices[0].FinishReason, cc.Choices[0].Message.Content)
	}
	if acc.Usage.CompletionTokens != cc.Usage.CompletionTokens || acc.Usage.PromptTokens != cc.Usage.PromptTokens {
		t.Fatalf("streamed usage %+v, whole %+v", acc.Usage, cc.Usage)
	}
}

func TestAnthropicStreamToolCallsAndErrors(t *testing.T) {
	sse := strings.Join([]string{
		`data: {"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":7,"output_tokens":1}}}`,
		`data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}}`,
		`data: {"type":"content_block_stop","index":0}`,
		`data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}`,
		`data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
		`data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
		`data: {"type":"content_block_stop","index":1}`,
		`data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}}`,
		`data: {"type":"message_stop"}`,
	}, "\n\n")
	chunks := streamChunks(t, []byte(sse))
	var acc openai.ChatCompletionAccumulator
	for _, c := range chunks[:len(chunks)-1] {
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal(c, &chunk); err != nil {
			t.Fatal(err)
		}
		acc.AddChunk(chunk)
	}
	msg := acc.Choices[0].Message
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].ID != "toolu_1" || msg.ToolCalls[0].Function.Name != "weather" ||
		msg.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("accumulated %+v", acc.Choices[0])
	}
	if acc.Usage.PromptTokens != 7 || acc.Usage.CompletionTokens != 12 {
		t.Fatalf("usage %+v", acc.Usage)
	}
	if !bytes.Contains(chunks[1], []byte(`"reasoning_content":"hmm"`)) {
		t.Fatalf("thinking chunk %s", chunks[1])
	}

	s := translate.NewAnthropicStream(1)
	out, err := s.Event([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	if err != nil || len(out) != 1 || !s.Finished() {
		t.Fatalf("%s %v", out, err)
	}
	jsonEqual(t, out[0], `{"error":{"message":"Overloaded","type":"overloaded_error","param":null,"code":null}}`)
	if _, err := translate.NewAnthropicStream(1).Event([]byte(`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"x"}}`)); err == nil {
		t.Fatal("a json delta for an unknown block must fail")
	}
	if _, err := translate.NewAnthropicStream(1).Event([]byte(`not json`)); err == nil {
		t.Fatal("a broken event must fail")
	}
}
