// Package synthetic writes tiny model directories of the real shapes: a BERT-like encoder graph (word,
// position and token-type embeddings, layer norm, attention layers with a padding mask, feed-forward with GELU)
// with a task head — sequence classification logits [B,labels], token classification logits [B,T,labels],
// last_hidden_state [B,T,H] or a pooled, normalised sentence_embedding [B,H], cross-encoder logits [B,1] — next
// to its config.json and a WordPiece, byte-level BPE or WordLevel tokenizer.json.
//
// Weights are pseudo-random from a seed, so a directory is deterministic; Reference recomputes the same
// network in Go (float64) so tests compare ONNX Runtime's numbers against an independent computation. The
// models carry no knowledge: they exist to test and benchmark the runtime without downloads. This package
// must not be used to serve anything.
package synthetic

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"

	"github.com/junction-router/junction/internal/inference/onnxgraph"
)

// Tasks a synthetic model can have (the values of inference.Task).
const (
	SequenceClassification = "sequence-classification"
	TokenClassification    = "token-classification"
	Embedding              = "embedding"
	Rerank                 = "rerank"
)

// Tokenizer kinds.
const (
	WordPiece = "wordpiece" // BERT: lowercasing BertNormalizer, BertPreTokenizer, [CLS] $A [SEP]
	BPE       = "bpe"       // RoBERTa: byte-level BPE, <s> $A </s>
	WordLevel = "wordlevel" // GloVe style: Lowercase + Whitespace, no special tokens added
)

// Spec describes a synthetic model.
type Spec struct {
	Task       string
	Tokenizer  string   // default WordPiece
	TokenTypes bool     // the graph takes token_type_ids (BERT); RoBERTa and ModernBERT exports do not
	Hidden     int      // default 8
	Layers     int      // default 1
	FFN        int      // default 2 × Hidden
	Labels     []string // classification labels (default LABEL_0, LABEL_1); rerank has one
	MultiLabel bool     // config.json problem_type multi_label_classification
	MaxTokens  int      // max_position_embeddings; default 64
	Pooled     bool     // embedding: the graph pools and normalises (output sentence_embedding [B,H])
	Matryoshka []int    // embedding: declared truncation widths
	// HiddenLayers (embedding, not Pooled): the graph also outputs each
	// layer's hidden states as hidden_states.<n> (n from 1), declared in
	// config.json junction.layers.
	HiddenLayers bool
	Words        []string // vocabulary words (default: a small English list)
	ExtraWords   int      // synthetic words w0…wN added to the vocabulary (to reach a realistic size)
	Seed         int64
}

// Model is a written synthetic model: its weights, for Reference.
type Model struct {
	Spec  Spec
	Vocab map[string]int64 // token → id
	w     weights
}

type weights struct {
	word, pos, typ     [][]float64
	embG, embB         []float64
	layers             []layer
	poolW, clsW, tokW  [][]float64
	poolB, clsB, tokB  []float64
	vocabSize, nLabels int
}

type layer struct {
	q, k, v, o, f1, f2       [][]float64
	qb, kb, vb, ob, f1b, f2b []float64
	g1, b1, g2, b2           []float64
}

// DefaultWords is the vocabulary used when Spec.Words is empty.
var DefaultWords = []string{
	"the", "a", "an", "is", "are", "was", "of", "to", "in", "and", "or", "not", "on", "for", "with", "my", "your",
	"hello", "world", "how", "you", "what", "who", "where", "call", "me", "at", "email", "name", "john", "smith",
	"paris", "london", "new", "york", "city", "bank", "account", "number", "phone", "ignore", "previous",
	"instructions", "system", "prompt", "tell", "secret", "math", "physics", "law", "history", "question",
	"answer", "solve", "equation", "energy", "court", "contract", "war", "king", "cat", "dog", "sat", "mat",
	"café", "über", "naïve", "東京", "play", "playing", "un", "able", "token", "window", "long", "text",
}

func (s *Spec) defaults() error {
	if s.Tokenizer == "" {
		s.Tokenizer = WordPiece
	}
	if s.Hidden == 0 {
		s.Hidden = 8
	}
	if s.Layers == 0 {
		s.Layers = 1
	}
	if s.FFN == 0 {
		s.FFN = 2 * s.Hidden
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = 64
	}
	if len(s.Words) == 0 {
		s.Words = DefaultWords
	}
	switch s.Task {
	case SequenceClassification, TokenClassification:
		if len(s.Labels) == 0 {
			s.Labels = []string{"LABEL_0", "LABEL_1"}
		}
	case Rerank:
		s.Labels = []string{"LABEL_0"}
	case Embedding:
		s.Labels = nil
	default:
		return fmt.Errorf("synthetic: unknown task %q", s.Task)
	}
	switch s.Tokenizer {
	case WordPiece, BPE, WordLevel:
	default:
		return fmt.Errorf("synthetic: unknown tokenizer %q", s.Tokenizer)
	}
	return nil
}

