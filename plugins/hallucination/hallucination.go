// Package hallucination is the built-in hallucination plugin: it checks the
// backend's answer against its grounding (the RAG passages and tool results
// the request carried) claim by claim, with a judge model behind an endpoint
// (a global.external_models entry with model_role classification, asked a
// natural-language-inference question per claim: classify binding "nli") or
// a model-free word-overlap check, and warns (a response header), annotates
// the answer or blocks it when too many claims are unsupported.
//
// The package is the plugin's logic; wasm.go joins it to the SDK and guest/
// builds the module. It does no I/O: the judge comes through the function
// the caller passes.
package hallucination

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/junction-router/junction/plugins/internal/guard"
	"github.com/junction-router/junction/plugins/internal/pconfig"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "hallucination"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Detectors.
const (
	// DetectorJudge asks an external model (NLI: is the claim entailed by
	// the grounding?) per claim.
	DetectorJudge = "judge"
	// DetectorLexical counts a claim supported when enough of its content
	// words occur in the grounding: no model, and what a preview runs.
	DetectorLexical = "lexical"
)

// Actions when the answer is found unsupported.
const (
	ActionWarn     = "warn"
	ActionAnnotate = "annotate"
	ActionBlock    = "block"
)

// NLI labels the judge answers.
const (
	LabelEntailment    = "entailment"
	LabelNeutral       = "neutral"
	LabelContradiction = "contradiction"
)

// Defaults and bounds.
const (
	DefaultMaxClaims       = 8
	MaxClaims              = 32
	DefaultMinClaimWords   = 4
	DefaultMinOverlap      = 0.6
	DefaultMaxContextChars = 16000
	DefaultBlockStatus     = 422
	DefaultBlockMessage    = "The answer was withheld: it makes claims its sources do not support."
	DefaultNote            = "Note: some statements in this answer are not supported by the provided sources."
	DefaultHeader          = "X-Junction-Hallucination"
)

