// Package lexical holds the model-free fallbacks of the signal package (engine/signal): a
// multinomial naive Bayes text classifier (domain and jailbreak, trained from
// the shared data and embedded as small files) and a hashed character-n-gram
// embedder. They exist so that every signal kind works before a model runtime
// is configured; they are honest baselines, not substitutes for the ONNX models
// that replace them, and their Method names say so.
//
// The package imports nothing of Junction's, so the trainer binary, the
// inference packages and the plugin host's default backends
// (internal/plugin/wasm, which the author harness builds on) can use it
// without pulling in the signal package. It must not do I/O beyond decoding
// its embedded models.
package lexical

import (
	"context"
	"math"
	"slices"
	"sort"
)

// MethodBayes names the naive Bayes classifier in routing output.
const MethodBayes = "lexical-bayes"

// LabelScore is a label with its probability.
type LabelScore struct {
	Label string
	Score float64
}

// NaiveBayes is a trained multinomial naive Bayes classifier. It is immutable
// after construction and safe for concurrent use.
type NaiveBayes struct {
	labels []string // training classes
	// outLabels are the labels callers see; outIndex maps each training
	// class to one of them (see Model.Merge).
	outLabels []string
	outIndex  []int
	features  Features
	logPrior  []float64
	// index maps a feature's hash to its row in logProb; hashing rather than
	// string keys keeps prediction free of per-token allocations (bigram keys
	// would otherwise have to be concatenated).
	index   map[uint64]int32
	logProb []float32 // row-major: row*len(labels) + class
	// temperature divides the joint log-likelihoods before the softmax. Naive
	// Bayes treats correlated tokens as independent evidence and so reports
	// near-certain probabilities; the temperature is fitted by cross-validation
	// to make thresholds on its probabilities meaningful.
	temperature float64
	boost       *boost
}

type boost struct {
	label int
	floor float64
}

// Labels returns the labels predictions carry, in model order.
func (nb *NaiveBayes) Labels() []string { return slices.Clone(nb.outLabels) }

// Features returns the feature extraction the model was trained with.
func (nb *NaiveBayes) Features() Features { return nb.features }

// Method names the classifier for routing output.
func (nb *NaiveBayes) Method() string { return MethodBayes }

// Predict returns the label distribution of text, most probable first (ties in
// label order).
func (nb *NaiveBayes) Predict(text string) []LabelScore {
	scores := nb.jointLog(text, nil)
	return nb.distribution(text, scores)
}

// Classify predicts every text; it stops early when ctx is done.
func (nb *NaiveBayes) Classify(ctx context.Context, texts []string) ([][]LabelScore, error) {
	out := make([][]LabelScore, len(texts))
	var buf []uint64
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var scores []float64
		scores, buf = nb.jointLogBuf(t, buf)
		out[i] = nb.distribution(t, scores)
	}
	return out, nil
}

func (nb *NaiveBayes) jointLog(text string, buf []uint64) []float64 {
	s, _ := nb.jointLogBuf(text, buf)
	return s
}

// jointLogBuf returns log P(c) + Σ log P(f|c) over the text's known features.
// Features never seen in training carry no evidence and are skipped, as in the
// training-time evaluation.
func (nb *NaiveBayes) jointLogBuf(text string, buf []uint64) ([]float64, []uint64) {
	nc := len(nb.labels)
	scores := make([]float64, nc)
	copy(scores, nb.logPrior)
	buf = buf[:0]
	nb.features.hashes(text, func(h uint64) { buf = append(buf, h) })
	if nb.features.Binary {
		slices.Sort(buf)
		buf = slices.Compact(buf)
	}
	for _, h := range buf {
		row, ok := nb.index[h]
		if !ok {
			continue
		}
		lp := nb.logProb[int(row)*nc : int(row)*nc+nc]
		for c := range scores {
			scores[c] += float64(lp[c])
		}
	}
	return scores, buf
}

func (nb *NaiveBayes) distribution(text string, scores []float64) []LabelScore {
	probs := softmax(scores, nb.temperature)
	if nb.boost != nil {
		applyBoost(probs, nb.boost, text)
	}
	out := make([]LabelScore, len(nb.outLabels))
	for i, l := range nb.outLabels {
		out[i].Label = l
	}
	for c, p := range probs {
		out[nb.outIndex[c]].Score += p
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}

func softmax(scores []float64, temperature float64) []float64 {
	if temperature <= 0 {
		temperature = 1
	}
	max := math.Inf(-1)
	for _, s := range scores {
		if s > max {
			max = s
		}
	}
	out := make([]float64, len(scores))
	var sum float64
	for i, s := range scores {
		out[i] = math.Exp((s - max) / temperature)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// applyBoost raises the boosted label to its floor on a phrase hit and scales
// the other labels down so that the distribution still sums to one.
func applyBoost(probs []float64, b *boost, text string) {
	p := probs[b.label]
	if p >= b.floor || !HasInjectionPhrase(text) {
		return
	}
	scale := (1 - b.floor) / (1 - p)
	for i := range probs {
		probs[i] *= scale
	}
	probs[b.label] = b.floor
}