// Write creates dir with model.onnx, config.json and tokenizer.json for spec.
func Write(dir string, spec Spec) (*Model, error) {
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	m := &Model{Spec: spec}
	tokJSON, vocab, err := buildTokenizer(spec)
	if err != nil {
		return nil, err
	}
	m.Vocab = vocab
	rng := rand.New(rand.NewSource(spec.Seed + 1))
	m.w = newWeights(rng, spec, len(vocab))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := m.graph().WriteFile(filepath.Join(dir, "model.onnx"), onnxgraph.ModelOptions{Producer: "junction-synthetic"}); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokJSON, 0o644); err != nil {
		return nil, err
	}
	cfg, err := m.config()
	if err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
}

func matrix(rng *rand.Rand, rows, cols int, scale float64) [][]float64 {
	m := make([][]float64, rows)
	for i := range m {
		m[i] = vector(rng, cols, scale)
	}
	return m
}

func vector(rng *rand.Rand, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		// float32-representable values so the graph and the reference hold identical weights
		v[i] = float64(float32((rng.Float64()*2 - 1) * scale))
	}
	return v
}

func newWeights(rng *rand.Rand, s Spec, vocab int) weights {
	h := s.Hidden
	sc := 1 / math.Sqrt(float64(h))
	w := weights{
		word: matrix(rng, vocab, h, 1), pos: matrix(rng, s.MaxTokens, h, 0.5), typ: matrix(rng, 2, h, 0.5),
		embG: vector(rng, h, 0.2), embB: vector(rng, h, 0.1), vocabSize: vocab, nLabels: len(s.Labels),
	}
	for i := range w.embG {
		w.embG[i] += 1
	}
	for l := 0; l < s.Layers; l++ {
		ly := layer{
			q: matrix(rng, h, h, sc), k: matrix(rng, h, h, sc), v: matrix(rng, h, h, sc), o: matrix(rng, h, h, sc),
			f1: matrix(rng, h, s.FFN, sc), f2: matrix(rng, s.FFN, h, 1/math.Sqrt(float64(s.FFN))),
			qb: vector(rng, h, 0.1), kb: vector(rng, h, 0.1), vb: vector(rng, h, 0.1), ob: vector(rng, h, 0.1),
			f1b: vector(rng, s.FFN, 0.1), f2b: vector(rng, h, 0.1),
			g1: vector(rng, h, 0.2), b1: vector(rng, h, 0.1), g2: vector(rng, h, 0.2), b2: vector(rng, h, 0.1),
		}
		for i := range ly.g1 {
			ly.g1[i]++
			ly.g2[i]++
		}
		w.layers = append(w.layers, ly)
	}
	if n := len(s.Labels); n > 0 {
		w.poolW, w.poolB = matrix(rng, h, h, sc), vector(rng, h, 0.1)
		w.clsW, w.clsB = matrix(rng, h, n, 2*sc), vector(rng, n, 0.5)
		w.tokW, w.tokB = matrix(rng, h, n, 2*sc), vector(rng, n, 0.5)
	}
	return w
}

