package translate

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// ResponsesRequest is what a Responses API request asked for that its answer
// echoes back.
type ResponsesRequest struct {
	ID                 string
	Model              string
	Instructions       *string
	MaxOutputTokens    *int64
	Temperature, TopP  *float64
	ParallelToolCalls  bool
	ToolChoice         json.RawMessage
	Tools              json.RawMessage
	Text               json.RawMessage
	Reasoning          json.RawMessage
	Metadata           json.RawMessage
	Stream             bool
	PreviousResponseID string
}

// responsesKnown are the Responses API fields translation consumes (or
// accepts and ignores); others pass through to the chat request.
var responsesKnown = map[string]bool{
	"model": true, "input": true, "instructions": true, "max_output_tokens": true, "temperature": true,
	"top_p": true, "tools": true, "tool_choice": true, "parallel_tool_calls": true, "text": true,
	"reasoning": true, "metadata": true, "stream": true, "user": true, "store": true,
	"previous_response_id": true, "truncation": true, "include": true, "background": true,
	"service_tier": true, "stream_options": true,
}

// ResponsesToChat translates a Responses API request body into a chat
// completion request body (streamed answers always carry usage: the answer
// reports it). Responses-only features this service cannot provide
// (previous_response_id and background need the response store; built-in
// tools such as web_search) are refused with an *Error naming the field.
// store is accepted and ignored: nothing is stored, so nothing can be
// retrieved later (GET /v1/responses/{id} says so).
func ResponsesToChat(body []byte) ([]byte, *ResponsesRequest, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return nil, nil, badf("", "the request body must be a JSON object with model and input")
	}
	r := &ResponsesRequest{ID: newID("resp_"), ParallelToolCalls: true}
	if err := unmarshalField(f, "model", &r.Model); err != nil {
		return nil, nil, err
	}
	chat := map[string]any{"model": r.Model}
	var msgs []map[string]any
	if raw, ok := f["instructions"]; ok && !isNullOrEmpty(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, nil, badf("instructions", "instructions must be a string")
		}
		r.Instructions = &s
		msgs = append(msgs, map[string]any{"role": "system", "content": s})
	}
	in, ok := f["input"]
	if !ok || isNullOrEmpty(in) {
		return nil, nil, badf("input", "input is required: a string, or a list of input items")
	}
	items, err := inputMessages(in)
	if err != nil {
		return nil, nil, err
	}
	msgs = append(msgs, items...)
	chat["messages"] = msgs

	for _, name := range []string{"previous_response_id", "background"} {
		if raw, ok := f[name]; ok && !isNullOrEmpty(raw) && string(raw) != "false" {
			return nil, nil, badf(name, "%s needs the response store, which this service does not keep; send the whole conversation in input", name)
		}
	}
	if raw, ok := f["max_output_tokens"]; ok && !isNullOrEmpty(raw) {
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
			return nil, nil, badf("max_output_tokens", "max_output_tokens must be a positive integer")
		}
		r.MaxOutputTokens = &n
		chat["max_completion_tokens"] = n
	}
	for name, dst := range map[string]**float64{"temperature": &r.Temperature, "top_p": &r.TopP} {
		if raw, ok := f[name]; ok && !isNullOrEmpty(raw) {
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, nil, badf(name, "%s must be a number", name)
			}
			*dst = &v
			chat[name] = v
		}
	}
	if raw, ok := f["parallel_tool_calls"]; ok && !isNullOrEmpty(raw) {
		if err := json.Unmarshal(raw, &r.ParallelToolCalls); err != nil {
			return nil, nil, badf("parallel_tool_calls", "parallel_tool_calls must be a boolean")
		}
		chat["parallel_tool_calls"] = r.ParallelToolCalls
	}
	if raw, ok := f["tools"]; ok && !isNullOrEmpty(raw) {
		tools, err := responsesTools(raw)
		if err != nil {
			return nil, nil, err
		}
		r.Tools = raw
		chat["tools"] = tools
	}
	if raw, ok := f["tool_choice"]; ok && !isNullOrEmpty(raw) {
		tc, err := responsesToolChoice(raw)
		if err != nil {
			return nil, nil, err
		}
		r.ToolChoice = raw
		chat["tool_choice"] = tc
	}
	if raw, ok := f["text"]; ok && !isNullOrEmpty(raw) {
		rf, err := responsesFormat(raw)
		if err != nil {
			return nil, nil, err
		}
		r.Text = raw
		if rf != nil {
			chat["response_format"] = rf
		}
	}
	if raw, ok := f["reasoning"]; ok && !isNullOrEmpty(raw) {
		var rs struct {
			Effort *string `json:"effort"`
		}
		if err := json.Unmarshal(raw, &rs); err != nil {
			return nil, nil, badf("reasoning", "reasoning must be an object like {\"effort\":\"low\"}")
		}
		r.Reasoning = raw
		if rs.Effort != nil {
			chat["reasoning_effort"] = *rs.Effort
		}
	}
	if raw, ok := f["metadata"]; ok && !isNullOrEmpty(raw) {
		r.Metadata = raw
	}
	if raw, ok := f["user"]; ok && !isNullOrEmpty(raw) {
		chat["user"] = raw
	}
	if raw, ok := f["stream"]; ok && !isNullOrEmpty(raw) {
		if err := json.Unmarshal(raw, &r.Stream); err != nil {
			return nil, nil, badf("stream", "stream must be a boolean")
		}
		if r.Stream {
			chat["stream"] = true
			chat["stream_options"] = map[string]any{"include_usage": true}
		}
	}
	for k, v := range f {
		if !responsesKnown[k] {
			chat[k] = v // for the backend to judge, as on the chat path
		}
	}
	b, err := json.Marshal(chat)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the chat request: %w", err)
	}
	return b, r, nil
}

