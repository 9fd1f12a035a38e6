package signal

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/junction-router/junction/recipes"
)

// DefaultComplexityThreshold is the symmetric margin used when a complexity
// signal sets neither threshold nor hard_above/easy_below.
const DefaultComplexityThreshold = 0.1

type complexitySet struct {
	signals []complexitySignal
	emb     *sharedEmbedder
}

type complexitySignal struct {
	name       string
	hard, easy [][]float32
	// Grading: with bounds, score >= hardAbove is hard and <= easyBelow easy;
	// otherwise score > margin is hard and < -margin easy.
	bounds               bool
	margin               float64
	hardAbove, easyBelow float64
}

func parseDecimal(name, field string, d recipes.Decimal) (float64, error) {
	v, err := d.Float()
	if err != nil {
		return 0, fmt.Errorf("signals: complexity signal %q: %s %q is not a decimal number", name, field, string(d))
	}
	return v, nil
}

func newComplexitySet(ctx context.Context, cfg []recipes.ComplexitySignal, emb *sharedEmbedder) (Set, error) {
	set := &complexitySet{emb: emb}
	var texts []string
	type span struct{ hard, easy int }
	var spans []span
	for _, c := range cfg {
		cs := complexitySignal{name: c.Name, margin: DefaultComplexityThreshold}
		if c.HardBelow.IsSet() || c.EasyAbove.IsSet() {
			return nil, fmt.Errorf("signals: complexity signal %q: hard_below/easy_above need a score-type complexity backend, which is not available; use threshold or hard_above/easy_below", c.Name)
		}
		switch {
		case c.Threshold.IsSet() && (c.HardAbove.IsSet() || c.EasyBelow.IsSet()):
			return nil, fmt.Errorf("signals: complexity signal %q: threshold and hard_above/easy_below exclude each other", c.Name)
		case c.Threshold.IsSet():
			v, err := parseDecimal(c.Name, "threshold", c.Threshold)
			if err != nil {
				return nil, err
			}
			if v < 0 || v > 1 {
				return nil, fmt.Errorf("signals: complexity signal %q: threshold %v is outside [0,1]", c.Name, v)
			}
			cs.margin = v
		case c.HardAbove.IsSet() != c.EasyBelow.IsSet():
			return nil, fmt.Errorf("signals: complexity signal %q: hard_above and easy_below are used together", c.Name)
		case c.HardAbove.IsSet():
			var err error
			if cs.hardAbove, err = parseDecimal(c.Name, "hard_above", c.HardAbove); err != nil {
				return nil, err
			}
			if cs.easyBelow, err = parseDecimal(c.Name, "easy_below", c.EasyBelow); err != nil {
				return nil, err
			}
			if cs.hardAbove < cs.easyBelow {
				return nil, fmt.Errorf("signals: complexity signal %q: hard_above %v is below easy_below %v (a higher score is harder)", c.Name, cs.hardAbove, cs.easyBelow)
			}
			cs.bounds = true
		}
		var hard, easy []string
		if c.Hard != nil {
			hard = c.Hard.Candidates
		}
		if c.Easy != nil {
			easy = c.Easy.Candidates
		}
		if len(hard)+len(easy) == 0 {
			return nil, fmt.Errorf("signals: complexity signal %q has no hard or easy candidates", c.Name)
		}
		spans = append(spans, span{len(hard), len(easy)})
		texts = append(append(texts, hard...), easy...)
		set.signals = append(set.signals, cs)
	}
	vecs, err := emb.embedAll(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("signals: complexity candidates: %w", err)
	}
	for i, sp := range spans {
		set.signals[i].hard, vecs = vecs[:sp.hard], vecs[sp.hard:]
		set.signals[i].easy, vecs = vecs[:sp.easy], vecs[sp.easy:]
	}
	return set, nil
}

func (s *complexitySet) Kind() string { return recipes.KindComplexity }
func (s *complexitySet) Cheap() bool  { return false }

// CallsModel is true unless the set embeds with the lexical embedder.
func (s *complexitySet) CallsModel() bool { return !s.emb.lexical() }

func (s *complexitySet) Missing(code string) []Result {
	out := make([]Result, len(s.signals))
	for i, cs := range s.signals {
		out[i] = Result{Kind: recipes.KindComplexity, Name: cs.name, Method: s.emb.method(), Error: code}
	}
	return out
}

// grade turns a hard-minus-easy score into a level.
func (cs *complexitySignal) grade(score float64) string {
	if cs.bounds {
		switch {
		case score >= cs.hardAbove:
			return recipes.LevelHard
		case score <= cs.easyBelow:
			return recipes.LevelEasy
		}
		return recipes.LevelMedium
	}
	switch {
	case score > cs.margin:
		return recipes.LevelHard
	case score < -cs.margin:
		return recipes.LevelEasy
	}
	return recipes.LevelMedium
}

func (s *complexitySet) Evaluate(ctx context.Context, in *Input) []Result {
	start := time.Now()
	text := inputOrEmpty(in).Text
	if strings.TrimSpace(text) == "" {
		// Nothing to compare: grade a zero score rather than fail.
		out := s.Missing("")
		for i := range out {
			cs := &s.signals[i]
			out[i].Level = cs.grade(0)
			out[i].Value, out[i].Matched = out[i].Level, true
		}
		return stamp(out, start)
	}
	v, err := s.emb.embed(ctx, text)
	if err != nil {
		return stamp(s.Missing(errorCode(ctx, err)), start)
	}
	out := make([]Result, len(s.signals))
	var buf [512]int32
	nz := s.emb.lexicalNonzero(v, buf[:0])
	for i := range s.signals {
		cs := &s.signals[i]
		hard, _, _, err1 := bestMatch(v, nz, cs.hard)
		easy, _, _, err2 := bestMatch(v, nz, cs.easy)
		if err1 != nil || err2 != nil {
			return stamp(s.Missing(CodeModelError), start)
		}
		score := roundScore(hard - easy)
		level := cs.grade(score)
		out[i] = Result{Kind: recipes.KindComplexity, Name: cs.name, Method: s.emb.method(),
			Score: score, Level: level, Value: level, Matched: true}
	}
	return stamp(out, start)
}
