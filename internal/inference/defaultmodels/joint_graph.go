package defaultmodels

import (
	"slices"
	"strconv"
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
// order), each answered in its columns of the one output JointOutput
// (jointColumns, written in config.json). A request whose signals read
// two or three of the models then pays for one ONNX Runtime run, and on a
// one-line prompt a run is mostly per-node overhead (docs/benchmarks.md,
// "Issue 16, session 13" and "session 17"), so the graph is built for few
// nodes (31 for the three heads; the separate graphs' operators
// computed it in 78): everything that does not depend on the text is
// computed here, in Go, and what does is a few gathers and sums over the
// tokens followed by one vector's arithmetic.
//
// Per text, with the masked ids (a padded position reads word 0, [PAD],
// whose every per-word value is 0, so no mask is multiplied anywhere else):
//
//	S1  = Σ a(t)·Q[t]                    a = SIF·scale, Q the int8 vectors (MatMul of [1,T] by [T,Dim])
//	SA  = Σ A[t]                         A: per word, SIF and the non-presence heads' idf² and idf·bow rows
//	SB  = Σ B[t]/count(t)                B: the presence heads' rows (each distinct word once: a word seen
//	                                     c times weighs 1/c at each occurrence), count by one Unique
//	Z   = S1·Wd                          Wd: each classifier's Dense, the embedding's I − uuᵀ
//	y   = Z/(den + prior) + bow/sqrt(ss) + bias, per column, den, ss and bow selected from [SA SB] by one MatMul
//
// (The selection is exact: each column of its matrix holds one 1. A Gather
// of those columns instead measured dearer: ONNX Runtime's Gather on an
// inner axis copies element by element.)
//
// The classifier heads output their classes' logits (the Go side takes the
// softmax in float64 and adds each output's classes: jointConfig's
// "classes"), the embedding head the embedding before its unit length (the
// Go side normalises it, as it did). The answers are the separate models'
// to float32 rounding: the sums run in another order, the SIF weight is
// folded into the dequantisation scale and the common component's removal
// into one matrix (TestJointMatchesSeparateModels: within 1e-5, same top
// labels). Each squared-idf column carries jointEps in every word's row,
// which vanishes beside any real idf² in float32 and keeps a text without a
// bag-of-words word from dividing 0 by 0 (the separate graphs' Max(ss,
// 1e-24)).
//
// The single-model graphs (EmbedderGraph, ClassifierGraph) are left as they
// are: their files' digests identify the models (the embedder's names its
// vector space), so they must not change.
func JointGraph(name string, b *Bundle, heads []string) *onnxgraph.Graph {
	v := b.Vectors
	vocab := len(v.Words)
	g := onnxgraph.New(name)
	g.Doc("the default models " + joinHeads(heads) + " as one graph (Junction internal/inference/defaultmodels, joint format " + strconv.Itoa(JointVersion) + ")")
	ids := g.Input("input_ids", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))
	mask := g.Input("attention_mask", onnxgraph.Int64, onnxgraph.Sym("batch"), onnxgraph.Sym("sequence"))

	// The output columns, head by head, and the feature columns: group A
	// (SIF and the heads that count every occurrence, a dense per-word
	// table) and group B (the presence heads, rows for their words only).
	type head struct {
		name     string
		l        *Linear // nil: the embedding
		off, n   int     // output columns
		ss, bow  int     // feature columns of idf² and of the first class's idf·bow, in [A B]
		presence bool
	}
	var hs []head
	n, ka, kb := 0, 1, 0 // column 0 of A is SIF
	for _, h := range heads {
		x := head{name: h, off: n}
		switch h {
		case HeadEmbedding:
			x.n = Dim
		case HeadDomain, HeadJailbreak:
			x.l = b.Domain
			if h == HeadJailbreak {
				x.l = b.Jailbreak
			}
			x.n = len(x.l.Classes)
			x.presence = x.l.Presence
			if x.presence {
				x.ss, kb = kb, kb+1+x.n
			} else {
				x.ss, ka = ka, ka+1+x.n
			}
			x.bow = x.ss + 1
		}
		hs = append(hs, x)
		n += x.n
	}
	for i := range hs {
		if hs[i].l != nil && hs[i].presence {
			hs[i].ss += ka
			hs[i].bow += ka
		}
	}
	k := ka + kb

	// Group A: one row per word.
	ta := make([]float32, vocab*ka)
	aw := make([]float32, vocab) // SIF·scale, the weight of a word's int8 vector
	for id := 1; id < vocab; id++ {
		ta[id*ka] = v.SIF[id]
		aw[id] = v.SIF[id] * v.Scale[id]
	}
	// Group B: row 0 for the words no presence head saw, then one per word
	// some presence head saw.
	rowB := make([]int32, vocab)
	nb := 1
	for _, x := range hs {
		if x.l != nil && x.presence {
			for _, id := range x.l.BowIDs {
				if rowB[id] == 0 {
					rowB[id] = int32(nb)
					nb++
				}
			}
		}
	}
	tb := make([]float32, nb*kb)
	for _, x := range hs {
		if x.l == nil {
			continue
		}
		c := x.n
		t, w, col := ta, ka, x.ss
		rows := vocab
		if x.presence {
			t, w, col, rows = tb, kb, x.ss-ka, nb
		}
		for r := 0; r < rows; r++ {
			t[r*w+col] = jointEps
		}
		for i, id := range x.l.BowIDs {
			r := int(id)
			if x.presence {
				r = int(rowB[id])
			}
			idf := x.l.IDF[i]
			t[r*w+col] = idf*idf + jointEps
			for j := 0; j < c; j++ {
				t[r*w+col+1+j] = x.l.BowWeights[i*c+j] * idf
			}
		}
	}

	// Per column: the dense weights (or I − uuᵀ), the prior, the bias; and
	// the selection of den, ss and bow from [SA SB].
	wd := make([]float32, Dim*n)
	prior := make([]float32, n)
	bias := make([]float32, n)
	sel := make([]float32, k*3*n)
	ssOf := -1 // the squared-idf column the embedding's columns divide by (their bow is 0)
	for _, x := range hs {
		if x.l != nil {
			ssOf = x.ss
			break
		}
	}
	for _, x := range hs {
		for j := 0; j < x.n; j++ {
			col := x.off + j
			sel[0*3*n+col] = 1 // den: SIF's sum
			if x.l == nil {
				for d := 0; d < Dim; d++ {
					p := float32(0)
					if d == j {
						p = 1
					}
					if v.Common != nil {
						p -= v.Common[d] * v.Common[j]
					}
					wd[d*n+col] = p
				}
				prior[col] = 1e-9
				sel[ssOf*3*n+n+col] = 1
				continue
			}
			for d := 0; d < Dim; d++ {
				wd[d*n+col] = x.l.Dense[d*x.n+j]
			}
			prior[col] = x.l.MeanPrior
			bias[col] = x.l.Bias[j]
			sel[x.ss*3*n+n+col] = 1
			sel[(x.bow+j)*3*n+2*n+col] = 1
		}
	}

	idm := g.Op("Mul", []string{ids, mask})
	idm3 := g.Op("Unsqueeze", []string{idm, g.Int64("", []int64{1}, []int64{1})}) // [B,1,T]
	wa := g.Op("Gather", []string{g.Float32("sif_scale", []int64{int64(vocab)}, aw), idm3})
	q := g.Op("Cast", []string{g.Op("Gather", []string{g.Int8("embeddings_q", []int64{int64(vocab), Dim}, v.Q), idm})}, onnxgraph.Int("to", int64(onnxgraph.Float)))
	s1 := g.Op("MatMul", []string{wa, q}) // [B,1,Dim]
	x := g.Op("ReduceSum", []string{g.Op("Gather", []string{g.Float32("words_a", []int64{int64(vocab), int64(ka)}, ta), idm}), g.Int64("", []int64{1}, []int64{1})}, onnxgraph.Int("keepdims", 1))
	if kb > 0 {
		// Each row's ids offset by (row+1)·vocab, so that one Unique over
		// the batch counts every row's words apart.
		shape := g.Op("Shape", []string{idm3})
		off := g.Op("CumSum", []string{g.Op("ConstantOfShape", []string{shape}, onnxgraph.TensorAttr("value", onnxgraph.Int64, []int64{1}, nil, []int64{int64(vocab)})), g.Int64("", nil, []int64{0})})
		keys := g.Op("Add", []string{idm3, off})
		inverse, counts := g.Fresh("inverse"), g.Fresh("counts")
		g.Node("Unique", []string{keys}, []string{g.Fresh("unique"), g.Fresh("first"), inverse, counts}, onnxgraph.Int("sorted", 0))
		once := g.Op("Reciprocal", []string{g.Op("Cast", []string{counts}, onnxgraph.Int("to", int64(onnxgraph.Float)))})
		wb := g.Op("Reshape", []string{g.Op("Gather", []string{once, inverse}), shape}) // [B,1,T]
		rows := g.Op("Gather", []string{g.Int32("words_b_row", []int64{int64(vocab)}, rowB), idm})
		sb := g.Op("MatMul", []string{wb, g.Op("Gather", []string{g.Float32("words_b", []int64{int64(nb), int64(kb)}, tb), rows})})
		x = g.Op("Concat", []string{x, sb}, onnxgraph.Int("axis", 2))
	}
	z := g.Op("MatMul", []string{s1, g.Float32("dense", []int64{Dim, int64(n)}, wd)}) // [B,1,N]
	den, ss, bow := g.Fresh("den"), g.Fresh("ss"), g.Fresh("bow")
	nn := int64(n)
	g.Node("Split", []string{g.Op("MatMul", []string{x, g.Float32("select", []int64{int64(k), 3 * nn}, sel)}), g.Int64("", []int64{3}, []int64{nn, nn, nn})}, []string{den, ss, bow}, onnxgraph.Int("axis", 2))
	y := g.Op("Div", []string{z, g.Op("Add", []string{den, g.Float32("prior", []int64{nn}, prior)})})
	y = g.Op("Add", []string{y, g.Op("Div", []string{bow, g.Op("Sqrt", []string{ss})})})
	y = g.Op("Add", []string{y, g.Float32("bias", []int64{nn}, bias)})
	g.Node("Reshape", []string{y, g.Int64("", []int64{2}, []int64{0, -1})}, []string{JointOutput}) // [B,N]
	g.Output(JointOutput, onnxgraph.Float, onnxgraph.Sym("batch"), onnxgraph.Fixed(nn))
	return g
}

// JointOutput is a joint graph's one output: every head's columns side by
// side (one output tensor instead of one per head, and no Split node).
const JointOutput = "heads"

// jointColumns are the columns of JointOutput each head answers in:
// offset and width, the heads side by side in their order (a classifier
// head's classes, the embedding's Dim values).
func jointColumns(b *Bundle, heads []string) map[string][2]int {
	cols := map[string][2]int{}
	off := 0
	for _, h := range heads {
		n := Dim
		switch h {
		case HeadDomain:
			n = len(b.Domain.Classes)
		case HeadJailbreak:
			n = len(b.Jailbreak.Classes)
		}
		cols[h] = [2]int{off, n}
		off += n
	}
	return cols
}

// JointVersion is the joint graphs' format, written in their config.json
// ("joint_version") and required when one is loaded: 2 since the graph
// outputs class logits and an embedding before its unit length (session
// 17); the first joint graphs output each model's own outputs.
const JointVersion = 2

// jointEps is what each squared-idf column holds for a word the head did
// not see, and adds to a word it saw (JointGraph).
const jointEps = 1e-24

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
