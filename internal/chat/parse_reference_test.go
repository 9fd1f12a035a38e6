package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// parseReference is Parse as it was before the single-pass parser: the
// straightforward encoding/json version the differential tests hold Parse to.
func parseReference(body []byte) (*Request, error) {
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
		if !referenceRoles[m.Role] {
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

// encodeReference is Encode as it was: encoding/json on the field map.
func encodeReference(r *Request) ([]byte, error) { return json.Marshal(r.Fields) }

// referenceRoles are the roles a message may have (Parse's validRole).
var referenceRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}
