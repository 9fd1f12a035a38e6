// Package replay is router_replay and the replay loop: the recorder that
// keeps each routed request's decision record in stored data after the
// request is over (bounded and sampled by the decision's router_replay
// configuration, the routing input only when configured and then with
// personal data redacted), the what-if evaluation that routes a window of
// recorded traffic with a candidate configuration, and the accuracy of
// classification measured from the outcomes submitted on records.
//
// What must not happen here: nothing on a request's path may wait for the
// store (Record queues and returns), and request text is never logged.
package replay

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/engine/reasoning"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/internal/replay/replayconfig"
)

// Record is a decision record: what routing saw and chose for one request
// and how the request went. It is stored as JSON (storage.Replay.Record)
// and served as it is by GET /api/v1/observability/replays/{id}.
type Record struct {
	ID             string    `json:"id"`
	RequestID      string    `json:"request_id"`
	CreatedAt      time.Time `json:"created_at"`
	Endpoint       string    `json:"endpoint"`
	Recipe         string    `json:"recipe"`
	RequestedModel string    `json:"requested_model"`
	// Decision is empty when no decision matched (the default model).
	Decision     string   `json:"decision,omitempty"`
	MatchedRules []string `json:"matched_rules,omitempty"`
	Confidence   float64  `json:"confidence"`
	Model        string   `json:"model,omitempty"`
	ReasonCode   string   `json:"reason_code"`
	Selection    string   `json:"selection_method,omitempty"`
	// Reasoning is the reasoning mode routing chose.
	Reasoning reasoning.Mode `json:"reasoning"`
	Signals   []Signal       `json:"signals"`
	// PIIEntities are the personal-data types the pii signals found.
	PIIEntities       []string `json:"pii_entities,omitempty"`
	JailbreakDetected bool     `json:"jailbreak_detected"`
	// Blocked is the safety code when the request was refused (403).
	Blocked string `json:"blocked,omitempty"`
	Status  int    `json:"status"`
	Stream  bool   `json:"stream"`
	// LatencyMS is the request's whole time in the router (received to
	// answered); TTFTMS to the first streamed token; ClassificationMS the
	// signals' share.
	LatencyMS        float64 `json:"latency_ms"`
	TTFTMS           float64 `json:"ttft_ms,omitempty"`
	ClassificationMS float64 `json:"classification_ms"`
	Usage            *Usage  `json:"usage,omitempty"`
	// Cost is the request's cost from the model's pricing; absent
	// without pricing or usage.
	Cost     *float64 `json:"cost,omitempty"`
	Currency string   `json:"currency,omitempty"`
	// Input is the routing input, only with record_prompt.
	Input *Input `json:"input,omitempty"`
	// Shadow is a shadow_dispatch copy's outcome, beside the real one.
	Shadow *Shadow `json:"shadow,omitempty"`
}

// Signal is one evaluated signal's result.
type Signal struct {
	Kind      string  `json:"type"`
	Name      string  `json:"name"`
	Matched   bool    `json:"matched"`
	Score     float64 `json:"score"`
	Level     string  `json:"level,omitempty"`
	Method    string  `json:"method,omitempty"`
	Unscanned bool    `json:"unscanned,omitempty"`
	Error     string  `json:"error,omitempty"`
	// Entities are the personal-data types a pii signal found (types,
	// never the values).
	Entities []string `json:"entities,omitempty"`
}

// Usage is the answer's token usage.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
}

// Input is the routing input as recorded: the texts the signals read, each
// with its personal data replaced by [TYPE]. With Truncated the oldest
// texts (then the end of the routing text) did not fit max_prompt_bytes.
type Input struct {
	Text      string   `json:"text"`
	UserTexts []string `json:"user_texts"`
	AllTexts  []string `json:"all_texts"`
	Truncated bool     `json:"truncated,omitempty"`
	// Redacted are the personal-data types replaced.
	Redacted []string `json:"redacted,omitempty"`
}