// inputMessages turns input (a string or a list of items) into chat
// messages. Function calls become assistant tool_calls (consecutive ones in
// one message) and their outputs tool messages.
func inputMessages(raw json.RawMessage) ([]map[string]any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []map[string]any{{"role": "user", "content": s}}, nil
	}
	var items []struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badf("input", "input must be a string or a list of input items")
	}
	var msgs []map[string]any
	for i, it := range items {
		p := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			switch it.Role {
			case "user", "assistant", "system", "developer":
			default:
				return nil, badf(p+".role", "role must be user, assistant, system or developer (got %q)", it.Role)
			}
			content, err := inputContent(it.Content, p+".content")
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, map[string]any{"role": it.Role, "content": content})
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, badf(p, "a function_call item needs call_id and name")
			}
			call := map[string]any{"id": it.CallID, "type": "function", "function": map[string]any{"name": it.Name, "arguments": it.Arguments}}
			if n := len(msgs); n > 0 && msgs[n-1]["role"] == "assistant" && msgs[n-1]["tool_calls"] != nil {
				msgs[n-1]["tool_calls"] = append(msgs[n-1]["tool_calls"].([]any), call)
				continue
			}
			msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}})
		case "function_call_output":
			if it.CallID == "" {
				return nil, badf(p+".call_id", "a function_call_output item needs call_id")
			}
			var out string
			if json.Unmarshal(it.Output, &out) != nil {
				out = string(it.Output)
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": it.CallID, "content": out})
		default:
			return nil, badf(p+".type", "input item type %q is not served here (message, function_call and function_call_output are)", it.Type)
		}
	}
	if len(msgs) == 0 {
		return nil, badf("input", "input has no items")
	}
	return msgs, nil
}

