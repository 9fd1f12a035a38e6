// Package chatmsg is the view of an OpenAI chat-completion messages array that
// the built-in plugins share: each message's raw bytes with its role, flattened
// text and tool-call links, and builders for the messages plugins add.
//
// It is compiled into every built-in wasm guest, so it stays small: no
// reflection-heavy decoding beyond encoding/json, no I/O, no state.
package chatmsg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/sdk/jsonscan"
)

// Message is one element of the messages array.
type Message struct {
	// Raw is the message exactly as it arrived.
	Raw json.RawMessage
	// Role is system, developer, user, assistant, tool or function.
	Role string
	// Text is the content flattened: a string content as it is, the text parts
	// of an array content joined by "\n", "" for null.
	Text string
	// ToolCallIDs are the ids of an assistant message's tool_calls.
	ToolCallIDs []string
	// ToolCallID is a tool message's tool_call_id.
	ToolCallID string
	// HasContent: the content is neither absent, null nor "".
	HasContent bool
}

// Parse reads a messages array. A null or absent array is empty.
func Parse(raw json.RawMessage) ([]Message, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	elems, err := jsonscan.Elements(raw)
	if err != nil {
		return nil, fmt.Errorf("messages must be an array of message objects: %v", err)
	}
	out := make([]Message, len(elems))
	for i, e := range elems {
		ms, err := jsonscan.Members(e)
		if err != nil {
			return nil, fmt.Errorf("messages[%d] must be an object: %v", i, err)
		}
		m := Message{Raw: e}
		if r := jsonscan.Lookup(ms, "role"); r != nil {
			if m.Role, err = jsonscan.Unquote(r); err != nil {
				return nil, fmt.Errorf("messages[%d].role must be a string", i)
			}
		}
		content := bytes.TrimSpace(jsonscan.Lookup(ms, "content"))
		if m.Text, err = ContentText(content); err != nil {
			return nil, fmt.Errorf("messages[%d].content %v", i, err)
		}
		m.HasContent = len(content) > 0 && string(content) != "null" && string(content) != `""`
		if id := jsonscan.Lookup(ms, "tool_call_id"); id != nil {
			m.ToolCallID, _ = jsonscan.Unquote(id)
		}
		if calls := jsonscan.Lookup(ms, "tool_calls"); len(calls) > 0 && calls[0] == '[' {
			list, err := jsonscan.Elements(calls)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].tool_calls: %v", i, err)
			}
			for _, c := range list {
				cm, err := jsonscan.Members(c)
				if err != nil {
					return nil, fmt.Errorf("messages[%d].tool_calls: %v", i, err)
				}
				id, _ := jsonscan.Unquote(jsonscan.Lookup(cm, "id"))
				m.ToolCallIDs = append(m.ToolCallIDs, id)
			}
		}
		out[i] = m
	}
	return out, nil
}

// ContentText flattens a content value: a string, null, or an array of parts
// whose text parts are joined by "\n" (the same rule the engine uses).
func ContentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		s, err := jsonscan.Unquote(raw)
		if err != nil {
			return "", fmt.Errorf("is not a valid string")
		}
		return s, nil
	case '[':
		parts, err := jsonscan.Elements(raw)
		if err != nil {
			return "", fmt.Errorf("must be a string or an array of content parts")
		}
		var b strings.Builder
		for _, p := range parts {
			pm, err := jsonscan.Members(p)
			if err != nil {
				return "", fmt.Errorf("must be a string or an array of content parts")
			}
			t := jsonscan.Lookup(pm, "text")
			if t == nil || string(t) == "null" {
				continue
			}
			text, err := jsonscan.Unquote(t)
			if err != nil {
				return "", fmt.Errorf("must be a string or an array of content parts")
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(text)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("must be a string or an array of content parts")
}

// LastUser is the index of the last user message, or -1.
func LastUser(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return i
		}
	}
	return -1
}

// AfterInstructions is the index just after the leading system and
// developer messages: where injected context goes so that it follows the
// instructions and precedes the conversation.
func AfterInstructions(msgs []Message) int {
	at := 0
	for at < len(msgs) && (msgs[at].Role == "system" || msgs[at].Role == "developer") {
		at++
	}
	return at
}

