// Package systemprompt is the built-in system_prompt plugin: it gives the
// request a system prompt. Only a first message with role "system" counts as
// the existing system message.
//
//   - mode insert (the default): the prompt goes before the existing system
//     message's text, separated by a blank line. With string content the
//     result is prompt + "\n\n" + content (just the prompt when the content is
//     empty or null). With an array of content parts, a leading text part gets
//     the prompt and the blank line prepended; otherwise a new text part
//     holding the prompt is put first. The message's other fields are kept.
//   - mode replace: the existing system message's content becomes the prompt.
//
// With no system message first, both modes put a new system message before the
// others. enabled: false turns the plugin off (reported skipped).
// internal/plugin/native runs this same code natively.
//
// The package is the plugin's logic, testable on the host; guest/ wraps it as
// a wasm module. It must not do I/O.
package systemprompt

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/pconfig"
	"github.com/junction-router/junction/sdk/jsonscan"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "system_prompt"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Config is the plugin's configuration.
type Config struct {
	SystemPrompt string `json:"system_prompt"`
	Mode         string `json:"mode,omitempty"`
	Enabled      *bool  `json:"enabled,omitempty"`
}

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.SystemPrompt) == "" {
		return nil, pconfig.Errorf("system_prompt", "is required and must not be empty")
	}
	switch c.Mode {
	case "":
		c.Mode = "insert"
	case "insert", "replace":
	default:
		return nil, pconfig.Errorf("mode", "must be insert or replace, not %q", c.Mode)
	}
	if c.Enabled == nil {
		t := true
		c.Enabled = &t
	}
	return c, nil
}

// Result is what the plugin wants done.
type Result struct {
	Skipped bool
	Edits   []chatmsg.Edit
	Detail  string
	// edit holds Edits' one edit (oneEdit).
	edit [1]chatmsg.Edit
}

// Run plans the change for a request's messages.
func (c *Config) Run(msgs []chatmsg.Message) (*Result, error) {
	if !*c.Enabled {
		return &Result{Skipped: true, Detail: "disabled by its configuration (enabled: false)"}, nil
	}
	if len(msgs) == 0 || msgs[0].Role != "system" {
		return oneEdit("added a system message before the first message",
			chatmsg.Edit{Kind: chatmsg.Insert, Index: 0, Raw: chatmsg.New("system", c.SystemPrompt)}), nil
	}
	ms, err := jsonscan.Members(msgs[0].Raw)
	if err != nil {
		return nil, fmt.Errorf("messages[0]: %v", err)
	}
	content := bytes.TrimSpace(jsonscan.Lookup(ms, "content"))
	var next json.RawMessage
	detail := "replaced the system message's content"
	if c.Mode == "insert" {
		detail = "prepended to the system message"
		switch {
		case len(content) == 0 || string(content) == "null" || string(content) == `""`:
		case content[0] == '"':
			next = joinedString(c.SystemPrompt, msgs[0].Text)
		case content[0] == '[':
			var err error
			if next, err = c.prependPart(content); err != nil {
				return nil, fmt.Errorf("messages[0].content: %v", err)
			}
		default:
			return nil, fmt.Errorf("messages[0].content must be a string or an array of content parts")
		}
	}
	if next == nil {
		next = chatmsg.String(c.SystemPrompt)
	}
	// ms are the message's members already: splice without scanning again.
	raw := jsonscan.SpliceMembers(msgs[0].Raw, ms, "content", next)
	return oneEdit(detail, chatmsg.Edit{Kind: chatmsg.Replace, Index: 0, Raw: raw}), nil
}

// oneEdit is the result of a run that makes edit, in one allocation.
func oneEdit(detail string, edit chatmsg.Edit) *Result {
	r := &Result{Detail: detail}
	r.edit[0] = edit
	r.Edits = r.edit[:]
	return r
}

// joinedString is chatmsg.String(a + "\n\n" + b) without building the
// joined string first: the escaping works byte by byte, so the literal of
// the joined text is a's literal and b's joined by an escaped blank line.
func joinedString(a, b string) json.RawMessage {
	out := make([]byte, 0, len(a)+len(b)+(len(a)+len(b))/8+16)
	out = abi.AppendJSONString(out, a)
	out = append(out[:len(out)-1], `\n\n`...)
	at := len(out)
	out = abi.AppendJSONString(out, b)
	// b's opening quote goes.
	copy(out[at:], out[at+1:])
	return out[:len(out)-1]
}

func (c *Config) prependPart(content []byte) (json.RawMessage, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal(content, &parts); err != nil {
		return nil, err
	}
	if len(parts) > 0 {
		var p struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if json.Unmarshal(parts[0], &p) == nil && p.Type == "text" && p.Text != nil {
			text := c.SystemPrompt
			if *p.Text != "" {
				text += "\n\n" + *p.Text
			}
			first, err := chatmsg.SetMember(parts[0], "text", chatmsg.String(text))
			if err != nil {
				return nil, err
			}
			parts[0] = first
			return json.Marshal(parts)
		}
	}
	part, _ := json.Marshal(map[string]string{"type": "text", "text": c.SystemPrompt})
	return json.Marshal(append([]json.RawMessage{part}, parts...))
}
