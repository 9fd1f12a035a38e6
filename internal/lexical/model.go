package lexical

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// ModelFormat identifies the stored naive Bayes model layout.
const ModelFormat = "junction-lexical-bayes/1"

// Model is a trained naive Bayes model in its stored form: counts rather than
// probabilities, because integers compress far better than floats and keep the
// file reproducible byte for byte. Build turns it into a classifier.
type Model struct {
	Format   string   `json:"format"`
	Labels   []string `json:"labels"`
	Features Features `json:"features"`
	// Alpha is the additive (Laplace/Lidstone) smoothing of feature counts.
	Alpha float64 `json:"alpha"`
	// UniformPrior ignores class frequencies; ClassDocs is kept for reference.
	UniformPrior bool    `json:"uniform_prior"`
	Temperature  float64 `json:"temperature"`
	ClassDocs    []int   `json:"class_docs"`
	// Vocab lists the kept features, sorted; Counts[i] holds class-index and
	// count pairs for Vocab[i] (only classes where it occurred).
	// InjectionPhrases, when set, raises Label's probability to at least
	// Floor for a text with a well-known injection phrasing (HasInjectionPhrase).
	// The trainer sets it only when cross-validation shows that it helps.
	InjectionPhrases *PhraseBoost `json:"injection_phrases,omitempty"`
	// Merge reports some training classes under another label: a class
	// trained apart because its texts differ (exam questions beside chat
	// prompts) but that means the same to callers. Predictions sum them.
	Merge  map[string]string `json:"merge,omitempty"`
	Vocab  []string          `json:"vocab"`
	Counts [][]int32         `json:"counts"`
}

// PhraseBoost is a probability floor for texts with an injection phrasing.
type PhraseBoost struct {
	Label string  `json:"label"`
	Floor float64 `json:"floor"`
}

// Build checks the model and turns it into a classifier.
func (m *Model) Build() (*NaiveBayes, error) {
	if m.Format != ModelFormat {
		return nil, fmt.Errorf("lexical: model format %q, want %q", m.Format, ModelFormat)
	}
	nc := len(m.Labels)
	if nc < 2 {
		return nil, errors.New("lexical: model needs at least two labels")
	}
	if len(m.ClassDocs) != nc || len(m.Counts) != len(m.Vocab) {
		return nil, errors.New("lexical: model arrays disagree in length")
	}
	if m.Alpha <= 0 {
		return nil, errors.New("lexical: model smoothing alpha must be positive")
	}
	totals := make([]float64, nc)
	for i, pairs := range m.Counts {
		if len(pairs)%2 != 0 {
			return nil, fmt.Errorf("lexical: counts of %q are not class/count pairs", m.Vocab[i])
		}
		for j := 0; j < len(pairs); j += 2 {
			c := int(pairs[j])
			if c < 0 || c >= nc || pairs[j+1] < 0 {
				return nil, fmt.Errorf("lexical: bad count for %q", m.Vocab[i])
			}
			totals[c] += float64(pairs[j+1])
		}
	}
	nb := &NaiveBayes{
		labels:      slices.Clone(m.Labels),
		features:    m.Features,
		logPrior:    priors(m.ClassDocs, m.UniformPrior),
		index:       make(map[uint64]int32, len(m.Vocab)),
		logProb:     make([]float32, len(m.Vocab)*nc),
		temperature: m.Temperature,
	}
	nb.outIndex = make([]int, nc)
	for c, l := range m.Labels {
		out := l
		if to, ok := m.Merge[l]; ok {
			out = to
		}
		i := slices.Index(nb.outLabels, out)
		if i < 0 {
			i = len(nb.outLabels)
			nb.outLabels = append(nb.outLabels, out)
		}
		nb.outIndex[c] = i
	}
	for from := range m.Merge {
		if !slices.Contains(m.Labels, from) {
			return nil, fmt.Errorf("lexical: merge names unknown label %q", from)
		}
	}
	if b := m.InjectionPhrases; b != nil {
		i := slices.Index(m.Labels, b.Label)
		if i < 0 || b.Floor <= 0 || b.Floor > 1 {
			return nil, fmt.Errorf("lexical: bad injection phrase boost %+v", *b)
		}
		nb.boost = &boost{label: i, floor: b.Floor}
	}
	v := float64(len(m.Vocab))
	denom := make([]float64, nc)
	for c := range denom {
		denom[c] = math.Log(totals[c] + m.Alpha*v)
	}
	unseen := make([]float32, nc)
	for c := range unseen {
		unseen[c] = float32(math.Log(m.Alpha) - denom[c])
	}
	for i, f := range m.Vocab {
		h := featureHash(f)
		if _, dup := nb.index[h]; dup {
			return nil, fmt.Errorf("lexical: feature %q collides with another", f)
		}
		nb.index[h] = int32(i)
		row := nb.logProb[i*nc : i*nc+nc]
		copy(row, unseen)
		pairs := m.Counts[i]
		for j := 0; j < len(pairs); j += 2 {
			c := pairs[j]
			row[c] = float32(math.Log(float64(pairs[j+1])+m.Alpha) - denom[c])
		}
	}
	return nb, nil
}

func priors(classDocs []int, uniform bool) []float64 {
	out := make([]float64, len(classDocs))
	var n float64
	for _, d := range classDocs {
		n += float64(d)
	}
	for c, d := range classDocs {
		if uniform || n == 0 {
			out[c] = -math.Log(float64(len(classDocs)))
			continue
		}
		// One pseudo-document keeps an empty class from getting log(0).
		out[c] = math.Log((float64(d) + 1) / (n + float64(len(classDocs))))
	}
	return out
}

// Encode writes the model as gzipped JSON. The output depends only on the
// model: gzip gets no name or time, and the vocabulary is sorted.
func (m *Model) Encode(w io.Writer) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(zw).Encode(m); err != nil {
		return err
	}
	return zw.Close()
}

// Decode reads a model written by Encode.
func Decode(r io.Reader) (*Model, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("lexical: %w", err)
	}
	defer zr.Close()
	var m Model
	if err := json.NewDecoder(zr).Decode(&m); err != nil {
		return nil, fmt.Errorf("lexical: decoding model: %w", err)
	}
	return &m, nil
}
