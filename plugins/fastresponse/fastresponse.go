// Package fastresponse is the built-in fast_response plugin: it answers the
// request at once with the configured message (status 200); no backend is
// called and later plugins do not run. The host writes the answer in the
// shape the client asked for: a chat.completion, or chunk events ending with
// [DONE] when the request streams (internal/dataplane.ImmediateAnswer).
//
// The package is the plugin's logic, testable on the host; guest/ wraps it as
// a wasm module. It must not do I/O.
package fastresponse

import (
	_ "embed"
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