func flat(m [][]float64) []float32 {
	var out []float32
	for _, row := range m {
		for _, v := range row {
			out = append(out, float32(v))
		}
	}
	return out
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func (m *Model) graph() *onnxgraph.Graph {
	s, w := m.Spec, m.w
	h := int64(s.Hidden)
	g := onnxgraph.New("synthetic-" + s.Task)
	B, T := onnxgraph.Sym("batch"), onnxgraph.Sym("sequence")
	ids := g.Input("input_ids", onnxgraph.Int64, B, T)
	mask := g.Input("attention_mask", onnxgraph.Int64, B, T)
	x := g.Op("Gather", []string{g.Float32("word_embeddings", []int64{int64(w.vocabSize), h}, flat(w.word)), ids})
	if s.TokenTypes {
		tt := g.Input("token_type_ids", onnxgraph.Int64, B, T)
		x = g.Op("Add", []string{x, g.Op("Gather", []string{g.Float32("token_type_embeddings", []int64{2, h}, flat(w.typ)), tt})})
	}
	// positions 0..T-1 from the input's shape
	tlen := g.Op("Gather", []string{g.Op("Shape", []string{ids}), g.Int64("", nil, []int64{1})})
	positions := g.Op("Range", []string{g.Int64("", nil, []int64{0}), tlen, g.Int64("", nil, []int64{1})})
	x = g.Op("Add", []string{x, g.Op("Gather", []string{g.Float32("position_embeddings", []int64{int64(s.MaxTokens), h}, flat(w.pos)), positions})})
	ln := func(x string, gamma, beta []float64) string {
		return g.Op("LayerNormalization", []string{x, g.Float32("", []int64{h}, f32(gamma)), g.Float32("", []int64{h}, f32(beta))},
			onnxgraph.Int("axis", -1), onnxgraph.FloatAttr("epsilon", 1e-5))
	}
	x = ln(x, w.embG, w.embB)
	maskF := g.MaskToFloat(mask)
	// additive mask [B,1,T]: 0 for tokens, -10000 for padding
	bias := g.Op("Mul", []string{g.Op("Sub", []string{g.Float32("", nil, []float32{1}), maskF}), g.Float32("", nil, []float32{-10000})})
	bias = g.Op("Unsqueeze", []string{bias, g.Int64("", []int64{1}, []int64{1})})
	lin := func(x string, W [][]float64, b []float64) string {
		return g.Linear(x, g.Float32("", []int64{int64(len(W)), int64(len(W[0]))}, flat(W)), g.Float32("", []int64{int64(len(b))}, f32(b)))
	}
	var hidden []string
	for _, ly := range w.layers {
		q, k, v := lin(x, ly.q, ly.qb), lin(x, ly.k, ly.kb), lin(x, ly.v, ly.vb)
		scores := g.Op("MatMul", []string{q, g.Op("Transpose", []string{k}, onnxgraph.Ints("perm", 0, 2, 1))})
		scores = g.Op("Add", []string{g.Op("Mul", []string{scores, g.Float32("", nil, []float32{float32(1 / math.Sqrt(float64(h)))})}), bias})
		ctx := g.Op("MatMul", []string{g.Op("Softmax", []string{scores}, onnxgraph.Int("axis", -1)), v})
		x = ln(g.Op("Add", []string{x, lin(ctx, ly.o, ly.ob)}), ly.g1, ly.b1)
		f := lin(x, ly.f1, ly.f1b)
		// GELU: 0.5·f·(1+erf(f/√2))
		erf := g.Op("Erf", []string{g.Op("Mul", []string{f, g.Float32("", nil, []float32{float32(1 / math.Sqrt2)})})})
		f = g.Op("Mul", []string{g.Op("Mul", []string{f, g.Float32("", nil, []float32{0.5})}), g.Op("Add", []string{erf, g.Float32("", nil, []float32{1})})})
		x = ln(g.Op("Add", []string{x, lin(f, ly.f2, ly.f2b)}), ly.g2, ly.b2)
		hidden = append(hidden, x)
	}
	n := int64(len(s.Labels))
	switch s.Task {
	case Embedding:
		if s.Pooled {
			g.Node("Identity", []string{g.L2Normalize(g.WeightedMeanPool(x, maskF))}, []string{"sentence_embedding"})
			g.Output("sentence_embedding", onnxgraph.Float, B, onnxgraph.Fixed(h))
		} else {
			g.Node("Identity", []string{x}, []string{"last_hidden_state"})
			g.Output("last_hidden_state", onnxgraph.Float, B, T, onnxgraph.Fixed(h))
			if s.HiddenLayers {
				for i, hs := range hidden {
					name := "hidden_states." + strconv.Itoa(i+1)
					g.Node("Identity", []string{hs}, []string{name})
					g.Output(name, onnxgraph.Float, B, T, onnxgraph.Fixed(h))
				}
			}
		}
	case TokenClassification:
		g.Node("Identity", []string{lin(x, w.tokW, w.tokB)}, []string{"logits"})
		g.Output("logits", onnxgraph.Float, B, T, onnxgraph.Fixed(n))
	default: // sequence classification and rerank: [CLS] → tanh pooler → classifier
		cls := g.Op("Gather", []string{x, g.Int64("", nil, []int64{0})}, onnxgraph.Int("axis", 1))
		pooled := g.Op("Tanh", []string{lin(cls, w.poolW, w.poolB)})
		g.Node("Identity", []string{lin(pooled, w.clsW, w.clsB)}, []string{"logits"})
		g.Output("logits", onnxgraph.Float, B, onnxgraph.Fixed(n))
	}
	return g
}

func (m *Model) config() ([]byte, error) {
	s := m.Spec
	modelType, arch := "bert", "Bert"
	maxPos := s.MaxTokens
	if s.Tokenizer == BPE {
		modelType, arch = "roberta", "Roberta"
		maxPos += 2 // RoBERTa counts two offset positions
	}
	cfg := map[string]any{
		"model_type":              modelType,
		"hidden_size":             s.Hidden,
		"num_hidden_layers":       s.Layers,
		"max_position_embeddings": maxPos,
		"vocab_size":              len(m.Vocab),
	}
	switch s.Task {
	case Embedding:
		cfg["architectures"] = []string{arch + "Model"}
		j := map[string]any{}
		if len(s.Matryoshka) > 0 {
			j["matryoshka_dimensions"] = s.Matryoshka
		}
		if !s.Pooled {
			j["pooling"] = "mean"
			if s.HiddenLayers {
				layers := map[string]string{}
				for i := 1; i <= s.Layers; i++ {
					layers[strconv.Itoa(i)] = "hidden_states." + strconv.Itoa(i)
				}
				j["layers"] = layers
			}
		}
		cfg["junction"] = j
	case TokenClassification:
		cfg["architectures"] = []string{arch + "ForTokenClassification"}
	default:
		cfg["architectures"] = []string{arch + "ForSequenceClassification"}
	}
	if len(s.Labels) > 0 {
		id2label := map[string]string{}
		for i, l := range s.Labels {
			id2label[strconv.Itoa(i)] = l
		}
		cfg["id2label"] = id2label
	}
	if s.MultiLabel {
		cfg["problem_type"] = "multi_label_classification"
	}
	return json.MarshalIndent(cfg, "", "  ")
}
