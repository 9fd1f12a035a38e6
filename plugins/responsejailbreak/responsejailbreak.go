// Package responsejailbreak is the built-in response_jailbreak plugin: it
// scores the backend's answer (not the prompt) for jailbreak compliance with
// the router's jailbreak classifier (classify binding "jailbreak") or a guard
// model served behind an endpoint (a global.external_models entry with
// model_role guardrail, classify binding "guardrail"), and on a hit blocks
// the answer, redacts it or annotates it with a header.
//
// The package is the plugin's logic; wasm.go joins it to the SDK and guest/
// builds the module. It does no I/O: the detector comes through the
// function the caller passes.
package responsejailbreak

import (
	_ "embed"
	"fmt"
	"math"
	"strings"

	"github.com/junction-router/junction/plugins/internal/pconfig"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "response_jailbreak"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Detectors.
const (
	// DetectorClassifier is the router's jailbreak classifier (the model
	// the jailbreak signal uses).
	DetectorClassifier = "classifier"
	// DetectorGuardrail is an external guard model (model_role guardrail).
	DetectorGuardrail = "guardrail"
)

// Actions on a hit.
const (
	ActionBlock    = "block"
	ActionRedact   = "redact"
	ActionAnnotate = "annotate"
)

// Defaults.
const (
	DefaultThreshold     = 0.5
	DefaultBlockStatus   = 403
	DefaultBlockMessage  = "The answer was withheld: the response guard flagged it."
	DefaultRedactMessage = "[redacted: the response guard flagged this answer]"
	DefaultHeader        = "X-Junction-Response-Guard"
	// LabelJailbreak is the label whose score the policy compares with the
	// threshold.
	LabelJailbreak = "jailbreak"
)

// Config is the plugin's configuration.
type Config struct {
	Detector string `json:"detector,omitempty"`
	// ExternalModel names the global.external_models entry (model_role
	// guardrail) the guardrail detector asks; empty: the first such entry.
	ExternalModel string `json:"external_model,omitempty"`
	// Threshold is the least jailbreak score that is a hit (a guard model's
	// verdict scores 1 or 0).
	Threshold *float64 `json:"threshold,omitempty"`
	Action    string   `json:"action,omitempty"`
	// BlockStatus is the HTTP status of a blocked answer.
	BlockStatus int `json:"block_status,omitempty"`
	// Message is a blocked answer's error message, or a redacted answer's
	// content.
	Message string `json:"message,omitempty"`
	// Header carries the verdict on an annotated (or any checked) answer.
	Header string `json:"header,omitempty"`
	// HoldStream holds a streamed answer until it has been checked, so a
	// hit can still block or redact it; without it a stream is released as
	// it comes and checked afterwards (reported and counted only).
	HoldStream bool `json:"hold_stream,omitempty"`

	threshold float64
}

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	switch c.Detector {
	case "":
		c.Detector = DetectorClassifier
	case DetectorClassifier, DetectorGuardrail:
	default:
		return nil, pconfig.Errorf("detector", "must be %s or %s, not %q", DetectorClassifier, DetectorGuardrail, c.Detector)
	}
	if c.ExternalModel != "" && c.Detector != DetectorGuardrail {
		return nil, pconfig.Errorf("external_model", "names a guard model, which only detector %s asks", DetectorGuardrail)
	}
	if strings.ContainsAny(c.ExternalModel, ":\x00") {
		return nil, pconfig.Errorf("external_model", "must be the name of a global.external_models entry")
	}
	c.threshold = DefaultThreshold
	if c.Threshold != nil {
		if t := *c.Threshold; t < 0 || t > 1 || math.IsNaN(t) {
			return nil, pconfig.Errorf("threshold", "must be between 0 and 1, not %v", t)
		}
		c.threshold = *c.Threshold
	}
	switch c.Action {
	case "":
		c.Action = ActionBlock
	case ActionBlock, ActionRedact, ActionAnnotate:
	default:
		return nil, pconfig.Errorf("action", "must be block, redact or annotate, not %q", c.Action)
	}
	if c.BlockStatus == 0 {
		c.BlockStatus = DefaultBlockStatus
	}
	if c.BlockStatus < 400 || c.BlockStatus > 599 {
		return nil, pconfig.Errorf("block_status", "must be an HTTP error status (400 to 599), not %d", c.BlockStatus)
	}
	if c.Message == "" {
		c.Message = DefaultBlockMessage
		if c.Action == ActionRedact {
			c.Message = DefaultRedactMessage
		}
	}
	if c.Header == "" {
		c.Header = DefaultHeader
	}
	if !token(c.Header) {
		return nil, pconfig.Errorf("header", "must be an HTTP header name, not %q", c.Header)
	}
	return c, nil
}

// token reports whether s is an HTTP token (a header name).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// Binding is the classify binding the detector runs.
func (c *Config) Binding() string {
	if c.Detector == DetectorClassifier {
		return "jailbreak"
	}
	if c.ExternalModel != "" {
		return "guardrail:" + c.ExternalModel
	}
	return "guardrail"
}

// Score reads the jailbreak score out of a classifier's labels.
func Score(classes []Class) (float64, error) {
	for _, cl := range classes {
		if strings.EqualFold(cl.Label, LabelJailbreak) {
			if math.IsNaN(float64(cl.Score)) {
				return 0, fmt.Errorf("the detector scored %s as NaN", LabelJailbreak)
			}
			return math.Min(1, math.Max(0, float64(cl.Score))), nil
		}
	}
	return 0, fmt.Errorf("the detector gave no %s label", LabelJailbreak)
}

// Class is a label with its score, as the host's classify answers it.
type Class struct {
	Label string
	Score float32
}

// Verdict is the policy applied to one score.
type Verdict struct {
	Score float64
	Hit   bool
	// Action is what happens: block, redact, annotate, or "" (a miss).
	Action string
	// Status and Content replace the answer (block, redact).
	Status  int
	Content string
	// HeaderValue is set on Header for every checked answer.
	HeaderValue string
}

// Decide applies the policy to a detector score.
func (c *Config) Decide(score float64) Verdict {
	v := Verdict{Score: score, Hit: score >= c.threshold}
	verdict := "pass"
	if v.Hit {
		verdict = "flagged"
		v.Action = c.Action
		switch c.Action {
		case ActionBlock:
			v.Status, v.Content = c.BlockStatus, c.Message
		case ActionRedact:
			v.Status, v.Content = 200, c.Message
		}
	}
	v.HeaderValue = fmt.Sprintf("%s; score=%.3f; detector=%s", verdict, score, c.Detector)
	if v.Action != "" {
		v.HeaderValue += "; action=" + v.Action
	}
	return v
}
