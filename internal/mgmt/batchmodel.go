package mgmt

import (
	"cmp"
	"slices"
	"strings"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
)

// ModelTyper is implemented by a classifier that knows its model's
// architecture family (config.json model_type: "bert", "roberta",
// "modernbert", ...); the batch endpoint's model selection reads it.
type ModelTyper interface {
	ModelType() string
}

// batchCandidate is a classifier the batch endpoint may use for a task.
type batchCandidate struct {
	c signal.Classifier
	// discovered: a classifier model (an ONNX package, a worker's model);
	// otherwise a legacy lexical one.
	discovered bool
	// loaded is false while the binding's worker is not ready.
	loaded bool
}

// archRank orders architecture families as document 001's batch model
// selection does: BERT-type and RoBERTa-type before ModernBERT-type, then
// the rest (other or unknown architectures, the lexical models).
func archRank(c signal.Classifier) int {
	mt, ok := c.(ModelTyper)
	if !ok {
		return 2
	}
	switch t := strings.ToLower(mt.ModelType()); {
	case strings.Contains(t, "modernbert"):
		return 1
	case strings.Contains(t, "bert"), strings.Contains(t, "roberta"):
		return 0
	}
	return 2
}

// isLexical reports whether a classifier is one of the lexical models.
func isLexical(c signal.Classifier) bool {
	m := c.Method()
	return m == signal.MethodLexicalBayes || strings.HasPrefix(m, "lexical")
}

// batchCandidates lists the classifiers for kind ("domain" or "jailbreak")
// in the order the batch endpoint tries them (document 001, model
// selection for batch): discovered classifier models before legacy ones,
// BERT/RoBERTa-type before ModernBERT-type, loaded before not loaded; the
// lexical fallback comes last, so a batch still answers while the bound
// model's worker loads.
func (s *Server) batchCandidates(gen *engine.Generation, kind string) ([]batchCandidate, error) {
	bound := gen.Models()
	var c signal.Classifier
	if kind == "domain" {
		c = bound.Domain
	} else {
		c = bound.Jailbreak
	}
	var out []batchCandidate
	if c != nil {
		_, notReady := s.unloaded(gen)[kind]
		out = append(out, batchCandidate{c: c, discovered: !isLexical(c), loaded: !notReady})
	}
	fb, err := s.lexicalModels()
	if err == nil {
		lc := fb.Domain
		if kind != "domain" {
			lc = fb.Jailbreak
		}
		if c == nil || c.Method() != lc.Method() {
			out = append(out, batchCandidate{c: lc, discovered: false, loaded: true})
		}
	}
	if len(out) == 0 {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b batchCandidate) int {
		if a.loaded != b.loaded {
			return map[bool]int{true: -1, false: 1}[a.loaded]
		}
		if a.discovered != b.discovered {
			return map[bool]int{true: -1, false: 1}[a.discovered]
		}
		return cmp.Compare(archRank(a.c), archRank(b.c))
	})
	return out, nil
}
