package synthetic

import "math"

// Output is the reference computation of one unpadded row.
type Output struct {
	Hidden      [][]float64 // last hidden state [T][H]
	Logits      []float64   // sequence classification and rerank logits
	TokenLogits [][]float64 // token classification logits [T][labels]
	Sentence    []float64   // mean-pooled hidden state, L2-normalised when the graph pools
}

// Reference recomputes the network in float64 for one row of token ids (and token type ids, ignored when the
// graph takes none). It is independent of ONNX Runtime: tests compare the two.
func (m *Model) Reference(ids, typeIDs []int64) Output {
	s, w := m.Spec, m.w
	T, H := len(ids), s.Hidden
	x := make([][]float64, T)
	for t := range x {
		x[t] = make([]float64, H)
		for k := 0; k < H; k++ {
			x[t][k] = w.word[ids[t]][k] + w.pos[t][k]
			if s.TokenTypes {
				x[t][k] += w.typ[typeIDs[t]][k]
			}
		}
		layerNorm(x[t], w.embG, w.embB)
	}
	for _, ly := range w.layers {
		q, k, v := matmul(x, ly.q, ly.qb), matmul(x, ly.k, ly.kb), matmul(x, ly.v, ly.vb)
		ctx := make([][]float64, T)
		for i := 0; i < T; i++ {
			scores := make([]float64, T)
			maxS := math.Inf(-1)
			for j := 0; j < T; j++ {
				scores[j] = dot(q[i], k[j]) / math.Sqrt(float64(H))
				maxS = math.Max(maxS, scores[j])
			}
			var sum float64
			for j := range scores {
				scores[j] = math.Exp(scores[j] - maxS)
				sum += scores[j]
			}
			ctx[i] = make([]float64, H)
			for j := 0; j < T; j++ {
				for c := 0; c < H; c++ {
					ctx[i][c] += scores[j] / sum * v[j][c]
				}
			}
		}
		att := matmul(ctx, ly.o, ly.ob)
		for t := range x {
			for c := range x[t] {
				x[t][c] += att[t][c]
			}
			layerNorm(x[t], ly.g1, ly.b1)
		}
		f := matmul(x, ly.f1, ly.f1b)
		for t := range f {
			for c := range f[t] {
				f[t][c] = 0.5 * f[t][c] * (1 + math.Erf(f[t][c]/math.Sqrt2))
			}
		}
		f2 := matmul(f, ly.f2, ly.f2b)
		for t := range x {
			for c := range x[t] {
				x[t][c] += f2[t][c]
			}
			layerNorm(x[t], ly.g2, ly.b2)
		}
	}
	out := Output{Hidden: x}
	switch s.Task {
	case Embedding:
		out.Sentence = make([]float64, H)
		for t := range x {
			for c := range x[t] {
				out.Sentence[c] += x[t][c] / float64(T)
			}
		}
		if s.Pooled {
			n := math.Sqrt(dot(out.Sentence, out.Sentence))
			for c := range out.Sentence {
				out.Sentence[c] /= n
			}
		}
	case TokenClassification:
		out.TokenLogits = matmul(x, w.tokW, w.tokB)
	default:
		pooled := matmul(x[:1], w.poolW, w.poolB)[0]
		for c := range pooled {
			pooled[c] = math.Tanh(pooled[c])
		}
		out.Logits = matmul([][]float64{pooled}, w.clsW, w.clsB)[0]
	}
	return out
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func matmul(x, W [][]float64, b []float64) [][]float64 {
	out := make([][]float64, len(x))
	for t := range x {
		out[t] = append([]float64(nil), b...)
		for i, xv := range x[t] {
			for j, wv := range W[i] {
				out[t][j] += xv * wv
			}
		}
	}
	return out
}

func layerNorm(x, g, b []float64) {
	var mean, varr float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		varr += (v - mean) * (v - mean)
	}
	varr /= float64(len(x))
	inv := 1 / math.Sqrt(varr+1e-5)
	for i := range x {
		x[i] = (x[i]-mean)*inv*g[i] + b[i]
	}
}
