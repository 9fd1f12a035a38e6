package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// AnthropicVersion is the anthropic-version header a request carries unless
// the backend's extra_headers set another.
const AnthropicVersion = "2023-06-01"

// AnthropicPath is appended to a base_url (".../v1") without chat_path for
// models with api_format anthropic.
const AnthropicPath = "/messages"

// DefaultAnthropicMaxTokens is the max_tokens sent when the client set
// none: the Messages API requires one, chat completions do not.
const DefaultAnthropicMaxTokens = 4096

// Thinking budgets for reasoning_effort. The Messages API counts thinking
// inside max_tokens and wants at least 1,024 tokens of budget.
var thinkingBudget = map[string]int64{"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}

const minThinkingBudget = 1024

// chatDropped are chat-completion fields with no Messages API counterpart
// that change nothing about the answer when dropped (their neutral values
// are checked where they have one).
var chatDropped = map[string]bool{
	"stream_options": true, "store": true, "metadata": true, "service_tier": true, "seed": true,
	"chat_template_kwargs": true, "logit_bias": true, "frequency_penalty": true, "presence_penalty": true,
	"parallel_tool_calls": true, "user": true, "reasoning_effort": true, "max_tokens": true,
	"max_completion_tokens": true, "n": true, "logprobs": true, "response_format": true,
	"model": true, "messages": true, "stream": true, "temperature": true, "top_p": true, "stop": true,
	"tools": true, "tool_choice": true,
}

// chatRefused are chat-completion features a Messages API backend cannot
// provide; a request that uses them is refused rather than answered without
// them.
var chatRefused = map[string]string{
	"top_logprobs":       "log probabilities",
	"audio":              "audio output",
	"modalities":         "output modalities",
	"prediction":         "predicted outputs",
	"web_search_options": "OpenAI web search",
	"functions":          "legacy functions (send tools instead)",
	"function_call":      "legacy function_call (send tool_choice instead)",
}

type anthropicRequest struct {
	Model         string             `json:"model"`
	System        []anthropicBlock   `json:"system,omitempty"`
	Messages      []anthropicMessage `json:"messages"`
	MaxTokens     int64              `json:"max_tokens"`
	Temperature   *float64           `json:"temperature,omitempty"`
	TopP          *float64           `json:"top_p,omitempty"`
	StopSequences []string           `json:"stop_sequences,omitempty"`
	Stream        bool               `json:"stream,omitempty"`
	Tools         []anthropicTool    `json:"tools,omitempty"`
	ToolChoice    map[string]any     `json:"tool_choice,omitempty"`
	Metadata      map[string]string  `json:"metadata,omitempty"`
	Thinking      map[string]any     `json:"thinking,omitempty"`
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

// anthropicBlock is one content block; which fields are set depends on Type.
type anthropicBlock struct {
	Type      string           `json:"type"`
	Text      *string          `json:"text,omitempty"`
	Source    *anthropicSource `json:"source,omitempty"`
	ID        string           `json:"id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Input     json.RawMessage  `json:"input,omitempty"`
	ToolUseID string           `json:"tool_use_id,omitempty"`
	Content   *string          `json:"content,omitempty"`
}

type anthropicSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// ChatToAnthropic translates an OpenAI chat-completion request, given as
// its top-level fields, into a Messages API request body.
//
// System and developer messages become the system prompt (in order, wherever
// they stood); tool messages become tool_result blocks of a user turn;
// assistant tool_calls become tool_use blocks; consecutive turns of one role
// are merged, as the Messages API wants roles to alternate. reasoning_effort
// becomes extended thinking with a budget inside max_tokens. Fields the
// Messages API has no use for are dropped when dropping them changes nothing
// (stream_options, seed, a zero penalty…); features it cannot provide (n > 1,
// log probabilities, JSON response formats, non-zero penalties, audio…) are
// refused with an *Error naming the field. Fields unknown to both APIs are
// passed through for the backend to judge.
func ChatToAnthropic(fields map[string]json.RawMessage) ([]byte, error) {
	var out anthropicRequest
	if err := unmarshalField(fields, "model", &out.Model); err != nil {
		return nil, err
	}
	for name, what := range chatRefused {
		if raw, ok := fields[name]; ok && !isNullOrEmpty(raw) {
			return nil, badf(name, "%s is not available from this model's Anthropic-style backend; remove %s", what, name)
		}
	}
	if err := checkNeutral(fields); err != nil {
		return nil, err
	}

	var msgs []chatMessage
	if err := unmarshalField(fields, "messages", &msgs); err != nil {
		return nil, err
	}
	for i, m := range msgs {
		if err := addMessage(&out, i, m); err != nil {
			return nil, err
		}
	}
	if len(out.Messages) == 0 {
		return nil, badf("messages", "the request has no user or assistant message; an Anthropic-style backend needs at least one")
	}

	out.MaxTokens = DefaultAnthropicMaxTokens
	for _, name := range []string{"max_tokens", "max_completion_tokens"} { // the newer name wins
		if raw, ok := fields[name]; ok && !isNullOrEmpty(raw) {
			if err := json.Unmarshal(raw, &out.MaxTokens); err != nil || out.MaxTokens < 1 {
				return nil, badf(name, "%s must be a positive integer", name)
			}
		}
	}
	if raw, ok := fields["temperature"]; ok && !isNullOrEmpty(raw) {
		var t float64
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, badf("temperature", "temperature must be a number")
		}
		if t < 0 || t > 1 {
			return nil, badf("temperature", "this model's Anthropic-style backend accepts temperature from 0 to 1 (got %v)", t)
		}
		out.Temperature = &t
	}
	if raw, ok := fields["top_p"]; ok && !isNullOrEmpty(raw) {
		var p float64
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, badf("top_p", "top_p must be a number")
		}
		out.TopP = &p
	}
	if raw, ok := fields["stop"]; ok && !isNullOrEmpty(raw) {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			out.StopSequences = []string{one}
		} else if err := json.Unmarshal(raw, &out.StopSequences); err != nil {
			return nil, badf("stop", "stop must be a string or a list of strings")
		}
	}
	if raw, ok := fields["stream"]; ok && !isNullOrEmpty(raw) {
		if err := json.Unmarshal(raw, &out.Stream); err != nil {
			return nil, badf("stream", "stream must be a boolean")
		}
	}
	if err := addTools(&out, fields); err != nil {
		return nil, err
	}
	if raw, ok := fields["user"]; ok && !isNullOrEmpty(raw) {
		var u string
		if json.Unmarshal(raw, &u) == nil && u != "" {
			out.Metadata = map[string]string{"user_id": u}
		}
	}
	if err := addThinking(&out, fields); err != nil {
		return nil, err
	}

	body, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode the Anthropic-style request: %w", err)
	}
	// Fields neither API defines go through, for the backend to judge (top_k,
	// say, which only the Messages API has).
	var extra []string
	for k := range fields {
		if !chatDropped[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return body, nil
	}
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(body, &merged); err != nil {
		return nil, err
	}
	for _, k := range extra {
		if _, taken := merged[k]; !taken {
			merged[k] = fields[k]
		}
	}
	return json.Marshal(merged)
}

// checkNeutral refuses dropped fields set to something other than their
// neutral value.
func checkNeutral(fields map[string]json.RawMessage) error {
	for _, name := range []string{"frequency_penalty", "presence_penalty"} {
		if raw, ok := fields[name]; ok && !isNullOrEmpty(raw) {
			var v float64
			if json.Unmarshal(raw, &v) != nil || v != 0 {
				return badf(name, "%s is not available from this model's Anthropic-style backend; remove it or send 0", name)
			}
		}
	}
	if raw, ok := fields["n"]; ok && !isNullOrEmpty(raw) {
		var n int
		if json.Unmarshal(raw, &n) != nil || n != 1 {
			return badf("n", "this model's Anthropic-style backend gives one choice per request; send n: 1 or leave it out")
		}
	}
	if raw, ok := fields["logprobs"]; ok && !isNullOrEmpty(raw) {
		var lp bool
		if json.Unmarshal(raw, &lp) != nil || lp {
			return badf("logprobs", "log probabilities are not available from this model's Anthropic-style backend; remove logprobs")
		}
	}
	if raw, ok := fields["response_format"]; ok && !isNullOrEmpty(raw) {
		var rf struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &rf) != nil || rf.Type != "text" {
			return badf("response_format", "response_format %q is not available from this model's Anthropic-style backend; describe the format in the prompt or use a tool", rf.Type)
		}
	}
	if raw, ok := fields["logit_bias"]; ok && !isNullOrEmpty(raw) {
		var lb map[string]json.RawMessage
		if json.Unmarshal(raw, &lb) != nil || len(lb) > 0 {
			return badf("logit_bias", "logit_bias is not available from this model's Anthropic-style backend; remove it")
		}
	}
	return nil
}

func addMessage(out *anthropicRequest, i int, m chatMessage) error {
	param := fmt.Sprintf("messages[%d]", i)
	switch m.Role {
	case "system", "developer":
		text, err := plainText(m.Content, param+".content")
		if err != nil {
			return err
		}
		if text != "" {
			out.System = append(out.System, anthropicBlock{Type: "text", Text: &text})
		}
		return nil
	case "user":
		blocks, err := userBlocks(m.Content, param+".content")
		if err != nil {
			return err
		}
		if len(blocks) == 0 {
			return badf(param+".content", "%s has no content; an Anthropic-style backend refuses empty turns", param)
		}
		appendTurn(out, "user", blocks)
		return nil
	case "assistant":
		var blocks []anthropicBlock
		text, err := plainText(m.Content, param+".content")
		if err != nil {
			return err
		}
		if text != "" {
			blocks = append(blocks, anthropicBlock{Type: "text", Text: &text})
		}
		for j, tc := range m.ToolCalls {
			tp := fmt.Sprintf("%s.tool_calls[%d]", param, j)
			if tc.Type != "" && tc.Type != "function" {
				return badf(tp+".type", "tool call type %q is not available from an Anthropic-style backend", tc.Type)
			}
			args := strings.TrimSpace(tc.Function.Arguments)
			if args == "" {
				args = "{}"
			}
			if !json.Valid([]byte(args)) || args[0] != '{' {
				return badf(tp+".function.arguments", "tool call arguments must be a JSON object to be sent to an Anthropic-style backend")
			}
			blocks = append(blocks, anthropicBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage(args)})
		}
		if len(blocks) == 0 {
			return nil // an empty assistant turn carries nothing
		}
		appendTurn(out, "assistant", blocks)
		return nil
	case "tool":
		text, err := plainText(m.Content, param+".content")
		if err != nil {
			return err
		}
		if m.ToolCallID == "" {
			return badf(param+".tool_call_id", "a tool message needs tool_call_id to be sent to an Anthropic-style backend")
		}
		appendTurn(out, "user", []anthropicBlock{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: &text}})
		return nil
	case "function":
		return badf(param+".role", "legacy function messages are not available from an Anthropic-style backend; send tool messages")
	}
	return badf(param+".role", "unknown role %q", m.Role)
}

// appendTurn adds blocks as a turn of role, merged into the previous turn
// when it has the same role.
func appendTurn(out *anthropicRequest, role string, blocks []anthropicBlock) {
	if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
		out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
		return
	}
	out.Messages = append(out.Messages, anthropicMessage{Role: role, Content: blocks})
}

// plainText is a message content's text: a string, or text parts joined by
// newlines. Other parts are refused.
func plainText(raw json.RawMessage, param string) (string, error) {
	if isNullOrEmpty(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badf(param, "content must be a string or a list of parts")
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		switch p.Type {
		case "text", "refusal":
			texts = append(texts, p.Text)
		default:
			return "", badf(fmt.Sprintf("%s[%d].type", param, j), "content part %q is not available here for an Anthropic-style backend", p.Type)
		}
	}
	return strings.Join(texts, "\n"), nil
}

func userBlocks(raw json.RawMessage, param string) ([]anthropicBlock, error) {
	if isNullOrEmpty(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []anthropicBlock{{Type: "text", Text: &s}}, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badf(param, "content must be a string or a list of parts")
	}
	blocks := make([]anthropicBlock, 0, len(parts))
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		switch p.Type {
		case "text":
			if p.Text == "" {
				continue
			}
			t := p.Text
			blocks = append(blocks, anthropicBlock{Type: "text", Text: &t})
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return nil, badf(pp+".image_url.url", "an image_url part needs a url")
			}
			src, err := imageSource(p.ImageURL.URL, pp+".image_url.url")
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, anthropicBlock{Type: "image", Source: src})
		default:
			return nil, badf(pp+".type", "content part %q is not available from an Anthropic-style backend", p.Type)
		}
	}
	return blocks, nil
}

// imageSource turns an image URL (https or a base64 data URL) into a
// Messages API image source.
func imageSource(u, param string) (*anthropicSource, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || media == "" {
			return nil, badf(param, "a data URL image must be data:<media type>;base64,<data>")
		}
		return &anthropicSource{Type: "base64", MediaType: media, Data: data}, nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return &anthropicSource{Type: "url", URL: u}, nil
	}
	return nil, badf(param, "an image url must be http(s) or a base64 data URL")
}

func addTools(out *anthropicRequest, fields map[string]json.RawMessage) error {
	if raw, ok := fields["tools"]; ok && !isNullOrEmpty(raw) {
		var tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &tools); err != nil {
			return badf("tools", "tools must be a list of function tools")
		}
		for i, t := range tools {
			if t.Type != "function" {
				return badf(fmt.Sprintf("tools[%d].type", i), "tool type %q is not available from an Anthropic-style backend", t.Type)
			}
			if t.Function.Name == "" {
				return badf(fmt.Sprintf("tools[%d].function.name", i), "a function tool needs a name")
			}
			schema := t.Function.Parameters
			if isNullOrEmpty(schema) {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			out.Tools = append(out.Tools, anthropicTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
		}
	}
	if raw, ok := fields["tool_choice"]; ok && !isNullOrEmpty(raw) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			switch s {
			case "auto":
				out.ToolChoice = map[string]any{"type": "auto"}
			case "none":
				out.ToolChoice = map[string]any{"type": "none"}
			case "required":
				out.ToolChoice = map[string]any{"type": "any"}
			default:
				return badf("tool_choice", "tool_choice must be auto, none, required or a function")
			}
		} else {
			var tc struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if json.Unmarshal(raw, &tc) != nil || tc.Type != "function" || tc.Function.Name == "" {
				return badf("tool_choice", "tool_choice must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":…}}")
			}
			out.ToolChoice = map[string]any{"type": "tool", "name": tc.Function.Name}
		}
	}
	if raw, ok := fields["parallel_tool_calls"]; ok && string(bytes.TrimSpace(raw)) == "false" && len(out.Tools) > 0 {
		if out.ToolChoice == nil {
			out.ToolChoice = map[string]any{"type": "auto"}
		}
		if out.ToolChoice["type"] != "none" {
			out.ToolChoice["disable_parallel_tool_use"] = true
		}
	}
	return nil
}

func addThinking(out *anthropicRequest, fields map[string]json.RawMessage) error {
	raw, ok := fields["reasoning_effort"]
	if !ok || isNullOrEmpty(raw) {
		return nil
	}
	var effort string
	if err := json.Unmarshal(raw, &effort); err != nil {
		return badf("reasoning_effort", "reasoning_effort must be a string")
	}
	if effort == "none" {
		return nil
	}
	budget, ok := thinkingBudget[effort]
	if !ok {
		return badf("reasoning_effort", "reasoning_effort must be minimal, low, medium, high or none (got %q)", effort)
	}
	if out.MaxTokens <= minThinkingBudget {
		return badf("max_tokens", "extended thinking on an Anthropic-style backend needs max_tokens above %d (thinking counts inside it); raise max_tokens or send reasoning_effort none", minThinkingBudget)
	}
	budget = min(budget, out.MaxTokens-1)
	out.Thinking = map[string]any{"type": "enabled", "budget_tokens": budget}
	// The Messages API refuses temperature and top_p changes with thinking on.
	out.Temperature, out.TopP = nil, nil
	return nil
}

func unmarshalField(fields map[string]json.RawMessage, name string, dst any) error {
	raw, ok := fields[name]
	if !ok || isNullOrEmpty(raw) {
		return badf(name, "%s is required", name)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return badf(name, "%s has the wrong type: %v", name, err)
	}
	return nil
}

func isNullOrEmpty(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}
