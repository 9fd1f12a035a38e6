package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The answer direction of the Anthropic pair: a Messages API answer, error or
// event stream becomes the chat completion the client asked for
// (openai_anthropic.go holds the request direction).

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// chatUsage is the chat-completion usage of a Messages API usage: cached and
// cache-writing input count as prompt tokens, as OpenAI counts them.
func (u anthropicUsage) chatUsage() map[string]any {
	prompt := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	m := map[string]any{
		"prompt_tokens":     prompt,
		"completion_tokens": u.OutputTokens,
		"total_tokens":      prompt + u.OutputTokens,
	}
	if u.CacheReadInputTokens > 0 {
		m["prompt_tokens_details"] = map[string]any{"cached_tokens": u.CacheReadInputTokens}
	}
	if u.CacheCreationInputTokens > 0 {
		// The member OpenAI-compatible gateways add for cache writes, which
		// the chat-completion usage has no field for; cost prices them at
		// cache_write_per_1m.
		m["cache_creation_input_tokens"] = u.CacheCreationInputTokens
	}
	return m
}

type anthropicAnswer struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Model   string `json:"model"`
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
		Thinking string          `json:"thinking"`
	} `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      anthropicUsage `json:"usage"`
}

// finishReason maps a Messages API stop_reason to a chat finish_reason.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn
}

// AnthropicToChat translates a Messages API answer into a chat.completion
// body: text blocks joined as the content, tool_use blocks as tool_calls,
// thinking as reasoning_content (the field vLLM-style servers use), usage
// in chat terms. created is the completion's Unix time.
func AnthropicToChat(body []byte, created int64) ([]byte, error) {
	var a anthropicAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("the Anthropic-style answer is not a message: %w", err)
	}
	if a.Type != "message" {
		return nil, fmt.Errorf("the Anthropic-style answer has type %q, not message", a.Type)
	}
	msg := map[string]any{"role": "assistant"}
	var text, thinking strings.Builder
	var calls []map[string]any
	for _, b := range a.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			thinking.WriteString(b.Thinking)
		case "tool_use":
			args := string(b.Input)
			if isNullOrEmpty(b.Input) {
				args = "{}"
			}
			calls = append(calls, map[string]any{
				"id": b.ID, "type": "function",
				"function": map[string]any{"name": b.Name, "arguments": args},
			})
		}
	}
	if text.Len() > 0 || len(calls) == 0 {
		msg["content"] = text.String()
	} else {
		msg["content"] = nil
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	if thinking.Len() > 0 {
		msg["reasoning_content"] = thinking.String()
	}
	out := map[string]any{
		"id":      a.ID,
		"object":  "chat.completion",
		"created": created,
		"model":   a.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finishReason(a.StopReason)}},
		"usage":   a.Usage.chatUsage(),
	}
	return json.Marshal(out)
}

// AnthropicErrorToChat turns a Messages API error body
// ({"type":"error","error":{"type","message"}}) into an OpenAI-style error
// body; anything else is returned as it is.
func AnthropicErrorToChat(body []byte) []byte {
	var e struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Type != "error" || e.Error == nil {
		return body
	}
	b, err := json.Marshal(map[string]any{"error": map[string]any{
		"message": e.Error.Message, "type": e.Error.Type, "param": nil, "code": nil,
	}})
	if err != nil {
		return body
	}
	return b
}

// AnthropicStream translates a Messages API event stream into chat
// completion chunks, one event at a time. It is not safe for concurrent use.
type AnthropicStream struct {
	created   int64
	id, model string
	usage     anthropicUsage
	finish    string
	// tools maps a content block's index to its tool_calls index.
	tools    map[int]int
	started  bool
	finished bool
}

// NewAnthropicStream starts the translation of one stream; created is the
// chunks' Unix time.
func NewAnthropicStream(created int64) *AnthropicStream {
	return &AnthropicStream{created: created, tools: map[int]int{}}
}

// Done is the data of the chunk stream's last event.
var Done = []byte("[DONE]")

type streamEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID    string         `json:"id"`
		Model string         `json:"model"`
		Usage anthropicUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *struct {
		OutputTokens             *int64 `json:"output_tokens"`
		InputTokens              *int64 `json:"input_tokens"`
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// Event translates one event's data (the JSON after "data:") into the data
// of zero or more chunk events, in order. The stream's end (message_stop)
// gives a usage-only chunk, as include_usage does, then Done. An error event
// gives an OpenAI-style error event and ends the stream.
func (s *AnthropicStream) Event(data []byte) ([][]byte, error) {
	if s.finished {
		return nil, nil
	}
	var ev streamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("an Anthropic-style stream event is not JSON: %w", err)
	}
	switch ev.Type {
	case "message_start":
		if ev.Message == nil {
			return nil, fmt.Errorf("message_start without a message")
		}
		s.id, s.model, s.usage = ev.Message.ID, ev.Message.Model, ev.Message.Usage
		s.started = true
		return s.chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	case "content_block_start":
		if ev.ContentBlock == nil {
			return nil, nil
		}
		switch ev.ContentBlock.Type {
		case "tool_use":
			n := len(s.tools)
			s.tools[ev.Index] = n
			return s.chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": n, "id": ev.ContentBlock.ID, "type": "function",
				"function": map[string]any{"name": ev.ContentBlock.Name, "arguments": ""},
			}}}, nil)
		case "text":
			if ev.ContentBlock.Text != "" {
				return s.chunk(map[string]any{"content": ev.ContentBlock.Text}, nil)
			}
		}
		return nil, nil
	case "content_block_delta":
		if ev.Delta == nil {
			return nil, nil
		}
		switch ev.Delta.Type {
		case "text_delta":
			return s.chunk(map[string]any{"content": ev.Delta.Text}, nil)
		case "thinking_delta":
			return s.chunk(map[string]any{"reasoning_content": ev.Delta.Thinking}, nil)
		case "input_json_delta":
			n, ok := s.tools[ev.Index]
			if !ok {
				return nil, fmt.Errorf("input_json_delta for content block %d, which is not a tool_use block", ev.Index)
			}
			return s.chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": n, "function": map[string]any{"arguments": ev.Delta.PartialJSON},
			}}}, nil)
		}
		return nil, nil // signature_delta and future kinds carry nothing for chat
	case "message_delta":
		if ev.Usage != nil {
			setIf(&s.usage.OutputTokens, ev.Usage.OutputTokens)
			setIf(&s.usage.InputTokens, ev.Usage.InputTokens)
			setIf(&s.usage.CacheCreationInputTokens, ev.Usage.CacheCreationInputTokens)
			setIf(&s.usage.CacheReadInputTokens, ev.Usage.CacheReadInputTokens)
		}
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			s.finish = finishReason(ev.Delta.StopReason)
			return s.chunk(map[string]any{}, &s.finish)
		}
		return nil, nil
	case "message_stop":
		s.finished = true
		u, err := json.Marshal(map[string]any{
			"id": s.id, "object": "chat.completion.chunk", "created": s.created, "model": s.model,
			"choices": []any{}, "usage": s.usage.chatUsage(),
		})
		if err != nil {
			return nil, err
		}
		return [][]byte{u, Done}, nil
	case "error":
		s.finished = true
		msg, typ := "the backend reported an error mid-stream", "upstream_error"
		if ev.Error != nil {
			msg, typ = ev.Error.Message, ev.Error.Type
		}
		b, err := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
		if err != nil {
			return nil, err
		}
		return [][]byte{b}, nil
	}
	return nil, nil // ping, content_block_stop and unknown events
}

// Finished reports whether the stream reached message_stop or an error.
func (s *AnthropicStream) Finished() bool { return s.finished }

func setIf(dst *int64, v *int64) {
	if v != nil {
		*dst = *v
	}
}

func (s *AnthropicStream) chunk(delta map[string]any, finish *string) ([][]byte, error) {
	var fr any
	if finish != nil {
		fr = *finish
	}
	b, err := json.Marshal(map[string]any{
		"id": s.id, "object": "chat.completion.chunk", "created": s.created, "model": s.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fr}},
	})
	if err != nil {
		return nil, err
	}
	return [][]byte{b}, nil
}
