package worker

import (
	"fmt"
	"math"
	"strings"
)

// How questions become one batched model call (plan, planQuestion) and how
// its results become answers; the questions are read in questions.go.

// stateAsk is one state and its questions, as answered.
type stateAsk struct {
	name    string // "" for the top-level state
	text    string
	read    prepared
	qs      []question
	invalid map[string]string // id → message
	order   []string
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

type questionsResponse struct {
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