// Shadow is the outcome of a shadow_dispatch copy.
type Shadow struct {
	Model     string   `json:"model"`
	Status    int      `json:"status"`
	LatencyMS float64  `json:"latency_ms"`
	Usage     *Usage   `json:"usage,omitempty"`
	Cost      *float64 `json:"cost,omitempty"`
	Currency  string   `json:"currency,omitempty"`
	// Error says why the copy got no answer (timeout, upstream status).
	Error string `json:"error,omitempty"`
}

// build makes the decision record of ev under c.
func build(ev *dataplane.ReplayEvent, c replayconfig.Replay, id string, now time.Time) Record {
	res := ev.Result
	r := Record{ID: id, RequestID: ev.RequestID, CreatedAt: now, Endpoint: ev.Endpoint, Recipe: res.Recipe, RequestedModel: res.RequestedModel,
		Decision: res.Decision, MatchedRules: res.MatchedRules, Confidence: res.Confidence, Model: res.Model, ReasonCode: res.ReasonCode,
		Selection: res.Selection, Reasoning: res.Reasoning, PIIEntities: res.PIIEntities, JailbreakDetected: res.JailbreakDetected,
		Status: ev.Status, Stream: ev.Stream, LatencyMS: ms(ev.Latency), TTFTMS: ms(ev.TTFT), ClassificationMS: ms(res.ClassificationTime),
		Signals: make([]Signal, len(res.Signals))}
	r.Reasoning.Family, r.Reasoning.Type, r.Reasoning.Param = "", "", "" // how it is written, not what was chosen
	if res.Block != nil {
		r.Blocked = res.Block.Code
	}
	for i, s := range res.Signals {
		// Value is left out: it can be text from the request (a matched
		// keyword, the best candidate).
		r.Signals[i] = Signal{Kind: s.Kind, Name: s.Name, Matched: s.Matched, Score: s.Score, Level: s.Level, Method: s.Method, Unscanned: s.Unscanned, Error: s.Error, Entities: s.Entities}
	}
	if ev.Usage != nil {
		r.Usage = &Usage{PromptTokens: ev.Usage.PromptTokens, CompletionTokens: ev.Usage.CompletionTokens, CachedTokens: ev.Usage.CachedTokens()}
		if ev.Model != nil {
			if amount, currency, ok := cost.Of(ev.Model.Pricing, *ev.Usage); ok {
				r.Cost, r.Currency = &amount, currency
			}
		}
	}
	if c.RecordPrompt {
		r.Input = recordInput(ev.Input.Text, ev.Input.UserTexts, ev.Input.AllTexts, c.MaxPromptBytes)
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// recordInput redacts the texts and fits them in budget bytes: the
// routing text first, then the newest user texts, then the newest others.
func recordInput(text string, user, all []string, budget int) *Input {
	in := &Input{UserTexts: []string{}, AllTexts: []string{}}
	types := map[string]bool{}
	redact := func(s string) string {
		ents := pii.Detect(s, true)
		if len(ents) == 0 {
			return s
		}
		var b strings.Builder
		b.Grow(len(s))
		at := 0
		for _, e := range ents {
			if e.Start < at || e.End > len(s) {
				continue
			}
			b.WriteString(s[at:e.Start])
			b.WriteString("[" + e.Type + "]")
			at = e.End
			types[e.Type] = true
		}
		b.WriteString(s[at:])
		return b.String()
	}
	in.Text = redact(text)
	if len(in.Text) > budget {
		in.Text, in.Truncated = cut(in.Text, budget), true
	}
	left := budget - len(in.Text)
	keep := func(src []string) []string {
		out := []string{}
		for i := len(src) - 1; i >= 0; i-- {
			t := redact(src[i])
			if len(t) > left {
				in.Truncated = true
				break
			}
			left -= len(t)
			out = append(out, t)
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	in.UserTexts = keep(user)
	in.AllTexts = keep(all)
	for t := range types {
		in.Redacted = append(in.Redacted, t)
	}
	slices.Sort(in.Redacted)
	return in
}

// cut shortens s to at most n bytes at a rune boundary.
func cut(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Decode reads a stored record.
func Decode(raw []byte) (Record, error) {
	var r Record
	err := json.Unmarshal(raw, &r)
	return r, err
}
