package defaultmodels

import (
	"slices"
	"strings"

	"github.com/junction-router/junction/internal/inference/onnxgraph"
)

// Heads of a joint graph: the output each default model's answer is read
// from when several of them run as one graph.
const (
	HeadDomain    = "domain"
	HeadJailbreak = "jailbreak"
	HeadEmbedding = "embedding"
)

// JointGraph builds one graph that answers for several default models at
// once: heads names which (HeadDomain, HeadJailbreak, HeadEmbedding, in that
// order), and each is an output of that name computed exactly as the
// model's own graph computes its output (same operators on the same
// values). What the models share is computed once: the word vectors' Gather,
// Cast and Mul, the SIF weights and the weighted sum over the tokens. A
// request whose signals read two or three of the models then pays for one
// ONNX Runtime run, one set of input tensors and one pass of the shared
// nodes instead of one per model: on a one-line prompt a run is mostly
// per-node overhead (docs/benchmarks.md, "Issue 16, session 13").
//
// The single-model graphs (EmbedderGraph, ClassifierGraph) are left as they
// are: their files' digests identify the models (the embedder's names its
// vector space), so they must not change.
func JointGraph(name string, b *Bundle, heads []string) *onnxgraph.Graph {
	v := b.Vectors
	g := onnxgraph.New(name)
	g.Doc("the default models " + joinHeads(heads) + " as one graph (Junction internal/inference/defaultmodels)")
	ids, m := inputs(g)

	// Shared: Σ sif·m·E[t] and Σ sif·m over the tokens.
	sif := g.Float32("sif", []int64{int64(len(v.Words))}, v.SIF)
	w := g.Op("Mul", []string{g.Op("Gather", []string{sif, ids}), m})
	h := wordVectors(g, v, ids)
	axis1 := g.Int64("", []int64{1}, []int64{1})
	axis2 := g.Int64("", []int64{1}, []int64{2})
	w3 := g.Op("Unsqueeze", []string{w, axis2})
	num := g.Op("ReduceSum", []string{g.Op("Mul", []string{h, w3}), axis1}, onnxgraph.Int("keepdims", 0))
	sumW := g.Op("ReduceSum", []string{w3, axis1}, onnxgraph.Int("keepdims", 0))

	for _, head := range heads {
		switch head {
		case HeadEmbedding:
			// EmbedderGraph: WeightedMeanPool's Max(den, 1e-9), the common
			// component, unit length.
			x := g.Op("Div", []string{num, g.Op("Max", []string{sumW, g.Float32("", nil, []float32{1e-9})})})
			if v.Common != nil {
				u := g.Float32("common", []int64{Dim, 1}, v.Common)
				ut := g.Float32("common_t", []int64{1, Dim}, v.Common)
				x = g.Op("Sub", []string{x, g.Op("MatMul", []string{g.Op("MatMul", []string{x, u}), ut})})
			}
			g.Node("Identity", []string{g.L2Normalize(x)}, []string{HeadEmbedding})
			g.Output(HeadEmbedding, onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(Dim))
		case HeadDomain, HeadJailbreak:
			l := b.Domain
			if head == HeadJailbreak {
				l = b.Jailbreak
			}
			mean := g.Op("Div", []string{num, g.Op("Add", []string{sumW, g.Float32("", nil, []float32{l.MeanPrior})})})
			out := classifierHead(g, head+"_", v, l, ids, m, mean)
			g.Node("Identity", []string{out}, []string{head})
			g.Output(head, onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(int64(len(l.Outputs))))
		}
	}
	return g
}

