// Package requestparams is the built-in request_params plugin: it polices
// top-level request parameters, in this order: blocked_params are removed;
// max_tokens and max_completion_tokens above max_tokens_limit are lowered to
// it, and n above max_n to max_n (absent values are not added); strip_unknown
// removes every top-level field that is not an OpenAI chat-completions
// parameter. model and messages are never removed. internal/plugin/native
// runs this same code natively.
//
// The package is the plugin's logic, testable on the host; guest/ wraps it as
// a wasm module. It must not do I/O.
package requestparams

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/junction-router/junction/plugins/internal/pconfig"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "request_params"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Config is the plugin's configuration.
type Config struct {
	BlockedParams  []string `json:"blocked_params,omitempty"`
	MaxTokensLimit *float64 `json:"max_tokens_limit,omitempty"`
	MaxN           *float64 `json:"max_n,omitempty"`
	limit, n       *int64
	StripUnknown   bool `json:"strip_unknown,omitempty"`
}

// OpenAIParams are the parameters of the OpenAI chat-completions API (plus
// chat_template_kwargs, the vLLM and SGLang extension routing writes).
var OpenAIParams = map[string]bool{
	"chat_template_kwargs": true,
	"model":                true, "messages": true, "audio": true, "frequency_penalty": true, "function_call": true,
	"functions": true, "logit_bias": true, "logprobs": true, "max_completion_tokens": true,
	"max_tokens": true, "metadata": true, "modalities": true, "moderation": true, "n": true,
	"parallel_tool_calls": true, "prediction": true, "presence_penalty": true,
	"prompt_cache_key": true, "prompt_cache_options": true, "prompt_cache_retention": true,
	"reasoning_effort": true, "response_format": true, "safety_identifier": true, "seed": true,
	"service_tier": true, "stop": true, "store": true, "stream": true, "stream_options": true,
	"temperature": true, "tool_choice": true, "tools": true, "top_logprobs": true, "top_p": true,
	"user": true, "verbosity": true, "web_search_options": true,
}

var owned = map[string]string{
	"model":    "the model is chosen by routing",
	"messages": "messages change only through message edits",
}

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	for i, name := range c.BlockedParams {
		field := fmt.Sprintf("blocked_params[%d]", i)
		if name == "" {
			return nil, pconfig.Errorf(field, "must not be empty")
		}
		if why, ok := owned[name]; ok {
			return nil, pconfig.Errorf(field, "cannot block %s: %s", name, why)
		}
	}
	var err error
	if c.limit, err = whole("max_tokens_limit", c.MaxTokensLimit); err != nil {
		return nil, err
	}
	if c.n, err = whole("max_n", c.MaxN); err != nil {
		return nil, err
	}
	return c, nil
}

// Set is one field set to a new value.
type Set struct {
	Name  string
	Value json.RawMessage
}

// Result is what the plugin wants done: fields removed, then fields set.
type Result struct {
	Remove []string
	Set    []Set
	Detail string
}

// Run plans the changes for a body's top-level fields.
func (c *Config) Run(fields map[string]json.RawMessage) (*Result, error) {
	res := &Result{}
	var notes []string
	for _, name := range c.BlockedParams {
		if _, ok := fields[name]; ok && !slices.Contains(res.Remove, name) {
			res.Remove = append(res.Remove, name)
			notes = append(notes, "removed "+name)
		}
	}
	for _, l := range [...]struct {
		name  string
		limit *int64
	}{{"max_tokens", c.limit}, {"max_completion_tokens", c.limit}, {"n", c.n}} {
		raw, ok := fields[l.name]
		if l.limit == nil || !ok || isNull(raw) || slices.Contains(res.Remove, l.name) {
			continue
		}
		v, ok := parseInt(raw)
		if !ok {
			return nil, fmt.Errorf("%s is %s, not an integer", l.name, kind(raw))
		}
		if v > *l.limit {
			lit := strconv.FormatInt(*l.limit, 10)
			res.Set = append(res.Set, Set{Name: l.name, Value: json.RawMessage(lit)})
			notes = append(notes, "lowered "+l.name+" from "+strconv.FormatInt(v, 10)+" to "+lit)
		}
	}
	if c.StripUnknown {
		var unknown []string
		for name := range fields {
			if !OpenAIParams[name] && !slices.Contains(res.Remove, name) {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			res.Remove = append(res.Remove, unknown...)
			notes = append(notes, "stripped "+strings.Join(unknown, ", "))
		}
	}
	res.Detail = strings.Join(notes, "; ")
	if res.Detail == "" {
		res.Detail = "nothing to change"
	}
	return res, nil
}

// whole checks that an optional limit is a whole number of at least 1 (4096
// and 4096.0 are both fine, as JSON does not tell them apart).
func whole(field string, f *float64) (*int64, error) {
	if f == nil {
		return nil, nil
	}
	if *f != math.Trunc(*f) || math.Abs(*f) > 1<<53 {
		return nil, pconfig.Errorf(field, "must be an integer, not a number (%v)", *f)
	}
	n := int64(*f)
	if n < 1 {
		return nil, pconfig.Errorf(field, "must be at least 1, not %d", n)
	}
	return &n, nil
}

func isNull(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// parseInt reads a JSON number that is a whole number (4096 or 4096.0).
func parseInt(raw []byte) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func kind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	return "a number (" + string(raw) + ")"
}
