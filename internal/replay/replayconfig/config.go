// Package replayconfig is the configuration of the two host-side plugin
// types, router_replay and shadow_dispatch: decoding, defaults and checks,
// and nothing else, so that the plugin stage (which validates every
// decision's plugin configurations and reports what they do) can import it
// without pulling in the recorder, stored data or the engine.
//
// Neither type is a WebAssembly module: what they do happens after the
// answer went out (the recorder of internal/replay keeps the decision
// record; the shadow dispatcher sends the copy), outside the plugin stage,
// which only reports them.
package replayconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// The plugin types.
const (
	TypeReplay = "router_replay"
	TypeShadow = "shadow_dispatch"
)

// Defaults and limits of a router_replay configuration.
const (
	DefaultMaxRecords     = 10_000
	MaxMaxRecords         = 1_000_000
	DefaultMaxBytes       = 64 << 20
	MaxMaxBytes           = 16 << 30
	DefaultMaxAge         = 7 * 24 * time.Hour
	MaxMaxAge             = 365 * 24 * time.Hour
	DefaultMaxPromptBytes = 16 << 10
	MaxMaxPromptBytes     = 1 << 20
)

// Replay is a router_replay configuration.
type Replay struct {
	// Enabled: false keeps nothing (the binding stays declared).
	Enabled bool `json:"enabled"`
	// SampleRate is the share of the decision's requests recorded, in
	// [0, 1].
	SampleRate float64 `json:"sample_rate"`
	// RecordPrompt keeps the routing input (the texts the signals read),
	// personal data redacted; without it only the decision record is kept
	// and a what-if evaluation cannot re-route the request.
	RecordPrompt bool `json:"record_prompt"`
	// MaxPromptBytes bounds the recorded texts of one request (the newest
	// kept); past it the record says truncated.
	MaxPromptBytes int `json:"max_prompt_bytes"`
	// The bounds of the decision's records (its recipe and decision):
	// the newest MaxRecords, at most MaxBytes of records, none older than
	// MaxAgeSeconds.
	MaxRecords    int   `json:"max_records"`
	MaxBytes      int64 `json:"max_bytes"`
	MaxAgeSeconds int64 `json:"max_age_seconds"`
}

// MaxAge is MaxAgeSeconds as a duration.
func (r Replay) MaxAge() time.Duration { return time.Duration(r.MaxAgeSeconds) * time.Second }

// Shadow is a shadow_dispatch configuration.
type Shadow struct {
	Enabled bool `json:"enabled"`
	// Model is the configured model (providers.models) the copy goes to.
	Model string `json:"model"`
	// SampleRate is the share of the decision's answered requests copied.
	SampleRate float64 `json:"sample_rate"`
	// TimeoutMS bounds the shadow call.
	TimeoutMS int `json:"timeout_ms"`
}

// Defaults of a shadow_dispatch configuration.
const (
	DefaultShadowTimeout = 30 * time.Second
	MaxShadowTimeout     = 10 * time.Minute
)

// Timeout is TimeoutMS as a duration.
func (s Shadow) Timeout() time.Duration { return time.Duration(s.TimeoutMS) * time.Millisecond }

// FieldError names the field of a configuration that is wrong.
type FieldError struct {
	Field, Message string
}

func (e *FieldError) Error() string { return e.FieldPath() + " " + e.Message }

// FieldPath is the offending field within the plugin reference.
func (e *FieldError) FieldPath() string {
	if e.Field == "" {
		return "configuration"
	}
	return "configuration." + e.Field
}

