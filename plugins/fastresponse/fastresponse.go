// Package fastresponse is the built-in fast_response plugin: it answers the
// request at once with the configured message (status 200); no backend is
// called and later plugins do not run. The host writes the answer in the
// shape the client asked for: a chat.completion, or chunk events ending with
// [DONE] when the request streams (see Completion and Events, which build the
// same shapes for previews and tests).
//
// The package is the plugin's logic, testable on the host; guest/ wraps it as
// a wasm module. It must not do I/O.
package fastresponse

import (
	_ "embed"
	"encoding/json"
	"strings"

	"github.com/junction-router/junction/plugins/internal/pconfig"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "fast_response"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Config is the plugin's configuration.
type Config struct {
	Message string `json:"message"`
}

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.Message) == "" {
		return nil, pconfig.Errorf("message", "is required and must not be empty")
	}
	return c, nil
}

// Detail is the report of every answer.
const Detail = "answered without calling a backend"

// Completion is the answer as a chat.completion (what a client that does not
// stream receives).
func Completion(id, model string, created int64, content string) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": model,
		"choices": []any{map[string]any{
			"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop",
		}},
		"usage": map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
	})
	return b
}

// Events is the answer as chat.completion.chunk server-sent events ending with
// data: [DONE] (what a streaming client receives).
func Events(id, model string, created int64, content string) []byte {
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	var out []byte
	for _, ev := range []any{
		chunk(map[string]any{"role": "assistant", "content": ""}, nil),
		chunk(map[string]any{"content": content}, nil),
		chunk(map[string]any{}, "stop"),
	} {
		b, _ := json.Marshal(ev)
		out = append(out, "data: "...)
		out = append(out, b...)
		out = append(out, "\n\n"...)
	}
	return append(out, "data: [DONE]\n\n"...)
}
