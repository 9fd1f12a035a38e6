package demobackend

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// messagesRequest is what the demo reads of an Anthropic Messages API
// request.
type messagesRequest struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	MaxTokens int             `json:"max_tokens"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream   bool `json:"stream"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// messages answers POST /v1/messages the way the Messages API does: the same
// deterministic text as a chat answer, as one text block, or (when the
// request offers tools and the last user turn asks to "use <tool>") a
// tool_use block; streamed as message_start … message_stop events.
func (s *server) messages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "could not read the body")
		return
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a Messages API request: "+err.Error())
		return
	}
	if len(req.Messages) == 0 {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "messages: at least one message is required")
		return
	}
	if req.MaxTokens < 1 {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: field required")
		return
	}
	if !sleep(r, s.opts.Latency) {
		return
	}
	if s.opts.Status != 0 && s.opts.Status != http.StatusOK {
		writeAnthropicError(w, s.opts.Status, "api_error", fmt.Sprintf("the demo backend was configured to answer %d", s.opts.Status))
		return
	}
	var lastUser string
	prompt := EstimateTokens(contentText(req.System))
	for _, m := range req.Messages {
		text := contentText(m.Content)
		prompt += EstimateTokens(text) + 4
		if m.Role == "user" && text != "" {
			lastUser = text
		}
	}
	model := req.Model
	if model == "" {
		model = "demo"
	}
	reasoning := "reasoning not set"
	if req.Thinking != nil && req.Thinking.Type == "enabled" {
		reasoning = fmt.Sprintf("reasoning on (thinking.budget_tokens=%d)", req.Thinking.BudgetTokens)
	}
	text := fmt.Sprintf("[demo:%s anthropic] %s — you said: %q", model, reasoning, truncate(lastUser, echoLimit))
	out := EstimateTokens(text)
	id := "msg_demo_" + digest(body)
	usage := map[string]int{"input_tokens": prompt, "output_tokens": out}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil, "usage": usage,
		})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	type event struct {
		name string
		data map[string]any
	}
	events := []event{
		{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": prompt, "output_tokens": 1},
		}}},
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}},
		{"ping", map[string]any{"type": "ping"}},
	}
	for _, piece := range split(text, 5) {
		events = append(events, event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": piece}}})
	}
	events = append(events,
		event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		event{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]int{"output_tokens": out}}},
		event{"message_stop", map[string]any{"type": "message_stop"}},
	)
	for i, ev := range events {
		if s.opts.FailAfterChunks > 0 && i >= s.opts.FailAfterChunks {
			panic(http.ErrAbortHandler)
		}
		if i > 0 && !sleep(r, s.opts.ChunkDelay) {
			return
		}
		b, _ := json.Marshal(ev.data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, b); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}
