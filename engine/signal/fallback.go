package signal

import (
	"context"

	"github.com/junction-router/junction/internal/lexical"
)

// Methods of the lexical fallbacks, as Result.Method reports them.
const (
	MethodLexicalBayes = lexical.MethodBayes
	MethodHashedNgrams = lexical.MethodHashed
)

// LexicalDomain returns the naive Bayes domain classifier trained on the
// shared MMLU-Redux questions (14 categories); see docs/models.md for its
// measured accuracy. It decodes an embedded file on every call.
func LexicalDomain() (Classifier, error) {
	nb, err := lexical.Domain()
	if err != nil {
		return nil, err
	}
	return bayesClassifier{nb}, nil
}

// LexicalJailbreak returns the naive Bayes prompt-injection classifier,
// labels "benign" and "jailbreak".
func LexicalJailbreak() (Classifier, error) {
	nb, err := lexical.Jailbreak()
	if err != nil {
		return nil, err
	}
	return bayesClassifier{nb}, nil
}

// HashedEmbedder returns the hashed character-n-gram embedder.
func HashedEmbedder() Embedder { return lexical.NewHashedEmbedder(0) }

// bayesClassifier adapts the lexical package, which does not import this one
// (so that the trainer and the inference packages can use it alone), to
// Classifier.
type bayesClassifier struct{ nb *lexical.NaiveBayes }

func (b bayesClassifier) Method() string { return b.nb.Method() }

func (b bayesClassifier) Classify(ctx context.Context, texts []string) ([][]LabelScore, error) {
	out, err := b.nb.Classify(ctx, texts)
	if err != nil {
		return nil, err
	}
	res := make([][]LabelScore, len(out))
	for i, ls := range out {
		res[i] = make([]LabelScore, len(ls))
		for j, l := range ls {
			res[i][j] = LabelScore{Label: l.Label, Score: l.Score}
		}
	}
	return res, nil
}

// isLexical reports whether c is a fallback that answers in microseconds and
// so needs no goroutine to bound its wait.
func isLexical(c Classifier) bool {
	_, ok := c.(bayesClassifier)
	return ok
}