// ParseReplay decodes a router_replay configuration (empty or null: every
// default), strictly: an unknown field is an error.
func ParseReplay(raw []byte) (Replay, error) {
	c := Replay{Enabled: true, SampleRate: 1, MaxPromptBytes: DefaultMaxPromptBytes, MaxRecords: DefaultMaxRecords,
		MaxBytes: DefaultMaxBytes, MaxAgeSeconds: int64(DefaultMaxAge / time.Second)}
	if err := decode(raw, &c); err != nil {
		return Replay{}, err
	}
	switch {
	case c.SampleRate < 0 || c.SampleRate > 1:
		return Replay{}, &FieldError{"sample_rate", fmt.Sprintf("must be between 0 and 1 (got %v)", c.SampleRate)}
	case c.MaxPromptBytes < 1 || c.MaxPromptBytes > MaxMaxPromptBytes:
		return Replay{}, &FieldError{"max_prompt_bytes", fmt.Sprintf("must be between 1 and %d (got %d)", MaxMaxPromptBytes, c.MaxPromptBytes)}
	case c.MaxRecords < 1 || c.MaxRecords > MaxMaxRecords:
		return Replay{}, &FieldError{"max_records", fmt.Sprintf("must be between 1 and %d (got %d)", MaxMaxRecords, c.MaxRecords)}
	case c.MaxBytes < 1024 || c.MaxBytes > MaxMaxBytes:
		return Replay{}, &FieldError{"max_bytes", fmt.Sprintf("must be between 1024 and %d (got %d)", int64(MaxMaxBytes), c.MaxBytes)}
	case c.MaxAgeSeconds < 1 || c.MaxAgeSeconds > int64(MaxMaxAge/time.Second):
		return Replay{}, &FieldError{"max_age_seconds", fmt.Sprintf("must be between 1 and %d (got %d)", int64(MaxMaxAge/time.Second), c.MaxAgeSeconds)}
	}
	return c, nil
}

// ParseShadow decodes a shadow_dispatch configuration; model is required.
func ParseShadow(raw []byte) (Shadow, error) {
	c := Shadow{Enabled: true, SampleRate: 1, TimeoutMS: int(DefaultShadowTimeout / time.Millisecond)}
	if err := decode(raw, &c); err != nil {
		return Shadow{}, err
	}
	switch {
	case strings.TrimSpace(c.Model) == "":
		return Shadow{}, &FieldError{"model", "is required: the configured model (providers.models) the copy goes to"}
	case c.SampleRate < 0 || c.SampleRate > 1:
		return Shadow{}, &FieldError{"sample_rate", fmt.Sprintf("must be between 0 and 1 (got %v)", c.SampleRate)}
	case c.TimeoutMS < 1 || c.TimeoutMS > int(MaxShadowTimeout/time.Millisecond):
		return Shadow{}, &FieldError{"timeout_ms", fmt.Sprintf("must be between 1 and %d (got %d)", int(MaxShadowTimeout/time.Millisecond), c.TimeoutMS)}
	}
	return c, nil
}

func decode(raw []byte, into any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return &FieldError{"", "must be an object"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &FieldError{te.Field, fmt.Sprintf("must be %s (got %s)", te.Type, te.Value)}
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return &FieldError{strings.Trim(f, `"`), "is not a field of this plugin's configuration"}
		}
		return &FieldError{"", "is not readable: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &FieldError{"", "has data after the object"}
	}
	return nil
}

// Schema is the JSON Schema of each host-side type's configuration (what
// ParseReplay and ParseShadow accept).
var Schema = map[string]json.RawMessage{
	TypeReplay: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{` +
		`"enabled":{"type":"boolean","default":true},` +
		`"sample_rate":{"type":"number","minimum":0,"maximum":1,"default":1},` +
		`"record_prompt":{"type":"boolean","default":false},` +
		`"max_prompt_bytes":{"type":"integer","minimum":1,"maximum":1048576,"default":16384},` +
		`"max_records":{"type":"integer","minimum":1,"maximum":1000000,"default":10000},` +
		`"max_bytes":{"type":"integer","minimum":1024,"maximum":17179869184,"default":67108864},` +
		`"max_age_seconds":{"type":"integer","minimum":1,"maximum":31536000,"default":604800}}}`),
	TypeShadow: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["model"],"properties":{` +
		`"enabled":{"type":"boolean","default":true},` +
		`"model":{"type":"string","minLength":1},` +
		`"sample_rate":{"type":"number","minimum":0,"maximum":1,"default":1},` +
		`"timeout_ms":{"type":"integer","minimum":1,"maximum":600000,"default":30000}}}`),
}