// classifierHead is ClassifierGraph's part after the SIF mean, with its
// weights named under prefix.
func classifierHead(g *onnxgraph.Graph, prefix string, v *Vectors, l *Linear, ids, m, mean string) string {
	c := len(l.Classes)
	vocab := len(v.Words)
	idf := make([]float32, vocab)
	row := make([]int32, vocab)
	bow := make([]float32, (len(l.BowIDs)+1)*c)
	for i, id := range l.BowIDs {
		idf[id] = l.IDF[i]
		row[id] = int32(i + 1)
		copy(bow[(i+1)*c:(i+2)*c], l.BowWeights[i*c:(i+1)*c])
	}
	dense := g.Op("MatMul", []string{mean, g.Float32(prefix+"dense", []int64{Dim, int64(c)}, l.Dense)})
	axis1 := g.Int64("", []int64{1}, []int64{1})
	axis2 := g.Int64("", []int64{1}, []int64{2})
	iw := g.Op("Mul", []string{g.Op("Gather", []string{g.Float32(prefix+"idf", []int64{int64(vocab)}, idf), ids}), m})
	if l.Presence {
		iw = g.Op("Mul", []string{iw, firstOccurrence(g, ids, vocab)})
	}
	bowRows := g.Op("Gather", []string{g.Int32(prefix+"bow_row", []int64{int64(vocab)}, row), ids})
	rows := g.Op("Gather", []string{g.Float32(prefix+"bow", []int64{int64(len(l.BowIDs) + 1), int64(c)}, bow), bowRows})
	sum := g.Op("ReduceSum", []string{g.Op("Mul", []string{rows, g.Op("Unsqueeze", []string{iw, axis2})}), axis1}, onnxgraph.Int("keepdims", 0))
	ss := g.Op("ReduceSum", []string{g.Op("Mul", []string{iw, iw}), axis1}, onnxgraph.Int("keepdims", 1))
	nrm := g.Op("Sqrt", []string{g.Op("Max", []string{ss, g.Float32("", nil, []float32{1e-24})})})
	logits := g.Op("Add", []string{g.Op("Add", []string{g.Op("Div", []string{sum, nrm}), dense}), g.Float32(prefix+"bias", []int64{int64(c)}, l.Bias)})
	agg := make([]float32, c*len(l.Outputs))
	for k, o := range l.Map {
		agg[k*len(l.Outputs)+o] = 1
	}
	probs := g.Op("MatMul", []string{g.Softmax(logits), g.Float32(prefix+"merge", []int64{int64(c), int64(len(l.Outputs))}, agg)})
	return g.Op("Log", []string{g.Op("Max", []string{probs, g.Float32("", nil, []float32{1e-30})})})
}

func joinHeads(heads []string) string {
	s := ""
	for i, h := range heads {
		if i > 0 {
			s += ", "
		}
		s += h
	}
	return s
}

// JointNames are the joint models Write creates: one per set of two or more
// default models, so that a configuration that reads some of them runs a
// graph that computes those and nothing else. Its heads are in the name, in
// the order domain, jailbreak, embedding.
var JointNames = []string{
	"glove-domain-jailbreak-embedding",
	"glove-domain-jailbreak",
	"glove-domain-embedding",
	"glove-jailbreak-embedding",
}

// JointName is the joint model for the default models names (DomainName,
// JailbreakName, EmbedderName, in any order); "" when there are fewer than
// two of them, or one is not a default model.
func JointName(names []string) string {
	var d, j, e bool
	for _, n := range names {
		switch n {
		case DomainName:
			d = true
		case JailbreakName:
			j = true
		case EmbedderName:
			e = true
		default:
			return ""
		}
	}
	name := "glove"
	k := 0
	for _, h := range []struct {
		on   bool
		head string
	}{{d, HeadDomain}, {j, HeadJailbreak}, {e, HeadEmbedding}} {
		if h.on {
			name += "-" + h.head
			k++
		}
	}
	if k < 2 {
		return ""
	}
	return name
}

// jointHeads are the heads of a joint model name (nil for another name).
func jointHeads(name string) []string {
	if !slices.Contains(JointNames, name) {
		return nil
	}
	var heads []string
	for _, h := range []string{HeadDomain, HeadJailbreak, HeadEmbedding} {
		if strings.Contains(name, "-"+h) {
			heads = append(heads, h)
		}
	}
	return heads
}

// JointModels are the default models a joint model answers for, by name.
func JointModels(name string) []string {
	var out []string
	for _, h := range jointHeads(name) {
		out = append(out, map[string]string{HeadDomain: DomainName, HeadJailbreak: JailbreakName, HeadEmbedding: EmbedderName}[h])
	}
	return out
}