// inputContent turns an input message's content into chat content.
func inputContent(raw json.RawMessage, param string) (any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL string `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badf(param, "content must be a string or a list of content parts")
	}
	out := make([]any, 0, len(parts))
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			out = append(out, map[string]any{"type": "text", "text": p.Text})
		case "input_image":
			if p.ImageURL == "" {
				return nil, badf(fmt.Sprintf("%s[%d].image_url", param, j), "an input_image part needs image_url (file_id needs a file store, which this service does not keep)")
			}
			out = append(out, map[string]any{"type": "image_url", "image_url": map[string]any{"url": p.ImageURL}})
		default:
			return nil, badf(fmt.Sprintf("%s[%d].type", param, j), "content part %q is not served here", p.Type)
		}
	}
	return out, nil
}

func responsesTools(raw json.RawMessage) ([]any, error) {
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, badf("tools", "tools must be a list of tools")
	}
	out := make([]any, 0, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, badf(fmt.Sprintf("tools[%d].type", i), "tool type %q is a hosted tool this service does not provide; only function tools are served", t.Type)
		}
		fn := map[string]any{"name": t.Name}
		if t.Description != "" {
			fn["description"] = t.Description
		}
		if !isNullOrEmpty(t.Parameters) {
			fn["parameters"] = t.Parameters
		}
		if t.Strict != nil {
			fn["strict"] = *t.Strict
		}
		out = append(out, map[string]any{"type": "function", "function": fn})
	}
	return out, nil
}

func responsesToolChoice(raw json.RawMessage) (any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return s, nil
		}
		return nil, badf("tool_choice", "tool_choice must be auto, none, required or {\"type\":\"function\",\"name\":…}")
	}
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &tc) != nil || tc.Type != "function" || tc.Name == "" {
		return nil, badf("tool_choice", "tool_choice must be auto, none, required or {\"type\":\"function\",\"name\":…}")
	}
	return map[string]any{"type": "function", "function": map[string]any{"name": tc.Name}}, nil
}

// responsesFormat turns text.format into a chat response_format (nil for
// plain text).
func responsesFormat(raw json.RawMessage) (any, error) {
	var t struct {
		Format *struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"format"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, badf("text", "text must be an object like {\"format\":{\"type\":\"text\"}}")
	}
	if t.Format == nil || t.Format.Type == "text" {
		return nil, nil
	}
	switch t.Format.Type {
	case "json_object":
		return map[string]any{"type": "json_object"}, nil
	case "json_schema":
		js := map[string]any{"name": t.Format.Name, "schema": t.Format.Schema}
		if t.Format.Strict != nil {
			js["strict"] = *t.Format.Strict
		}
		return map[string]any{"type": "json_schema", "json_schema": js}, nil
	}
	return nil, badf("text.format.type", "text.format.type must be text, json_object or json_schema (got %q)", t.Format.Type)
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// The answer.

type chatAnswer struct {
	Model   string `json:"model"`
	Created int64  `json:"created"`
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage           *chatUsage      `json:"usage"`
	RoutingMetadata json.RawMessage `json:"routing_metadata"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *chatUsage) responses() map[string]any {
	if u == nil {
		return nil
	}
	var cached, reasoning int64
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		reasoning = u.CompletionTokensDetails.ReasoningTokens
	}
	return map[string]any{
		"input_tokens": u.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": cached},
		"output_tokens": u.CompletionTokens, "output_tokens_details": map[string]any{"reasoning_tokens": reasoning},
		"total_tokens": u.PromptTokens + u.CompletionTokens,
	}
}

// response is the Responses API object for r in a given state.
func (r *ResponsesRequest) response(status string, created int64, model string, output []any, usage map[string]any, incomplete string) map[string]any {
	if model == "" {
		model = r.Model
	}
	var details any
	if incomplete != "" {
		details = map[string]any{"reason": incomplete}
	}
	text := r.Text
	if text == nil {
		text = json.RawMessage(`{"format":{"type":"text"}}`)
	}
	toolChoice := r.ToolChoice
	if toolChoice == nil {
		toolChoice = json.RawMessage(`"auto"`)
	}
	tools := r.Tools
	if tools == nil {
		tools = json.RawMessage(`[]`)
	}
	metadata := r.Metadata
	if metadata == nil {
		metadata = json.RawMessage(`{}`)
	}
	reasoning := r.Reasoning
	if reasoning == nil {
		reasoning = json.RawMessage(`{"effort":null,"summary":null}`)
	}
	if output == nil {
		output = []any{}
	}
	return map[string]any{
		"id": r.ID, "object": "response", "created_at": created, "status": status, "model": model,
		"output": output, "usage": usage, "error": nil, "incomplete_details": details,
		"instructions": r.Instructions, "max_output_tokens": r.MaxOutputTokens,
		"temperature": r.Temperature, "top_p": r.TopP, "parallel_tool_calls": r.ParallelToolCalls,
		"tool_choice": toolChoice, "tools": tools, "text": text, "metadata": metadata, "reasoning": reasoning,
		"previous_response_id": nil, "store": false, "truncation": "disabled",
	}
}

