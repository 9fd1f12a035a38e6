package translate

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	// Store: the answer is to be kept (the request's store, true when
	// absent, and a response store to keep it in).
	Store bool
	// Input is this turn's input items, each with an id (a string input is
	// one user message), as the response store lists them.
	Input []json.RawMessage
	// History is the conversation before this turn (previous_response_id's
	// stored conversation), as input items.
	History []json.RawMessage
}

// History returns the stored conversation that ends with the response id
// (every earlier turn's input and output items, then id's own); an error
// is given back unchanged (the caller answers it: an unknown id is OpenAI's
// 400 previous_response_not_found).
type History func(id string) ([]json.RawMessage, error)

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
// reports it), without a response store: previous_response_id is refused,
// and nothing is to be stored.
func ResponsesToChat(body []byte) ([]byte, *ResponsesRequest, error) {
	return ResponsesToChatFrom(body, nil)
}

// ResponsesToChatFrom is ResponsesToChat with a response store: history
// looks up previous_response_id's conversation, which goes in front of
// this turn's input (instructions are this turn's only, as OpenAI does).
// Features this service cannot provide (background; built-in tools such as
// web_search; previous_response_id without a store) are refused with an
// *Error naming the field.
func ResponsesToChatFrom(body []byte, history History) ([]byte, *ResponsesRequest, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return nil, nil, badf("", "the request body must be a JSON object with model and input")
	}
	r := &ResponsesRequest{ID: newID("resp_"), ParallelToolCalls: true, Store: history != nil}
	var err error
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
	if raw, ok := f["background"]; ok && !isNullOrEmpty(raw) && string(raw) != "false" {
		return nil, nil, badf("background", "background responses are not served here; leave background out (or false)")
	}
	if raw, ok := f["store"]; ok && !isNullOrEmpty(raw) {
		var store bool
		if err := json.Unmarshal(raw, &store); err != nil {
			return nil, nil, badf("store", "store must be a boolean")
		}
		r.Store = r.Store && store
	}
	if raw, ok := f["previous_response_id"]; ok && !isNullOrEmpty(raw) {
		if err := json.Unmarshal(raw, &r.PreviousResponseID); err != nil || r.PreviousResponseID == "" {
			return nil, nil, badf("previous_response_id", "previous_response_id must be a response id (resp_…)")
		}
		if history == nil {
			return nil, nil, badf("previous_response_id", "previous_response_id needs the response store, which is off (global.services.response_api: {enabled: true, store: memory}); send the whole conversation in input")
		}
		if r.History, err = history(r.PreviousResponseID); err != nil {
			return nil, nil, err
		}
	}
	var given []json.RawMessage
	if r.Input, given, err = inputItems(in); err != nil {
		return nil, nil, err
	}
	items, err := inputMessages(r.History, given)
	if err != nil {
		return nil, nil, err
	}
	msgs = append(msgs, items...)
	chat["messages"] = msgs

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

// inputItems turns input (a string or a list of items) into the items the
// response store lists (each with an id and a type, a message's string
// content as one text part) and the items as given (a string is one user
// message), which become the chat messages.
func inputItems(raw json.RawMessage) (stored, given []json.RawMessage, err error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, err := json.Marshal(map[string]any{"id": newID("msg_"), "type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": s}}})
		g, _ := json.Marshal(map[string]any{"role": "user", "content": s})
		return []json.RawMessage{b}, []json.RawMessage{g}, err
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, nil, badf("input", "input must be a string or a list of input items")
	}
	if err := json.Unmarshal(raw, &given); err != nil {
		return nil, nil, badf("input", "input must be a string or a list of input items")
	}
	out := make([]json.RawMessage, 0, len(items))
	for i, it := range items {
		if it == nil {
			return nil, nil, badf(fmt.Sprintf("input[%d]", i), "an input item must be an object")
		}
		var typ string
		_ = json.Unmarshal(it["type"], &typ)
		if typ == "" {
			typ = "message"
			it["type"] = json.RawMessage(`"message"`)
		}
		if _, ok := it["id"]; !ok {
			prefix := "msg_"
			switch typ {
			case "function_call":
				prefix = "fc_"
			case "function_call_output":
				prefix = "fco_"
			case "image_generation_call":
				prefix = "ig_"
			}
			it["id"], _ = json.Marshal(newID(prefix))
		}
		var text string
		if typ == "message" && json.Unmarshal(it["content"], &text) == nil {
			part := "input_text"
			if string(it["role"]) == `"assistant"` {
				part = "output_text"
			}
			it["content"], _ = json.Marshal([]any{map[string]any{"type": part, "text": text}})
		}
		b, err := json.Marshal(it)
		if err != nil {
			return nil, nil, badf(fmt.Sprintf("input[%d]", i), "input item %d cannot be read: %v", i, err)
		}
		out = append(out, b)
	}
	return out, given, nil
}

// inputMessages turns input items (a conversation's earlier ones, then
// this turn's; see inputItems) into chat messages. Function calls become
// assistant tool_calls (consecutive ones in one message) and their outputs
// tool messages.
func inputMessages(history, input []json.RawMessage) ([]map[string]any, error) {
	all := input
	if len(history) > 0 {
		all = append(append(make([]json.RawMessage, 0, len(history)+len(input)), history...), input...)
	}
	type item struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
		ID        string          `json:"id"`
		Format    string          `json:"output_format"`
	}
	var msgs []map[string]any
	for k, raw := range all {
		var it item
		i := k - len(history)
		p := fmt.Sprintf("input[%d]", i)
		if i < 0 {
			p = fmt.Sprintf("the conversation of previous_response_id, item %d", k)
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, badf(p, "an input item must be an object")
		}
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
		case "image_generation_call":
			// An image the assistant made in an earlier turn. A chat
			// assistant message carries text, and the next turn may route
			// to any model, so the image goes back as a note that it was
			// made, not as its bytes.
			note := "[image generated: " + it.ID
			if it.Format != "" {
				note += ", " + it.Format
			}
			msgs = append(msgs, map[string]any{"role": "assistant", "content": note + "]"})
		default:
			return nil, badf(p+".type", "input item type %q is not served here (message, function_call, function_call_output and image_generation_call are)", it.Type)
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
		Type     string  `json:"type"`
		Text     string  `json:"text"`
		ImageURL string  `json:"image_url"`
		FileID   *string `json:"file_id"`
		Detail   string  `json:"detail"`
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
			img := map[string]any{}
			switch {
			case p.ImageURL != "":
				img["url"] = p.ImageURL
			case p.FileID != nil:
				// The data plane inlines the uploaded image (a chat
				// image_url part naming a file_id).
				img["file_id"] = *p.FileID
			default:
				return nil, badf(fmt.Sprintf("%s[%d].image_url", param, j), "an input_image part needs image_url or file_id")
			}
			if p.Detail != "" {
				img["detail"] = p.Detail
			}
			out = append(out, map[string]any{"type": "image_url", "image_url": img})
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