// Truncate cuts s to at most n bytes without splitting a UTF-8 character.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// LastUserText is the text of the last user message, or "".
func LastUserText(msgs []Message) string {
	if i := LastUser(msgs); i >= 0 {
		return msgs[i].Text
	}
	return ""
}

// New builds a message with string content.
func New(role, content string) json.RawMessage {
	b := make([]byte, 0, len(role)+len(content)+32)
	b = append(b, `{"role":`...)
	b = abi.AppendJSONString(b, role)
	b = append(b, `,"content":`...)
	b = abi.AppendJSONString(b, content)
	return append(b, '}')
}

// NewTool builds a tool message answering toolCallID.
func NewTool(toolCallID, content string) json.RawMessage {
	b := make([]byte, 0, len(toolCallID)+len(content)+48)
	b = append(b, `{"role":"tool","tool_call_id":`...)
	b = abi.AppendJSONString(b, toolCallID)
	b = append(b, `,"content":`...)
	b = abi.AppendJSONString(b, content)
	return append(b, '}')
}

// NewToolCall builds an assistant message that calls one function.
func NewToolCall(id, function, arguments string) json.RawMessage {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	b, _ := json.Marshal(struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []call  `json:"tool_calls"`
	}{Role: "assistant", ToolCalls: []call{{ID: id, Type: "function", Function: fn{function, arguments}}}})
	return b
}

// SetMember returns obj with member name set to value (appended when
// absent). The other members keep their bytes and order.
func SetMember(obj json.RawMessage, name string, value json.RawMessage) (json.RawMessage, error) {
	return jsonscan.Splice(obj, name, value)
}

// DeleteMember returns obj without member name.
func DeleteMember(obj json.RawMessage, name string) (json.RawMessage, error) {
	return jsonscan.Splice(obj, name, nil)
}

// Raws returns the raw bytes of msgs, in order.
func Raws(msgs []Message) []json.RawMessage {
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m.Raw
	}
	return out
}

// String encodes s as a JSON string literal.
func String(s string) json.RawMessage { return jsonscan.Quote(s) }

// EditKind is what an Edit does to the messages array.
type EditKind uint8

// Edit kinds; they mirror the host's message mutations.
const (
	Insert  EditKind = iota + 1 // put Raw before messages[Index] (Index = length appends)
	Replace                     // messages[Index] becomes Raw
	Remove                      // drop messages[Index]
)

// Edit is one change to the messages array. Index counts the array as left
// by the edits before it.
type Edit struct {
	Kind  EditKind
	Index int
	Raw   json.RawMessage
}

// Apply returns msgs (raw) with edits applied, or an error naming the first
// edit that does not fit. Tests and the preview command use it to show the
// result the host will produce.
func Apply(msgs []json.RawMessage, edits []Edit) ([]json.RawMessage, error) {
	out := append([]json.RawMessage(nil), msgs...)
	for i, e := range edits {
		switch {
		case e.Kind == Insert && e.Index >= 0 && e.Index <= len(out):
			out = append(out, nil)
			copy(out[e.Index+1:], out[e.Index:])
			out[e.Index] = e.Raw
		case e.Kind == Replace && e.Index >= 0 && e.Index < len(out):
			out[e.Index] = e.Raw
		case e.Kind == Remove && e.Index >= 0 && e.Index < len(out):
			out = append(out[:e.Index], out[e.Index+1:]...)
		default:
			return nil, fmt.Errorf("edit %d (kind %d) names messages[%d] of %d", i, e.Kind, e.Index, len(out))
		}
	}
	return out, nil
}

// Transform turns "message i becomes next[i]" (nil: removed) into edits,
// removals from the end first so that indexes stay those of the original.
func Transform(msgs []Message, next []json.RawMessage) []Edit {
	var edits []Edit
	for i := len(msgs) - 1; i >= 0; i-- {
		switch {
		case next[i] == nil:
			edits = append(edits, Edit{Kind: Remove, Index: i})
		case !bytes.Equal(next[i], msgs[i].Raw):
			edits = append(edits, Edit{Kind: Replace, Index: i, Raw: next[i]})
		}
	}
	return edits
}
