package signal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/junction-router/junction/recipes"
)

// DefaultJailbreakThreshold is the attack probability a jailbreak signal
// matches at when its threshold is unset.
const DefaultJailbreakThreshold = 0.5

// attackLabels are the labels prompt-guard style classifiers give attacks;
// a three-way model (benign, injection, jailbreak) counts both.
var attackLabels = map[string]bool{"jailbreak": true, "injection": true, "prompt_injection": true, "1": true, "label_1": true}

// benignLabels let a model that only reports the benign probability work.
var benignLabels = map[string]bool{"benign": true, "safe": true, "0": true, "label_0": true}

var errUnknownLabels = errors.New("classifier returned no attack or benign label")

// attackProbability reads the attack probability from one distribution.
func attackProbability(ls []LabelScore) (float64, error) {
	var attack, benign float64
	var sawAttack, sawBenign bool
	for _, l := range ls {
		switch k := strings.ToLower(l.Label); {
		case attackLabels[k]:
			attack += l.Score
			sawAttack = true
		case benignLabels[k]:
			benign += l.Score
			sawBenign = true
		}
	}
	switch {
	case sawAttack:
		return min(attack, 1), nil
	case sawBenign:
		return max(0, 1-benign), nil
	}
	return 0, errUnknownLabels
}

// ReadsJailbreakLabels reports whether a jailbreak signal can read the
// distribution ls: it has an attack or a benign label. A model bound
// elsewhere (a worker) checks its answers with it.
func ReadsJailbreakLabels(ls []LabelScore) bool {
	_, err := attackProbability(ls)
	return err == nil
}

type jailbreakSet struct {
	signals   []jailbreakSignal
	clf       Classifier
	scanBytes int
}

type jailbreakSignal struct {
	name      string
	threshold float64
	unscanned bool
}

func newJailbreakSet(cfg []recipes.JailbreakSignal, clf Classifier, scanBytes int) (Set, error) {
	set := &jailbreakSet{clf: clf, scanBytes: scanBytes}
	for _, c := range cfg {
		js := jailbreakSignal{name: c.Name, threshold: c.Threshold}
		if c.Threshold < 0 || c.Threshold > 1 {
			return nil, fmt.Errorf("signals: jailbreak signal %q: threshold %v is outside [0,1]", c.Name, c.Threshold)
		}
		if js.threshold == 0 {
			js.threshold = DefaultJailbreakThreshold
		}
		var err error
		if js.unscanned, err = unscannedMatches(recipes.KindJailbreak, c.Name, c.OnUnscanned); err != nil {
			return nil, err
		}
		set.signals = append(set.signals, js)
	}
	if set.clf == nil {
		var err error
		if set.clf, err = LexicalJailbreak(); err != nil {
			return nil, err
		}
	}
	if m, ok := modelUnscanned(set.clf); ok {
		for i := range set.signals {
			set.signals[i].unscanned = m
		}
	}
	return set, nil
}

func (s *jailbreakSet) Kind() string { return recipes.KindJailbreak }
func (s *jailbreakSet) Cheap() bool  { return false }

// CallsModel is true unless the set runs the lexical fallback.
func (s *jailbreakSet) CallsModel() bool { return !isLexical(s.clf) }

// CheapFor is true for short input to the lexical fallback; a model call
// always runs on its own goroutine.
func (s *jailbreakSet) CheapFor(in *Input) bool {
	return isLexical(s.clf) && scanSize(in, inlineLexicalBytes) <= inlineLexicalBytes
}

func (s *jailbreakSet) Missing(code string) []Result {
	out := make([]Result, len(s.signals))
	for i, js := range s.signals {
		out[i] = Result{Kind: recipes.KindJailbreak, Name: js.name, Method: s.clf.Method(), Error: code,
			Unscanned: true, Matched: js.unscanned}
	}
	return out
}

func (s *jailbreakSet) Evaluate(ctx context.Context, in *Input) []Result {
	start := time.Now()
	texts, _, over := scanTexts(inputOrEmpty(in), s.scanBytes, nil)
	var score float64
	if len(texts) > 0 {
		var dists [][]LabelScore
		var err error
		if isLexical(s.clf) {
			dists, err = s.clf.Classify(ctx, texts)
		} else {
			dists, err = callModel(ctx, func(ctx context.Context) ([][]LabelScore, error) { return s.clf.Classify(ctx, texts) })
		}
		if err == nil && len(dists) != len(texts) {
			err = fmt.Errorf("classifier returned %d results for %d texts", len(dists), len(texts))
		}
		for _, d := range dists {
			if err != nil {
				break
			}
			var p float64
			p, err = attackProbability(d)
			score = max(score, p)
		}
		if err != nil {
			return stamp(s.Missing(errorCode(ctx, err)), start)
		}
	}
	out := make([]Result, len(s.signals))
	for i, js := range s.signals {
		r := Result{Kind: recipes.KindJailbreak, Name: js.name, Method: s.clf.Method(), Score: score, Matched: score >= js.threshold}
		if over {
			r.Unscanned, r.Error = true, CodeInputLimit
			r.Matched = r.Matched || js.unscanned
		}
		out[i] = r
	}
	return stamp(out, start)
}

// Staged reports whether the set's model asks through a Stage.
func (s *jailbreakSet) Staged() bool { return isStaged(s.clf) }
