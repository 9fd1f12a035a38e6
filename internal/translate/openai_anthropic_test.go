package translate_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/junction-router/junction/internal/demobackend"
	"github.com/junction-router/junction/internal/translate"
)

func fieldsOf(t *testing.T, body string) map[string]json.RawMessage {
	t.Helper()
	var f map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("got\n %s\nwant\n %s", gb, wb)
	}
}

func TestChatToAnthropicConversation(t *testing.T) {
	in := `{
	  "model": "claude-x", "max_completion_tokens": 2000, "temperature": 0.5, "stop": "END", "stream": true,
	  "stream_options": {"include_usage": true}, "user": "u-1", "seed": 7, "presence_penalty": 0, "n": 1,
	  "top_k": 40,
	  "messages": [
	    {"role": "system", "content": "You are terse."},
	    {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
	    {"role": "user", "content": "Weather in Paris and Rome?"},
	    {"role": "user", "content": [{"type": "text", "text": "Also this:"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
	    {"role": "assistant", "content": null, "tool_calls": [
	      {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
	      {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": ""}}]},
	    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
	    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "rain"}]}
	  ],
	  "tools": [{"type": "function", "function": {"name": "weather", "description": "Weather now", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
	            {"type": "function", "function": {"name": "noargs"}}],
	  "tool_choice": "required", "parallel_tool_calls": false
	}`
	got, err := translate.ChatToAnthropic(fieldsOf(t, in))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, `{
	  "model": "claude-x", "max_tokens": 2000, "temperature": 0.5, "stop_sequences": ["END"], "stream": true,
	  "metadata": {"user_id": "u-1"}, "top_k": 40,
	  "system": [{"type": "text", "text": "You are terse."}, {"type": "text", "text": "Use tools."}],
	  "messages": [
	    {"role": "user", "content": [
	      {"type": "text", "text": "Weather in Paris and Rome?"},
	      {"type": "text", "text": "Also this:"},
	      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]},
	    {"role": "assistant", "content": [
	      {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}},
	      {"type": "tool_use", "id": "call_2", "name": "weather", "input": {}}]},
	    {"role": "user", "content": [
	      {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
	      {"type": "tool_result", "tool_use_id": "call_2", "content": "rain"}]}
	  ],
	  "tools": [{"name": "weather", "description": "Weather now", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
	            {"name": "noargs", "input_schema": {"type": "object", "properties": {}}}],
	  "tool_choice": {"type": "any", "disable_parallel_tool_use": true}
	}`)
}

func TestChatToAnthropicDefaultsAndThinking(t *testing.T) {
	got, err := translate.ChatToAnthropic(fieldsOf(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, `{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)

	got, err = translate.ChatToAnthropic(fieldsOf(t, `{"model":"m","max_tokens":3000,"temperature":0.2,"reasoning_effort":"high","messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"function","function":{"name":"f"}},"tools":[{"type":"function","function":{"name":"f"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, `{"model":"m","max_tokens":3000,"thinking":{"type":"enabled","budget_tokens":2999},
	  "messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
	  "tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"f"}}`)

	got, err = translate.ChatToAnthropic(fieldsOf(t, `{"model":"m","reasoning_effort":"none","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || bytes.Contains(got, []byte("thinking")) {
		t.Fatalf("effort none: %s %v", got, err)
	}
}

func TestChatToAnthropicRefusesWhatItCannotKeep(t *testing.T) {
	tests := []struct{ body, param string }{
		{`{"model":"m","n":2,"messages":[{"role":"user","content":"x"}]}`, "n"},
		{`{"model":"m","logprobs":true,"messages":[{"role":"user","content":"x"}]}`, "logprobs"},
		{`{"model":"m","top_logprobs":2,"messages":[{"role":"user","content":"x"}]}`, "top_logprobs"},
		{`{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"x"}]}`, "response_format"},
		{`{"model":"m","frequency_penalty":0.5,"messages":[{"role":"user","content":"x"}]}`, "frequency_penalty"},
		{`{"model":"m","temperature":1.5,"messages":[{"role":"user","content":"x"}]}`, "temperature"},
		{`{"model":"m","messages":[{"role":"system","content":"only a system prompt"}]}`, "messages"},
		{`{"model":"m","messages":[{"role":"user","content":""}]}`, "messages[0].content"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, "messages[0].content[0].type"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x"}}]}]}`, "messages[0].content[0].image_url.url"},
		{`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{`{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id"},
		{`{"model":"m","tools":[{"type":"web_search"}],"messages":[{"role":"user","content":"x"}]}`, "tools[0].type"},
		{`{"model":"m","max_tokens":1000,"reasoning_effort":"low","messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{`{"model":"m","reasoning_effort":"extreme","messages":[{"role":"user","content":"x"}]}`, "reasoning_effort"},
		{`{"messages":[{"role":"user","content":"x"}]}`, "model"},
	}
	for _, tt := range tests {
		_, err := translate.ChatToAnthropic(fieldsOf(t, tt.body))
		var te *translate.Error
		if !errors.As(err, &te) || te.Param != tt.param || te.Message == "" {
			t.Errorf("%s: err %v, want a translate.Error on %q", tt.body, err, tt.param)
		}
	}
}

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
