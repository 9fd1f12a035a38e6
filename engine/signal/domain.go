package signal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/junction-router/junction/recipes"
)

// DomainCategories returns the 14 categories of the domain classifier (the
// MMLU-Pro grouping of MMLU subjects).
func DomainCategories() []string {
	return []string{"business", "law", "psychology", "biology", "chemistry", "history", "other",
		"health", "economics", "math", "physics", "computer science", "philosophy", "engineering"}
}

// maxDomainBytes bounds the text sent to the domain classifier: far more than
// a model's input window, so it changes nothing for a model, and it keeps the
// lexical fallback's cost bounded on huge prompts.
const maxDomainBytes = 32 << 10

type domainSet struct {
	signals []domainSignal
	clf     Classifier
}

type domainSignal struct {
	name       string
	categories map[string]bool // lower case
	threshold  float64
}

func newDomainSet(cfg []recipes.DomainSignal, clf Classifier) (Set, error) {
	set := &domainSet{clf: clf}
	// The fallback's labels are known, so a signal that can never match is
	// a configuration error rather than a silent miss.
	fallback := clf == nil
	if fallback {
		var err error
		if set.clf, err = LexicalDomain(); err != nil {
			return nil, err
		}
	}
	known := DomainCategories()
	for _, c := range cfg {
		if c.Threshold < 0 || c.Threshold > 1 {
			return nil, fmt.Errorf("signals: domain signal %q: threshold %v is outside [0,1]", c.Name, c.Threshold)
		}
		ds := domainSignal{name: c.Name, threshold: c.Threshold, categories: map[string]bool{}}
		cats := c.MMLUCategories
		if len(cats) == 0 {
			cats = []string{c.Name}
		}
		for _, cat := range cats {
			k := strings.ToLower(strings.TrimSpace(cat))
			if fallback && !slices.Contains(known, k) {
				if len(c.MMLUCategories) == 0 {
					return nil, fmt.Errorf("signals: domain signal %q is not a classifier category and lists no mmlu_categories (categories: %s)",
						c.Name, strings.Join(known, ", "))
				}
				return nil, fmt.Errorf("signals: domain signal %q: %q is not a classifier category (categories: %s)",
					c.Name, cat, strings.Join(known, ", "))
			}
			ds.categories[k] = true
		}
		set.signals = append(set.signals, ds)
	}
	return set, nil
}

func (s *domainSet) Kind() string { return recipes.KindDomain }
func (s *domainSet) Cheap() bool  { return false }

// CallsModel is true unless the set runs the lexical fallback.
func (s *domainSet) CallsModel() bool { return !isLexical(s.clf) }

// CheapFor is true for a short text to the lexical fallback; a model call
// always runs on its own goroutine.
func (s *domainSet) CheapFor(in *Input) bool {
	return isLexical(s.clf) && len(inputOrEmpty(in).Text) <= inlineLexicalBytes
}

func (s *domainSet) Missing(code string) []Result {
	out := make([]Result, len(s.signals))
	for i, ds := range s.signals {
		out[i] = Result{Kind: recipes.KindDomain, Name: ds.name, Method: s.clf.Method(), Error: code}
	}
	return out
}

func (s *domainSet) Evaluate(ctx context.Context, in *Input) []Result {
	start := time.Now()
	text := truncateUTF8(inputOrEmpty(in).Text, maxDomainBytes)
	out := make([]Result, len(s.signals))
	for i, ds := range s.signals {
		out[i] = Result{Kind: recipes.KindDomain, Name: ds.name, Method: s.clf.Method()}
	}
	if strings.TrimSpace(text) == "" {
		return stamp(out, start)
	}
	texts := []string{text}
	var dists [][]LabelScore
	var err error
	if isLexical(s.clf) {
		dists, err = s.clf.Classify(ctx, texts)
	} else {
		dists, err = callModel(ctx, func(ctx context.Context) ([][]LabelScore, error) { return s.clf.Classify(ctx, texts) })
	}
	if err == nil && (len(dists) != 1 || len(dists[0]) == 0) {
		err = fmt.Errorf("classifier returned no distribution")
	}
	if err != nil {
		return stamp(s.Missing(errorCode(ctx, err)), start)
	}
	top := dists[0][0]
	for _, l := range dists[0][1:] {
		if l.Score > top.Score {
			top = l
		}
	}
	cat := strings.ToLower(top.Label)
	for i, ds := range s.signals {
		out[i].Score, out[i].Value = top.Score, top.Label
		out[i].Matched = ds.categories[cat] && top.Score >= ds.threshold
	}
	return stamp(out, start)
}

// Staged reports whether the set's model asks through a Stage.
func (s *domainSet) Staged() bool { return isStaged(s.clf) }
