package translate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

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