// Config is the plugin's configuration.
type Config struct {
	Detector string `json:"detector,omitempty"`
	// ExternalModel names the judge's global.external_models entry
	// (model_role classification); empty: the first such entry.
	ExternalModel string `json:"external_model,omitempty"`
	Action        string `json:"action,omitempty"`
	// MinUnsupported is how many unsupported claims make the answer
	// unsupported (default 1).
	MinUnsupported int `json:"min_unsupported,omitempty"`
	// MaxClaims bounds the claims checked (the first ones): each is a judge
	// call.
	MaxClaims int `json:"max_claims,omitempty"`
	// MinClaimWords: shorter sentences are not claims.
	MinClaimWords int `json:"min_claim_words,omitempty"`
	// MinOverlap is the lexical detector's least share of a claim's words
	// found in the grounding.
	MinOverlap *float64 `json:"min_overlap,omitempty"`
	// MaxContextChars bounds the grounding given to the judge.
	MaxContextChars int `json:"max_context_chars,omitempty"`
	// ContradictionOnly counts only contradicted claims as unsupported
	// (neutral ones pass).
	ContradictionOnly bool   `json:"contradiction_only,omitempty"`
	BlockStatus       int    `json:"block_status,omitempty"`
	Message           string `json:"message,omitempty"`
	Header            string `json:"header,omitempty"`
	// HoldStream holds a streamed answer until it has been checked, so that
	// annotate and block apply to it; otherwise a stream is checked after
	// it was released (reported only).
	HoldStream bool `json:"hold_stream,omitempty"`

	minOverlap float64
}

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	switch c.Detector {
	case "":
		c.Detector = DetectorJudge
	case DetectorJudge, DetectorLexical:
	default:
		return nil, pconfig.Errorf("detector", "must be judge or lexical, not %q", c.Detector)
	}
	if c.ExternalModel != "" && c.Detector != DetectorJudge {
		return nil, pconfig.Errorf("external_model", "names a judge model, which only detector judge asks")
	}
	if strings.ContainsAny(c.ExternalModel, ":\x00") {
		return nil, pconfig.Errorf("external_model", "must be the name of a global.external_models entry")
	}
	switch c.Action {
	case "":
		c.Action = ActionWarn
	case ActionWarn, ActionAnnotate, ActionBlock:
	default:
		return nil, pconfig.Errorf("action", "must be warn, annotate or block, not %q", c.Action)
	}
	if c.MinUnsupported == 0 {
		c.MinUnsupported = 1
	}
	if c.MaxClaims == 0 {
		c.MaxClaims = DefaultMaxClaims
	}
	if c.MaxClaims < 1 || c.MaxClaims > MaxClaims {
		return nil, pconfig.Errorf("max_claims", "must be between 1 and %d, not %d", MaxClaims, c.MaxClaims)
	}
	if c.MinUnsupported < 1 || c.MinUnsupported > c.MaxClaims {
		return nil, pconfig.Errorf("min_unsupported", "must be between 1 and max_claims (%d), not %d", c.MaxClaims, c.MinUnsupported)
	}
	if c.MinClaimWords == 0 {
		c.MinClaimWords = DefaultMinClaimWords
	}
	if c.MinClaimWords < 1 || c.MinClaimWords > 100 {
		return nil, pconfig.Errorf("min_claim_words", "must be between 1 and 100, not %d", c.MinClaimWords)
	}
	c.minOverlap = DefaultMinOverlap
	if c.MinOverlap != nil {
		if t := *c.MinOverlap; t < 0 || t > 1 || math.IsNaN(t) {
			return nil, pconfig.Errorf("min_overlap", "must be between 0 and 1, not %v", t)
		}
		c.minOverlap = *c.MinOverlap
	}
	if c.MaxContextChars == 0 {
		c.MaxContextChars = DefaultMaxContextChars
	}
	if c.MaxContextChars < 100 || c.MaxContextChars > guard.MaxText {
		return nil, pconfig.Errorf("max_context_chars", "must be between 100 and %d, not %d", guard.MaxText, c.MaxContextChars)
	}
	if c.BlockStatus == 0 {
		c.BlockStatus = DefaultBlockStatus
	}
	if c.BlockStatus < 400 || c.BlockStatus > 599 {
		return nil, pconfig.Errorf("block_status", "must be an HTTP error status (400 to 599), not %d", c.BlockStatus)
	}
	if c.Message == "" {
		c.Message = DefaultBlockMessage
		if c.Action == ActionAnnotate {
			c.Message = DefaultNote
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

// Binding is the classify binding the judge runs.
func (c *Config) Binding() string {
	if c.ExternalModel != "" {
		return "nli:" + c.ExternalModel
	}
	return "nli"
}

// NLIInput is the text the nli binding takes: a JSON object, so a premise
// or hypothesis can hold any text without a separator to escape.
func NLIInput(premise, hypothesis string) string {
	b, _ := json.Marshal(struct {
		Premise    string `json:"premise"`
		Hypothesis string `json:"hypothesis"`
	}{premise, hypothesis})
	return string(b)
}

// Judge labels one claim against the grounding (entailment, neutral or
// contradiction).
type Judge func(premise, hypothesis string) (string, error)

// Check is the outcome for one answer.
type Check struct {
	Claims      []guard.Claim
	Unsupported []guard.Claim
	// Labels are the judge's (or the lexical check's) label per claim.
	Labels []string
	// Flagged: at least MinUnsupported claims are unsupported.
	Flagged bool
	// ContextCut: the grounding was longer than max_context_chars.
	ContextCut bool
}

// Evaluate checks answer against grounding: with judge when given, by word
// overlap otherwise (judge nil: the lexical detector, or a preview).
func (c *Config) Evaluate(answer string, grounding []string, judge Judge) (*Check, error) {
	ch := &Check{Claims: guard.Claims(answer, c.MinClaimWords, c.MaxClaims)}
	premise, cut := guard.Cut(strings.Join(grounding, "\n\n"), c.MaxContextChars)
	ch.ContextCut = cut
	words := guard.WordSet([]string{premise})
	for _, cl := range ch.Claims {
		var label string
		if judge != nil {
			l, err := judge(premise, cl.Text)
			if err != nil {
				return nil, err
			}
			label = l
		} else if guard.Overlap(cl.Text, words) >= c.minOverlap {
			label = LabelEntailment
		} else {
			label = LabelNeutral
		}
		ch.Labels = append(ch.Labels, label)
		unsupported := label != LabelEntailment
		if c.ContradictionOnly {
			unsupported = label == LabelContradiction
		}
		if unsupported {
			ch.Unsupported = append(ch.Unsupported, cl)
		}
	}
	ch.Flagged = len(ch.Unsupported) >= c.MinUnsupported
	return ch, nil
}

// HeaderValue is the verdict header's value.
func (c *Config) HeaderValue(ch *Check, detector string) string {
	verdict := "supported"
	if ch.Flagged {
		verdict = "unsupported"
	}
	v := fmt.Sprintf("%s; claims=%d; unsupported=%d; detector=%s", verdict, len(ch.Claims), len(ch.Unsupported), detector)
	if len(ch.Unsupported) > 0 {
		v += "; spans=" + guard.Spans(ch.Unsupported)
	}
	return v
}