// incompleteReason maps a chat finish_reason to the response status and
// incomplete_details.reason.
func incompleteReason(finish string) (status, reason string) {
	switch finish {
	case "length":
		return "incomplete", "max_output_tokens"
	case "content_filter":
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

func messageItem(id, text, status string) map[string]any {
	return map[string]any{"id": id, "type": "message", "status": status, "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

func functionCallItem(id, callID, name, args, status string) map[string]any {
	return map[string]any{"id": id, "type": "function_call", "status": status, "call_id": callID, "name": name, "arguments": args}
}

// ChatToResponse translates a chat.completion body into the Responses API
// object answering r. routing_metadata, when present, is kept.
func ChatToResponse(body []byte, r *ResponsesRequest) ([]byte, error) {
	var a chatAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("the chat answer is not a chat.completion: %w", err)
	}
	if len(a.Choices) == 0 {
		return nil, fmt.Errorf("the chat answer has no choices")
	}
	c := a.Choices[0]
	var output []any
	text := ""
	if c.Message.Content != nil {
		text = *c.Message.Content
	}
	if text != "" || len(c.Message.ToolCalls) == 0 {
		output = append(output, messageItem(newID("msg_"), text, "completed"))
	}
	for _, tc := range c.Message.ToolCalls {
		output = append(output, functionCallItem(newID("fc_"), tc.ID, tc.Function.Name, tc.Function.Arguments, "completed"))
	}
	status, reason := incompleteReason(c.FinishReason)
	resp := r.response(status, a.Created, a.Model, output, a.Usage.responses(), reason)
	if len(a.RoutingMetadata) > 0 {
		resp["routing_metadata"] = a.RoutingMetadata
	}
	return json.Marshal(resp)
}

// ResponseEvent is one server-sent event of a streamed response.
type ResponseEvent struct {
	Name string
	Data []byte
}

// ResponsesStream translates chat.completion.chunk data into the Responses
// API's streaming events. It is not safe for concurrent use.
type ResponsesStream struct {
	r       *ResponsesRequest
	seq     int
	created int64
	model   string
	started bool
	// text is the message item, when one is open.
	textID  string
	text    strings.Builder
	textIdx int
	calls   []*streamCall
	// byIndex maps a chat tool_calls index to its call.
	byIndex map[int]*streamCall
	output  []any
	finish  string
	usage   map[string]any
	ended   bool
}

type streamCall struct {
	id, callID, name string
	args             strings.Builder
	outputIndex      int
}

// NewResponsesStream starts translating the stream answering r; created is
// the response's Unix time.
func NewResponsesStream(r *ResponsesRequest, created int64) *ResponsesStream {
	return &ResponsesStream{r: r, created: created, byIndex: map[int]*streamCall{}}
}

func (s *ResponsesStream) emit(out []ResponseEvent, name string, fields map[string]any) []ResponseEvent {
	fields["type"] = name
	fields["sequence_number"] = s.seq
	s.seq++
	b, _ := json.Marshal(fields)
	return append(out, ResponseEvent{Name: name, Data: b})
}

type streamChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// Chunk translates one chunk's data (or [DONE]) into events. [DONE] gives
// the closing events of every open item and response.completed (or
// response.incomplete); an error chunk gives an error event.
func (s *ResponsesStream) Chunk(data []byte) ([]ResponseEvent, error) {
	if s.ended {
		return nil, nil
	}
	var out []ResponseEvent
	if !s.started {
		s.started = true
		initial := s.r.response("in_progress", s.created, s.model, nil, nil, "")
		out = s.emit(out, "response.created", map[string]any{"response": initial})
		out = s.emit(out, "response.in_progress", map[string]any{"response": initial})
	}
	if string(data) == "[DONE]" {
		return s.finishAll(out), nil
	}
	var c streamChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("a chat chunk is not JSON: %w", err)
	}
	if c.Error != nil {
		s.ended = true
		code := c.Error.Type
		if c.Error.Code != nil {
			code = *c.Error.Code
		}
		return s.emit(out, "error", map[string]any{"code": code, "message": c.Error.Message, "param": nil}), nil
	}
	if c.Model != "" {
		s.model = c.Model
	}
	if c.Usage != nil {
		s.usage = c.Usage.responses()
	}
	for _, ch := range c.Choices {
		if d := ch.Delta.Content; d != nil && *d != "" {
			if s.textID == "" {
				s.textID = newID("msg_")
				s.textIdx = len(s.output)
				s.output = append(s.output, nil)
				out = s.emit(out, "response.output_item.added", map[string]any{"output_index": s.textIdx,
					"item": map[string]any{"id": s.textID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
				out = s.emit(out, "response.content_part.added", map[string]any{"item_id": s.textID, "output_index": s.textIdx,
					"content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			}
			s.text.WriteString(*d)
			out = s.emit(out, "response.output_text.delta", map[string]any{"item_id": s.textID, "output_index": s.textIdx,
				"content_index": 0, "delta": *d})
		}
		for _, tc := range ch.Delta.ToolCalls {
			call, ok := s.byIndex[tc.Index]
			if !ok {
				call = &streamCall{id: newID("fc_"), callID: tc.ID, name: tc.Function.Name, outputIndex: len(s.output)}
				s.output = append(s.output, nil)
				s.byIndex[tc.Index] = call
				s.calls = append(s.calls, call)
				out = s.emit(out, "response.output_item.added", map[string]any{"output_index": call.outputIndex,
					"item": functionCallItem(call.id, call.callID, call.name, "", "in_progress")})
			}
			if tc.Function.Arguments != "" {
				call.args.WriteString(tc.Function.Arguments)
				out = s.emit(out, "response.function_call_arguments.delta", map[string]any{"item_id": call.id,
					"output_index": call.outputIndex, "delta": tc.Function.Arguments})
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finish = *ch.FinishReason
		}
	}
	return out, nil
}

func (s *ResponsesStream) finishAll(out []ResponseEvent) []ResponseEvent {
	s.ended = true
	if s.textID != "" {
		text := s.text.String()
		out = s.emit(out, "response.output_text.done", map[string]any{"item_id": s.textID, "output_index": s.textIdx, "content_index": 0, "text": text})
		out = s.emit(out, "response.content_part.done", map[string]any{"item_id": s.textID, "output_index": s.textIdx, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		item := messageItem(s.textID, text, "completed")
		s.output[s.textIdx] = item
		out = s.emit(out, "response.output_item.done", map[string]any{"output_index": s.textIdx, "item": item})
	}
	for _, c := range s.calls {
		args := c.args.String()
		out = s.emit(out, "response.function_call_arguments.done", map[string]any{"item_id": c.id, "output_index": c.outputIndex, "arguments": args})
		item := functionCallItem(c.id, c.callID, c.name, args, "completed")
		s.output[c.outputIndex] = item
		out = s.emit(out, "response.output_item.done", map[string]any{"output_index": c.outputIndex, "item": item})
	}
	if s.output == nil {
		// An empty answer still has its (empty) message, as the whole answer does.
		id := newID("msg_")
		s.output = []any{messageItem(id, "", "completed")}
	}
	status, reason := incompleteReason(s.finish)
	name := "response.completed"
	if status == "incomplete" {
		name = "response.incomplete"
	}
	return s.emit(out, name, map[string]any{"response": s.r.response(status, s.created, s.model, s.output, s.usage, reason)})
}

// Ended reports whether the stream is over ([DONE] or an error seen).
func (s *ResponsesStream) Ended() bool { return s.ended }

// ResponsesBody translates a complete chat answer, a chat.completion or (with
// stream) a whole chat event stream, into the Responses API: for answers a
// front end holds whole, such as fast responses. created is the response's
// Unix time for a stream.
func ResponsesBody(body []byte, stream bool, r *ResponsesRequest, created int64) ([]byte, error) {
	if !stream {
		return ChatToResponse(body, r)
	}
	s := NewResponsesStream(r, created)
	var out []byte
	for _, ev := range strings.Split(string(body), "\n\n") {
		for _, line := range strings.Split(ev, "\n") {
			data, ok := strings.CutPrefix(line, "data:")
			if !ok {
				continue
			}
			events, err := s.Chunk([]byte(strings.TrimPrefix(data, " ")))
			if err != nil {
				return nil, err
			}
			out = AppendEvents(out, events)
		}
	}
	if !s.Ended() {
		out = AppendEvents(out, s.finishAll(nil))
	}
	return out, nil
}

// AppendEvents appends events in server-sent-event form to dst.
func AppendEvents(dst []byte, events []ResponseEvent) []byte {
	for _, ev := range events {
		dst = fmt.Appendf(dst, "event: %s\ndata: %s\n\n", ev.Name, ev.Data)
	}
	return dst
}
