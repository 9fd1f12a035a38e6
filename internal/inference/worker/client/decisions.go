package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/junction-router/junction/engine/signal"
)

// Decider is signal.Classifier over POST /v1/decisions: each text is a
// state, and one choice question over Options is asked about it; the
// answer's probabilities are the distribution. It is a signal.StagedModel:
// under the engine's request stage, every Decider of one deployment and head
// puts its questions into one decisions call (signal.Ask), with a state per
// distinct text, so a domain and a jailbreak signal bound to one deployment
// cost one call per request.
type Decider struct {
	pool   *Pool
	method string
	opt    DecideOptions
	q      json.RawMessage // the question, encoded once
	keys   map[string]bool
}

// DecideOptions shape the question one binding asks.
type DecideOptions struct {
	// Head is the served model that answers (default: the replica's Model).
	Head string
	// MaxTokens is the token budget per state (0: the model's).
	MaxTokens int
	// Instructions and Options make the choice question: each option's key
	// is the label it stands for (a sequence classifier whose labels they
	// are answers with its own probabilities; an embedding model compares
	// the text with "instructions: description", zero-shot).
	Instructions string
	Options      []DecideOption
	// Accept is as for ClassifyOptions.
	Accept func([]signal.LabelScore) bool
}

// DecideOption is one option of the question.
type DecideOption struct {
	Key         string `json:"key"`
	Description string `json:"description"`
}

// NewDecider returns a decider over the pool; method names it in routing
// output.
func NewDecider(p *Pool, method string, o DecideOptions) (*Decider, error) {
	if len(o.Options) < 2 || len(o.Options) > 255 {
		return nil, fmt.Errorf("client: a choice question needs 2 to 255 options (got %d)", len(o.Options))
	}
	q, err := json.Marshal(struct {
		Type         string         `json:"type"`
		Instructions string         `json:"instructions,omitempty"`
		Choices      []DecideOption `json:"choices"`
	}{"choice", o.Instructions, o.Options})
	if err != nil {
		return nil, err
	}
	d := &Decider{pool: p, method: method, opt: o, q: q, keys: map[string]bool{}}
	for _, op := range o.Options {
		d.keys[op.Key] = true
	}
	return d, nil
}

var (
	_ signal.Classifier  = (*Decider)(nil)
	_ signal.StagedModel = (*Decider)(nil)
)

// Method names the binding in routing output.
func (d *Decider) Method() string { return d.method }

// Staged marks the decider as asking through the request's stage.
func (d *Decider) Staged() {}

// decideItem is what one Classify asks: its question about each text.
type decideItem struct {
	d     *Decider
	texts []string
}

// Classify asks the question about each text and returns the distributions,
// labels by falling probability.
func (d *Decider) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	ans, err := signal.Ask(ctx, d.pool.deployment+"\x00"+d.opt.Head, &decideItem{d: d, texts: texts}, d.send)
	if err != nil {
		return nil, err
	}
	out, _ := ans.([][]signal.LabelScore)
	return out, nil
}

type decisionsBody struct {
	Model   string                    `json:"model"`
	States  map[string]decisionsState `json:"states"`
	Options struct {
		MaxTokens int `json:"max_tokens,omitempty"`
	} `json:"options"`
}

type decisionsState struct {
	State     string                     `json:"state"`
	Questions map[string]json.RawMessage `json:"questions"`
}

type decisionsAnswer struct {
	States map[string]struct {
		Answers map[string]json.RawMessage `json:"answers"`
	} `json:"states"`
}

type choiceOut struct {
	Type          string             `json:"type"`
	Probabilities map[string]float64 `json:"probabilities"`
	Error         string             `json:"error"`
	Message       string             `json:"message"`
}

// send makes one decisions call for the items of a stage (any Deciders of
// this deployment and head): a state per distinct text, named s0, s1, ...,
// and under it question i for item i.
func (d *Decider) send(ctx context.Context, round string, items []any) ([]any, error) {
	body := decisionsBody{Model: d.opt.Head, States: map[string]decisionsState{}}
	stateOf := map[string]string{}
	type ref struct{ state, q string }
	refs := make([][]ref, len(items))
	maxTokens := 0
	for i, it := range items {
		item := it.(*decideItem)
		maxTokens = max(maxTokens, item.d.opt.MaxTokens)
		q := "q" + strconv.Itoa(i)
		for _, text := range item.texts {
			name, ok := stateOf[text]
			if !ok {
				name = "s" + strconv.Itoa(len(stateOf))
				stateOf[text] = name
				body.States[name] = decisionsState{State: text, Questions: map[string]json.RawMessage{}}
			}
			body.States[name].Questions[q] = item.d.q
			refs[i] = append(refs[i], ref{name, q})
		}
	}
	body.Options.MaxTokens = maxTokens
	var ans decisionsAnswer
	out := make([]any, len(items))
	check := func() error {
		for i, it := range items {
			item := it.(*decideItem)
			dists := make([][]signal.LabelScore, len(refs[i]))
			for j, r := range refs[i] {
				raw, ok := ans.States[r.state].Answers[r.q]
				if !ok {
					return d.pool.malformed(UnknownWrongCount, "decisions answered no %s about state %s", r.q, r.state)
				}
				ls, err := item.d.read(raw)
				if err != nil {
					return err
				}
				dists[j] = ls
			}
			out[i] = dists
		}
		return nil
	}
	err := d.pool.callRound(ctx, round, "/v1/decisions", func(r *replica) any {
		if body.Model == "" {
			body.Model = r.Model
		}
		return body
	}, &ans, check)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// read turns one choice answer into a distribution.
func (d *Decider) read(raw json.RawMessage) ([]signal.LabelScore, error) {
	var a choiceOut
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, d.pool.malformed(UnknownMalformedBody, "a decisions answer is not an object: %v", err)
	}
	if a.Error != "" {
		return nil, &Error{Deployment: d.pool.deployment, Outcome: OutcomeFailed, Code: a.Error, Err: fmt.Errorf("%s: %s", a.Error, a.Message)}
	}
	if len(a.Probabilities) == 0 {
		return nil, d.pool.malformed(UnknownEmptyResult, "a %q answer has no probabilities", a.Type)
	}
	ls := make([]signal.LabelScore, 0, len(a.Probabilities))
	for k, p := range a.Probabilities {
		if !d.keys[k] {
			return nil, d.pool.malformed(UnknownLabel, "a choice answer names option %q, which was not asked", k)
		}
		ls = append(ls, signal.LabelScore{Label: k, Score: p})
	}
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].Score != ls[j].Score {
			return ls[i].Score > ls[j].Score
		}
		return ls[i].Label < ls[j].Label
	})
	if d.opt.Accept != nil && !d.opt.Accept(ls) {
		return nil, d.pool.malformed(UnknownLabel, "the answer's labels cannot be read by the %s binding", d.method)
	}
	return ls, nil
}
