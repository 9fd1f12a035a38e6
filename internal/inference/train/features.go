package train

import (
	"math"
	"sort"
)

// FeatureConfig says how tokens become the features of a linear classifier.
// Every choice is one an ONNX graph of Gather, ReduceSum, Div and MatMul can
// compute from the token ids the tokenizer emits (see export.go).
type FeatureConfig struct {
	// MaxTokens truncates the token sequence (the tokenizer's max_length).
	MaxTokens int `json:"max_tokens"`
	// BoW adds a TF-IDF bag of words over the training vocabulary, scaled to
	// unit length over token occurrences: Σ idf(t)·e_t / sqrt(Σ idf(t)²).
	BoW bool `json:"bow"`
	// Dense weighs the standardised SIF-weighted mean of the GloVe vectors
	// (0 leaves it out).
	Dense float64 `json:"dense"`
	// SIFa is the a of the SIF weight a/(a+p(w)).
	SIFa float64 `json:"sif_a"`
	// MeanPrior is added to the SIF mean's denominator: a pseudo-count of
	// weight that pulls the mean of a short text towards zero, whose few
	// vectors would otherwise be read as confidently as a paragraph's.
	MeanPrior float64 `json:"mean_prior"`
	// Presence counts a word once in the bag of words however often the
	// text repeats it (binary term frequency), the vector scaled to unit
	// length over the distinct words; otherwise every occurrence counts.
	Presence bool `json:"presence,omitempty"`
}

// SIFWeight is the smooth inverse frequency weight of a word of the given
// 1-based frequency rank among size words; frequency is estimated by Zipf's
// law, p(r) = 1/(r·H).
func SIFWeight(a float64, rank, size int) float64 {
	h := math.Log(float64(size)) + 0.5772156649
	p := 1 / (float64(rank) * h)
	return a / (a + p)
}

// Featurizer turns token lists into feature vectors; it is fitted on the
// training part only (vocabulary, IDF, standardisation).
type Featurizer struct {
	Cfg   FeatureConfig
	Vocab map[string]int32 // BoW feature index
	Words []string         // Vocab in index order
	IDF   []float64
	GloVe *GloVe
	Mean  []float64
	Std   []float64
}

// NewFeaturizer fits a featurizer on the token lists of the training texts.
func NewFeaturizer(cfg FeatureConfig, g *GloVe, docs [][]string) *Featurizer {
	f := &Featurizer{Cfg: cfg, GloVe: g, Vocab: map[string]int32{}}
	if cfg.BoW {
		df := map[string]int{}
		for _, d := range docs {
			seen := map[string]bool{}
			for _, t := range f.truncate(d) {
				if !seen[t] {
					seen[t] = true
					df[t]++
				}
			}
		}
		for w := range df {
			f.Words = append(f.Words, w)
		}
		sort.Strings(f.Words)
		n := float64(len(docs))
		f.IDF = make([]float64, len(f.Words))
		for i, w := range f.Words {
			f.Vocab[w] = int32(i)
			f.IDF[i] = math.Log((1+n)/(1+float64(df[w]))) + 1
		}
	}
	if cfg.Dense > 0 {
		f.Mean = make([]float64, Dim)
		f.Std = make([]float64, Dim)
		ms := make([][]float64, len(docs))
		for i, d := range docs {
			ms[i] = f.SIFMean(d)
			for k, v := range ms[i] {
				f.Mean[k] += v
			}
		}
		for k := range f.Mean {
			f.Mean[k] /= float64(len(docs))
		}
		for _, m := range ms {
			for k, v := range m {
				f.Std[k] += (v - f.Mean[k]) * (v - f.Mean[k])
			}
		}
		for k := range f.Std {
			f.Std[k] = math.Sqrt(f.Std[k]/float64(len(docs))) + 1e-6
		}
	}
	return f
}

func (f *Featurizer) truncate(d []string) []string {
	if f.Cfg.MaxTokens > 0 && len(d) > f.Cfg.MaxTokens {
		return d[:f.Cfg.MaxTokens]
	}
	return d
}

// SIFMean is the SIF-weighted mean of the GloVe vectors of the tokens that
// have one (zero when none has).
func (f *Featurizer) SIFMean(d []string) []float64 {
	m := make([]float64, Dim)
	total := 0.0
	for _, t := range f.truncate(d) {
		v, ok := f.GloVe.Vec[t]
		if !ok {
			continue
		}
		w := f.GloVe.weight(t, f.Cfg.SIFa)
		total += w
		for k, x := range v {
			m[k] += w * float64(x)
		}
	}
	if total+f.Cfg.MeanPrior > 0 {
		for k := range m {
			m[k] /= total + f.Cfg.MeanPrior
		}
	}
	return m
}

// NumFeatures is the width of the feature vectors.
func (f *Featurizer) NumFeatures() int {
	n := len(f.Words)
	if f.Cfg.Dense > 0 {
		n += Dim
	}
	return n
}

// Features returns the sparse feature vector of one token list.
func (f *Featurizer) Features(d []string) []Entry {
	var out []Entry
	if f.Cfg.BoW {
		acc := map[int32]float64{}
		ss := 0.0
		for _, t := range f.truncate(d) {
			i, ok := f.Vocab[t]
			if !ok {
				continue
			}
			acc[i] += f.IDF[i]
			ss += f.IDF[i] * f.IDF[i]
		}
		idx := make([]int32, 0, len(acc))
		for i := range acc {
			idx = append(idx, i)
		}
		sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
		if f.Cfg.Presence {
			// In index order: a sum in map order would change the last
			// bits from run to run, and make models-check compares bytes.
			ss = 0
			for _, i := range idx {
				acc[i] = f.IDF[i]
				ss += acc[i] * acc[i]
			}
		}
		for _, i := range idx {
			out = append(out, Entry{i, acc[i] / math.Sqrt(ss)})
		}
	}
	if f.Cfg.Dense > 0 {
		m := f.SIFMean(d)
		base := int32(len(f.Words))
		for k, v := range m {
			out = append(out, Entry{base + int32(k), f.Cfg.Dense * (v - f.Mean[k]) / f.Std[k]})
		}
	}
	return out
}
