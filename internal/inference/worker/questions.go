package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Question answering (POST /v1/decisions, /v1/systemone) about a state text:
// this file reads and validates the questions; answers.go plans the batched
// model call and turns its results into answers. (The spec calls the endpoint
// "decisions"; they are not engine/decision's routing decisions.)
//
// How a model answers depends on its task, and every question of a request
// is answered from one batched call to the model:
//   - embedding models compare the state with each option's hypothesis
//     ("instructions: description") by cosine similarity, read as the logit
//     20·(cos − 0.5) (zero-shot; not calibrated);
//   - cross-encoders (rerank) score (state, hypothesis) pairs; the score is
//     the logit;
//   - sequence classifiers answer questions whose options name their labels
//     (by key or description), with the head's probabilities;
//   - token classifiers answer span questions whose labels are theirs.
//
// choice and score take the softmax over their options; noul, set and span
// read each option independently (sigmoid of the logit, or the label's
// probability).

type questionsOptions struct {
	ReturnMeta bool `json:"return_meta"`
	MaxTokens  int  `json:"max_tokens"`
}

type questionsRequest struct {
	Model     string                  `json:"model"`
	State     *string                 `json:"state"`
	Questions orderedRaw              `json:"questions"`
	States    map[string]stateRequest `json:"states"`
	Images    []string                `json:"images"`
	Options   questionsOptions        `json:"options"`
}

type stateRequest struct {
	State     string     `json:"state"`
	Questions orderedRaw `json:"questions"`
	Images    []string   `json:"images"`
}

// orderedRaw is a JSON object whose key order is kept.
type orderedRaw []kv

type kv struct {
	key string
	val json.RawMessage
}

func (o *orderedRaw) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("expected an object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if seen[k] {
			return fmt.Errorf("key %q appears twice", k)
		}
		seen[k] = true
		*o = append(*o, kv{k, v})
	}
	_, err = dec.Token()
	return err
}

type questionBody struct {
	Type         string          `json:"type"`
	Instructions string          `json:"instructions"`
	Criteria     json.RawMessage `json:"criteria"`
	Choices      json.RawMessage `json:"choices"`
	Levels       json.RawMessage `json:"levels"`
	Labels       json.RawMessage `json:"labels"`
	Threshold    *float64        `json:"threshold"`
	// Overflow and TruncateTokens: a question with overflow truncate reads
	// only the first truncate_tokens of its state (spec long-input rule 4).
	Overflow       string `json:"overflow"`
	TruncateTokens *int   `json:"truncate_tokens"`
}

type option struct {
	Key         string `json:"key"`
	Description string `json:"description"`
}

// question is a validated question.
type question struct {
	id           string
	typ          string
	instructions string
	opts         []option
	threshold    float64
	truncate     int // tokens of the state this question reads; 0: the request's budget
}

