// Package chat parses and rewrites OpenAI chat-completion request bodies. It keeps
// every top-level field it does not understand, so that a rewritten request
// forwards what the client sent, changed only where routing changed it.
//
// Both data-plane front ends (the gateway and ext_proc) use it, so a body is
// judged the same way whichever way it arrived.
package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Request is a parsed chat-completion request.
type Request struct {
	// Fields holds every top-level field as sent, including those below.
	Fields   map[string]json.RawMessage
	Model    string
	Messages []Message
	Stream   bool
	// IncludeUsage is stream_options.include_usage as the client sent it.
	IncludeUsage bool
	// Tools is the number of tools the client offered.
	Tools int
}

// Message is one message with its content flattened to text (text parts joined
// by newlines; image and audio parts are not text and are skipped).
type Message struct {
	Role    string
	Content string
}

// Error is a request the client must fix; Param names the offending field the
// way OpenAI errors do ("messages[2].content").
type Error struct {
	Param   string
	Message string
}

func (e *Error) Error() string { return e.Message }

func badf(param, format string, args ...any) *Error {
	return &Error{Param: param, Message: fmt.Sprintf(format, args...)}
}

var validRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// Parse reads a chat-completion body. Errors are *Error.
func Parse(body []byte) (*Request, error) {
	if !utf8.Valid(body) {
		return nil, badf("", "the request body is not valid UTF-8")
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, badf("", "the request body is empty: send a JSON object with model and messages")
	}
	if body[0] != '{' {
		return nil, badf("", "the request body must be a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, badf("", "the request body is not valid JSON: %s", jsonErrText(err))
	}
	r := &Request{Fields: fields}
	raw, ok := fields["model"]
	if !ok || isNull(raw) {
		return nil, badf("model", "you must provide a model parameter")
	}
	if err := json.Unmarshal(raw, &r.Model); err != nil {
		return nil, badf("model", "model must be a string")
	}
	if strings.TrimSpace(r.Model) == "" {
		return nil, badf("model", "model must not be empty")
	}
	raw, ok = fields["messages"]
	if !ok || isNull(raw) {
		return nil, badf("messages", "missing required parameter: messages")
	}
	var msgs []rawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, badf("messages", "messages must be an array of message objects")
	}
	if len(msgs) == 0 {
		return nil, badf("messages", "messages must contain at least one message")
	}
	r.Messages = make([]Message, len(msgs))
	for i, m := range msgs {
		if m.Role == "" {
			return nil, badf(fmt.Sprintf("messages[%d].role", i), "messages[%d] is missing its role", i)
		}
		if !validRoles[m.Role] {
			return nil, badf(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		text, err := flatten(m.Content)
		if err != nil {
			return nil, badf(fmt.Sprintf("messages[%d].content", i), "messages[%d].content %s", i, err)
		}
		r.Messages[i] = Message{Role: m.Role, Content: text}
	}
	if raw, ok := fields["stream"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &r.Stream); err != nil {
			return nil, badf("stream", "stream must be a boolean")
		}
	}
	if raw, ok := fields["stream_options"]; ok && !isNull(raw) {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(raw, &so); err != nil {
			return nil, badf("stream_options", "stream_options must be an object")
		}
		r.IncludeUsage = so.IncludeUsage
	}
	if raw, ok := fields["tools"]; ok && !isNull(raw) {
		var tools []json.RawMessage
		if err := json.Unmarshal(raw, &tools); err != nil {
			return nil, badf("tools", "tools must be an array")
		}
		r.Tools = len(tools)
	}
	for _, name := range []string{"max_tokens", "max_completion_tokens", "n"} {
		if raw, ok := fields[name]; ok && !isNull(raw) {
			var n int64
			if err := json.Unmarshal(raw, &n); err != nil {
				return nil, badf(name, "%s must be an integer", name)
			}
		}
	}
	if raw, ok := fields["temperature"]; ok && !isNull(raw) {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, badf("temperature", "temperature must be a number")
		}
	}
	return r, nil
}

type rawMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// flatten turns a content value (string, null, or array of parts) into text.
func flatten(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || isNull(raw) {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("is not a valid string")
		}
		return s, nil
	case '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", fmt.Errorf("must be a string or an array of content parts")
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Text == nil {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(*p.Text)
		}
		return b.String(), nil
	default:
		return "", fmt.Errorf("must be a string or an array of content parts")
	}
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func jsonErrText(err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	return err.Error()
}

// LastUserText returns the content of the last user message, or of the last
// message of any role when there is no user message.
func (r *Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	if len(r.Messages) > 0 {
		return r.Messages[len(r.Messages)-1].Content
	}
	return ""
}

// Set replaces a top-level field with v encoded as JSON.
func (r *Request) Set(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	r.Fields[key] = b
	return nil
}

// Delete removes a top-level field.
func (r *Request) Delete(key string) { delete(r.Fields, key) }

// Encode writes the request with its current fields.
func (r *Request) Encode() ([]byte, error) { return json.Marshal(r.Fields) }
