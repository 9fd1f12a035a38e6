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

// Question answering (POST /v1/decisions, /v1/systemone) about a state text.
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

type decisionsOptions struct {
	ReturnMeta bool `json:"return_meta"`
	MaxTokens  int  `json:"max_tokens"`
}

type decisionsRequest struct {
	Model     string                  `json:"model"`
	State     *string                 `json:"state"`
	Questions orderedRaw              `json:"questions"`
	States    map[string]stateRequest `json:"states"`
	Images    []string                `json:"images"`
	Options   decisionsOptions        `json:"options"`
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

// stateAsk is one state and its questions, as answered.
type stateAsk struct {
	name    string // "" for the top-level state
	text    string
	read    prepared
	qs      []question
	invalid map[string]string // id → message
	order   []string
}

// hyp is where an option's value comes from in the batched results.
type hyp struct {
	unit  int // embedding of the hypothesis, or the (state, hypothesis) pair, or -1
	label int // classifier label index, or -1
}

// plan collects every unit one request needs from its model, without
// duplicates, so all questions share one batched call.
type plan struct {
	m     Model
	info  Info
	units []unit
	index map[Pair]int
	limit int
}

func (p *plan) add(pr Pair, tokens int) int {
	if i, ok := p.index[pr]; ok {
		return i
	}
	p.index[pr] = len(p.units)
	p.units = append(p.units, unit{pair: pr, tokens: tokens})
	return len(p.units) - 1
}

func (p *plan) text(s string, limit int) (string, int) {
	r := prepare(p.m, p.info, s, budget{overflow: overflowTruncate, maxTokens: limit})
	if r.err != nil || len(r.pieces) == 0 {
		return "", 0
	}
	return r.pieces[0].text, r.tokens
}

func hypothesis(q question, o option) string {
	d := o.Description
	if d == "" {
		d = o.Key
	}
	if q.instructions == "" {
		return d
	}
	return q.instructions + ": " + d
}

func (s *Server) decisions(ctx context.Context, body []byte, t *timing) (any, *apiError) {
	mark := time.Now()
	var req decisionsRequest
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
	var asks []*stateAsk
	if req.State != nil || len(req.Questions) > 0 {
		if req.State == nil {
			return nil, badRequest("field /state is required with /questions")
		}
		if len(req.Images) > 0 {
			return nil, badRequest("field /images: model %q does not list the image modality", e.name)
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
	for ai, a := range asks {
		stateLimit := limit
		if info.Task == TaskRerank {
			stateLimit = max(limit*3/4, 1)
		}
		a.read = prepare(b.model, info, a.text, budget{overflow: overflowTruncate, maxTokens: stateLimit})
		for _, q := range a.qs {
			f, msg := s.planQuestion(p, a, q)
			if msg != "" {
				a.invalid[q.id] = msg
				continue
			}
			answerers[ai] = append(answerers[ai], f)
		}
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
	out := decisionsResponse{Object: "decisions", Model: e.name}
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

func orderedQuestions(req decisionsRequest, state string) orderedRaw {
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

// answerSet is the answers about one state.
type answerSet struct {
	Answers    map[string]any       `json:"answers"`
	Sets       map[string]setAnswer `json:"sets,omitempty"`
	Spans      map[string][]spanOut `json:"spans,omitempty"`
	Thresholds map[string]float64   `json:"thresholds"`
}

func (a *answerSet) merge(b answerSet) {
	if a.Answers == nil {
		a.Answers = map[string]any{}
	}
	for k, v := range b.Answers {
		a.Answers[k] = v
	}
	for k, v := range b.Sets {
		if a.Sets == nil {
			a.Sets = map[string]setAnswer{}
		}
		a.Sets[k] = v
	}
	for k, v := range b.Spans {
		if a.Spans == nil {
			a.Spans = map[string][]spanOut{}
		}
		a.Spans[k] = v
	}
}

type decisionsResponse struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	answerSet
	States map[string]answerSet `json:"states,omitempty"`
	Usage  usage                `json:"usage"`
	Meta   *meta                `json:"meta,omitempty"`
}

type choiceAnswer struct {
	Type               string             `json:"type"`
	Choice             *string            `json:"choice"`
	Confidence         float64            `json:"confidence"`
	Probabilities      map[string]float64 `json:"probabilities"`
	AbstainProbability float64            `json:"abstain_probability"`
}

type noulAnswer struct {
	Type string  `json:"type"`
	Noul float64 `json:"noul"`
}

type scoreAnswer struct {
	Type          string             `json:"type"`
	Score         int                `json:"score"`
	Confidence    float64            `json:"confidence"`
	Legend        map[string]string  `json:"legend"`
	Probabilities map[string]float64 `json:"probabilities"`
}

type setAnswer struct {
	Selected      []string           `json:"selected"`
	Probabilities map[string]float64 `json:"probabilities"`
}

// planQuestion adds what q needs to the plan and returns how to answer it
// from the results, or a message when this model cannot answer it.
func (s *Server) planQuestion(p *plan, a *stateAsk, q question) (func([]Result) answerSet, string) {
	info := p.info
	state := ""
	if len(a.read.pieces) > 0 {
		state = a.read.pieces[0].text
	}
	if a.read.err != nil {
		return nil, "state: " + a.read.err.Message
	}
	opts := q.opts
	if q.typ == "noul" && len(opts) == 0 {
		opts = []option{{Key: "true", Description: q.instructions}}
		q.instructions = ""
	}

	// scoreOf returns, for a context text (state or segment), each option's
	// (logit for softmax, independent probability) from the results.
	var scoreOf func(ctxText string) (func([]Result) ([]float64, []float64), string)
	switch info.Task {
	case TaskEmbedding:
		scoreOf = func(ctxText string) (func([]Result) ([]float64, []float64), string) {
			tx, n := p.text(ctxText, p.limit)
			ci := p.add(Pair{Text: tx}, n)
			idx := make([]int, len(opts))
			for i, o := range opts {
				h, hn := p.text(hypothesis(q, o), p.limit)
				idx[i] = p.add(Pair{Text: h}, hn)
			}
			return func(res []Result) ([]float64, []float64) {
				l, pr := make([]float64, len(idx)), make([]float64, len(idx))
				for i, hi := range idx {
					l[i] = 20 * (cosine(res[ci].Vector, res[hi].Vector) - 0.5)
					pr[i] = sigmoid(l[i])
				}
				return l, pr
			}, ""
		}
	case TaskRerank:
		scoreOf = func(ctxText string) (func([]Result) ([]float64, []float64), string) {
			tx, n := p.text(ctxText, max(p.limit*3/4, 1))
			idx := make([]int, len(opts))
			for i, o := range opts {
				h, hn := p.text(hypothesis(q, o), max(p.limit/4, 1))
				idx[i] = p.add(Pair{Text: tx, Pair: h}, n+hn)
			}
			return func(res []Result) ([]float64, []float64) {
				l, pr := make([]float64, len(idx)), make([]float64, len(idx))
				for i, ui := range idx {
					switch sc := res[ui].Scores; {
					case len(sc) > 1:
						l[i] = float64(sc[1]) // the raw logit
					case len(sc) == 1:
						l[i] = float64(sc[0])
					}
					pr[i] = sigmoid(l[i])
				}
				return l, pr
			}, ""
		}
	case TaskSequence:
		labels := make([]int, len(opts))
		for i, o := range opts {
			labels[i] = labelIndex(info.Labels, o)
			if labels[i] < 0 {
				return nil, fmt.Sprintf("questions/%s: option %q names none of model labels (%s); this classifier answers only about its labels",
					q.id, o.Key, strings.Join(info.Labels, ", "))
			}
		}
		scoreOf = func(ctxText string) (func([]Result) ([]float64, []float64), string) {
			tx, n := p.text(ctxText, p.limit)
			ci := p.add(Pair{Text: tx}, n)
			return func(res []Result) ([]float64, []float64) {
				l, pr := make([]float64, len(labels)), make([]float64, len(labels))
				for i, li := range labels {
					if li < len(res[ci].Scores) {
						pr[i] = float64(res[ci].Scores[li])
					}
					l[i] = math.Log(max(pr[i], 1e-12))
				}
				return l, pr
			}, ""
		}
	case TaskTokens:
		if q.typ != "span" {
			return nil, fmt.Sprintf("questions/%s/type: a token classifier answers only span questions", q.id)
		}
	}

	abstain := func(pr []float64) float64 {
		if info.Task == TaskSequence && !info.MultiLabel {
			sum := 0.0
			for _, v := range pr {
				sum += v
			}
			return clamp01(1 - sum)
		}
		prod := 1.0
		for _, v := range pr {
			prod *= 1 - v
		}
		return prod
	}

	switch q.typ {
	case "choice", "score":
		f, _ := scoreOf(state)
		return func(res []Result) answerSet {
			l, pr := f(res)
			probs := softmax(l)
			best := argmax(probs)
			m := map[string]float64{}
			for i, o := range opts {
				m[o.Key] = probs[i]
			}
			set := answerSet{Answers: map[string]any{}}
			if q.typ == "choice" {
				ans := choiceAnswer{Type: "choice", Confidence: probs[best], Probabilities: m, AbstainProbability: abstain(pr)}
				if probs[best] >= q.threshold {
					ans.Choice = &opts[best].Key
				}
				set.Answers[q.id] = ans
				return set
			}
			legend := map[string]string{}
			for i, o := range opts {
				legend[fmt.Sprint(i)] = o.Description
			}
			set.Answers[q.id] = scoreAnswer{Type: "score", Score: best, Confidence: probs[best], Legend: legend, Probabilities: m}
			return set
		}, ""
	case "noul":
		f, _ := scoreOf(state)
		return func(res []Result) answerSet {
			l, pr := f(res)
			var v float64
			switch {
			case len(opts) == 2:
				ti := 0
				if opts[0].Key != "true" {
					ti = 1
				}
				v = softmax(l)[ti]
			case opts[0].Key == "true":
				v = pr[0]
			default:
				v = 1 - pr[0]
			}
			return answerSet{Answers: map[string]any{q.id: noulAnswer{"noul", v}}}
		}, ""
	case "set":
		f, _ := scoreOf(state)
		return func(res []Result) answerSet {
			_, pr := f(res)
			set := answerSet{Answers: map[string]any{}, Sets: map[string]setAnswer{}}
			sa := setAnswer{Selected: []string{}, Probabilities: map[string]float64{}}
			for i, o := range opts {
				set.Answers[q.id+"."+o.Key] = noulAnswer{"noul", pr[i]}
				sa.Probabilities[o.Key] = pr[i]
				if pr[i] >= q.threshold {
					sa.Selected = append(sa.Selected, o.Key)
				}
			}
			set.Sets[q.id] = sa
			return set
		}, ""
	case "span":
		if info.Task == TaskTokens {
			ci := p.add(Pair{Text: state}, a.read.tokens)
			want := map[string]string{}
			for _, o := range opts {
				li := labelIndex(info.Labels, o)
				if li < 0 {
					return nil, fmt.Sprintf("questions/%s/labels: %q names none of model labels (%s)", q.id, o.Key, strings.Join(info.Labels, ", "))
				}
				want[info.Labels[li]] = o.Key
			}
			return func(res []Result) answerSet {
				spans := []spanOut{}
				best := 0.0
				for _, sp := range res[ci].Spans {
					key, ok := want[sp.Label]
					if !ok || float64(sp.Probability) < q.threshold || sp.Start < 0 || sp.End > len(state) || sp.Start > sp.End {
						continue
					}
					best = max(best, float64(sp.Probability))
					spans = append(spans, spanOut{Label: key, Start: codePoints(state, sp.Start), End: codePoints(state, sp.End),
						Text: state[sp.Start:sp.End], Probability: sp.Probability})
				}
				return answerSet{Answers: map[string]any{q.id: noulAnswer{"noul", best}}, Spans: map[string][]spanOut{q.id: spans}}
			}, ""
		}
		segs := segments(state)
		fs := make([]func([]Result) ([]float64, []float64), len(segs))
		for i, sg := range segs {
			fs[i], _ = scoreOf(sg.text)
		}
		return func(res []Result) answerSet {
			spans := []spanOut{}
			best := 0.0
			for i, sg := range segs {
				_, pr := fs[i](res)
				for li, o := range opts {
					best = max(best, pr[li])
					if pr[li] >= q.threshold {
						spans = append(spans, spanOut{Label: o.Key, Start: codePoints(state, sg.offset), End: codePoints(state, sg.offset+len(sg.text)),
							Text: sg.text, Probability: float32(pr[li])})
					}
				}
			}
			return answerSet{Answers: map[string]any{q.id: noulAnswer{"noul", best}}, Spans: map[string][]spanOut{q.id: spans}}
		}, ""
	}
	return nil, fmt.Sprintf("questions/%s/type: unsupported", q.id)
}

// labelIndex finds the model label an option names, by key or description
// (case-insensitive); -1 when none.
func labelIndex(labels []string, o option) int {
	for _, c := range []string{o.Key, o.Description} {
		for i, l := range labels {
			if c != "" && strings.EqualFold(l, c) {
				return i
			}
		}
	}
	return -1
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func clamp01(x float64) float64 { return min(max(x, 0), 1) }

func softmax(l []float64) []float64 {
	out := make([]float64, len(l))
	if len(l) == 0 {
		return out
	}
	m := l[0]
	for _, v := range l {
		m = max(m, v)
	}
	sum := 0.0
	for i, v := range l {
		out[i] = math.Exp(v - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

func argmax(v []float64) int {
	b := 0
	for i := range v {
		if v[i] > v[b] {
			b = i
		}
	}
	return b
}