// parseQuestion validates one question; the error message names the field.
func parseQuestion(id string, raw json.RawMessage) (question, string) {
	var qb questionBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&qb); err != nil {
		return question{}, fmt.Sprintf("questions/%s: %v", id, err)
	}
	q := question{id: id, typ: qb.Type, instructions: qb.Instructions}
	field := func(f string) string { return "questions/" + id + "/" + f }
	forms := map[string]json.RawMessage{"criteria": qb.Criteria, "choices": qb.Choices, "levels": qb.Levels, "labels": qb.Labels}
	allowed := map[string][]string{"choice": {"criteria", "choices"}, "noul": {"criteria", "choices"},
		"score": {"criteria", "levels"}, "set": {"labels"}, "span": {"labels"}}
	al, ok := allowed[qb.Type]
	if !ok {
		return q, field("type") + fmt.Sprintf(" %q is not one of choice, noul, score, set, span", qb.Type)
	}
	var used string
	for _, f := range []string{"criteria", "choices", "levels", "labels"} {
		if len(forms[f]) == 0 || string(forms[f]) == "null" {
			continue
		}
		if used != "" {
			return q, field(f) + fmt.Sprintf(": a question takes one form only; it already has %s", used)
		}
		used = f
	}
	if used != "" && !contains(al, used) {
		return q, field(used) + fmt.Sprintf(" does not belong to a %s question (use %s)", qb.Type, strings.Join(al, " or "))
	}
	var err error
	if used != "" {
		q.opts, err = parseOptions(forms[used], qb.Type == "score")
		if err != nil {
			return q, field(used) + ": " + err.Error()
		}
	}
	n := len(q.opts)
	switch qb.Type {
	case "choice":
		if n < 2 || n > 255 {
			return q, field(or(used, "criteria")) + fmt.Sprintf(" has %d options; a choice needs 2 to 255", n)
		}
	case "noul":
		for _, o := range q.opts {
			if o.Key != "true" && o.Key != "false" {
				return q, field(used) + fmt.Sprintf(": key %q; a noul question takes only the keys true and false", o.Key)
			}
		}
		if n == 0 && strings.TrimSpace(qb.Instructions) == "" {
			return q, field("instructions") + " is required when no criteria are given"
		}
	case "score":
		if n < 2 || n > 10 {
			return q, field(or(used, "levels")) + fmt.Sprintf(" has %d levels; a score needs 2 to 10", n)
		}
	case "set", "span":
		if n < 1 || n > 255 {
			return q, field("labels") + fmt.Sprintf(" has %d labels; give 1 to 255", n)
		}
	}
	q.threshold = 0.5
	if qb.Type == "choice" || qb.Type == "score" {
		q.threshold = 0
	}
	if qb.Threshold != nil {
		if *qb.Threshold < 0 || *qb.Threshold > 1 || math.IsNaN(*qb.Threshold) {
			return q, field("threshold") + " must be between 0 and 1"
		}
		q.threshold = *qb.Threshold
	}
	if qb.Overflow != "" && qb.Overflow != overflowTruncate {
		return q, field("overflow") + fmt.Sprintf(" %q: a question's state is read under truncate only", qb.Overflow)
	}
	if qb.TruncateTokens != nil {
		if *qb.TruncateTokens < 1 {
			return q, field("truncate_tokens") + " must be at least 1"
		}
		q.truncate = *qb.TruncateTokens
	}
	return q, ""
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// parseOptions reads a map key → description, a list of {key, description},
// or (for score levels) a list of descriptions.
func parseOptions(raw json.RawMessage, levels bool) ([]option, error) {
	var m orderedRaw
	if err := m.UnmarshalJSON(raw); err == nil {
		out := make([]option, 0, len(m))
		for _, e := range m {
			var d string
			if err := json.Unmarshal(e.val, &d); err != nil {
				return nil, fmt.Errorf("value of %q must be a string description", e.key)
			}
			out = append(out, option{Key: e.key, Description: d})
		}
		return out, nil
	}
	if levels {
		var l []string
		if err := json.Unmarshal(raw, &l); err == nil {
			out := make([]option, len(l))
			for i, d := range l {
				out[i] = option{Key: fmt.Sprint(i), Description: d}
			}
			return out, nil
		}
		return nil, fmt.Errorf("expected a list of level descriptions")
	}
	var l []option
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("expected a map key → description or a list of {key, description}")
	}
	seen := map[string]bool{}
	for i, o := range l {
		if o.Key == "" {
			return nil, fmt.Errorf("item %d has no key", i)
		}
		if seen[o.Key] {
			return nil, fmt.Errorf("key %q appears twice", o.Key)
		}
		seen[o.Key] = true
	}
	return l, nil
}

// answerQuestions serves POST /v1/decisions and /v1/systemone (the spec's
// names): every question about every state of one request is answered from
// one batched call to the model.
func (s *Server) answerQuestions(ctx context.Context, body []byte, t *timing) (any, *apiError) {
	mark := time.Now()
	var req questionsRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	e, info, b, aerr := s.resolve(t, req.Model, "decisions", TaskEmbedding, TaskRerank, TaskSequence, TaskTokens)
	if aerr != nil {
		return nil, aerr
	}
	if req.Options.MaxTokens < 0 {
		return nil, badRequest("field /options/max_tokens: must be at least 1")
	}
	// No served model lists the image modality, so images are refused
	// wherever they come, with or without a top-level state.
	if len(req.Images) > 0 {
		return nil, badRequest("field /images: model %q does not list the image modality", e.name)
	}
	var asks []*stateAsk
	if req.State != nil || len(req.Questions) > 0 {
		if req.State == nil {
			return nil, badRequest("field /state is required with /questions")
		}
		asks = append(asks, &stateAsk{text: *req.State, order: keys(req.Questions)})
		asks[0].qs, asks[0].invalid = parseQuestions(req.Questions)
	}
	names := make([]string, 0, len(req.States))
	for n := range req.States {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := req.States[n]
		if len(st.Images) > 0 {
			return nil, badRequest("field /states/%s/images: model %q does not list the image modality", n, e.name)
		}
		a := &stateAsk{name: n, text: st.State, order: keys(st.Questions)}
		a.qs, a.invalid = parseQuestions(st.Questions)
		asks = append(asks, a)
	}
	valid := 0
	for _, a := range asks {
		valid += len(a.qs)
	}
	if valid == 0 {
		var why []string
		for _, a := range asks {
			for _, id := range a.order {
				why = append(why, a.invalid[id])
			}
		}
		if len(why) == 0 {
			return nil, badRequest("no questions: give state and questions, or states")
		}
		return nil, badRequest("no valid question: %s", strings.Join(why, "; "))
	}
	since(&t.parse, &mark)

	// Tokenize: every state, hypothesis and segment this request needs.
	limit := info.MaxInputTokens
	if limit <= 0 {
		limit = 512
	}
	if req.Options.MaxTokens > 0 {
		limit = min(limit, req.Options.MaxTokens)
	}
	p := &plan{m: b.model, info: info, index: map[Pair]int{}, limit: limit}
	answerers := make([][]func(res []Result) answerSet, len(asks))
	planned := 0
	for ai, a := range asks {
		stateLimit := limit
		if info.Task == TaskRerank {
			stateLimit = max(limit*3/4, 1)
		}
		a.read = prepare(b.model, info, a.text, budget{overflow: overflowTruncate, maxTokens: stateLimit})
		for _, q := range a.qs {
			qa := a
			if q.truncate > 0 && q.truncate < stateLimit {
				// This question reads only the first truncate_tokens of the state.
				cut := *a
				cut.read = prepare(b.model, info, a.text, budget{overflow: overflowTruncate, maxTokens: q.truncate})
				qa = &cut
			}
			f, msg := s.planQuestion(p, qa, q)
			if msg != "" {
				a.invalid[q.id] = msg
				continue
			}
			answerers[ai] = append(answerers[ai], f)
			planned++
		}
	}
	// Well-formed questions the model cannot answer (options outside a
	// classifier's labels, a state over its budget) are invalid too: with
	// none left the request fails as a whole, as when none is well formed.
	if planned == 0 {
		var why []string
		for _, a := range asks {
			for _, id := range a.order {
				if msg, ok := a.invalid[id]; ok {
					why = append(why, id+": "+msg)
				}
			}
		}
		return nil, badRequest("no question fits model %q: %s", e.name, strings.Join(why, "; "))
	}
	since(&t.tokenize, &mark)

	var res []Result
	if len(p.units) > 0 {
		o := map[string]op{TaskEmbedding: opEmbed, TaskRerank: opRerank, TaskSequence: opClassify, TaskTokens: opTokens}[info.Task]
		res, aerr = s.infer(ctx, e, b, o, p.units, t)
		if aerr != nil {
			return nil, aerr
		}
	}
	mark = time.Now()
	out := questionsResponse{Object: "decisions", Model: e.name}
	out.answerSet = answerSet{Answers: map[string]any{}, Thresholds: map[string]float64{}}
	for ai, a := range asks {
		set := answerSet{Answers: map[string]any{}, Thresholds: map[string]float64{}}
		for _, f := range answerers[ai] {
			set.merge(f(res))
		}
		for _, q := range a.qs {
			set.Thresholds[q.id] = q.threshold
		}
		for id, msg := range a.invalid {
			typ := ""
			for _, kv := range orderedQuestions(req, a.name) {
				if kv.key == id {
					var qb struct {
						Type string `json:"type"`
					}
					_ = json.Unmarshal(kv.val, &qb)
					typ = qb.Type
				}
			}
			set.Answers[id] = questionError{Type: typ, Error: codeQuestion, Message: msg}
			delete(set.Thresholds, id)
		}
		out.Usage.InputTokens += a.read.tokens
		out.Usage.TokensLowerBound = out.Usage.TokensLowerBound || a.read.lowerBound
		if a.name == "" {
			out.answerSet = set
		} else {
			if out.States == nil {
				out.States = map[string]answerSet{}
			}
			out.States[a.name] = set
		}
	}
	if req.Options.ReturnMeta {
		out.Meta = s.meta(e, info, t)
	}
	since(&t.post, &mark)
	return out, nil
}

func orderedQuestions(req questionsRequest, state string) orderedRaw {
	if state == "" {
		return req.Questions
	}
	return req.States[state].Questions
}

func keys(o orderedRaw) []string {
	out := make([]string, len(o))
	for i, e := range o {
		out[i] = e.key
	}
	return out
}

func parseQuestions(o orderedRaw) ([]question, map[string]string) {
	var qs []question
	invalid := map[string]string{}
	for _, e := range o {
		q, msg := parseQuestion(e.key, e.val)
		if msg != "" {
			invalid[e.key] = msg
			continue
		}
		qs = append(qs, q)
	}
	return qs, invalid
}

type questionError struct {
	Type    string `json:"type,omitempty"`
	Error   string `json:"error"`
	Message string `json:"message"`
}
