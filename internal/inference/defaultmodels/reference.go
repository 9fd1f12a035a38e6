package defaultmodels

import "math"

// The Go reference of the graphs: the same arithmetic on the same ids, used by
// the tests to check that ONNX Runtime computes what was trained and measured.

// Mean returns the SIF mean of the vectors of ids.
func (v *Vectors) Mean(ids []int32) []float64 { return v.mean(ids, 0) }

// mean is the SIF mean with prior added to its denominator.
func (v *Vectors) mean(ids []int32, prior float64) []float64 {
	out := make([]float64, Dim)
	row := make([]float32, Dim)
	total := 0.0
	for _, id := range ids {
		w := float64(v.SIF[id])
		if w == 0 {
			continue
		}
		v.Row(int(id), row)
		total += w
		for k, x := range row {
			out[k] += w * float64(x)
		}
	}
	if total+prior > 0 {
		for k := range out {
			out[k] /= total + prior
		}
	}
	return out
}

// Embed returns the sentence embedding of ids.
func (v *Vectors) Embed(ids []int32) []float32 {
	x := v.Mean(ids)
	if v.Common != nil {
		d := 0.0
		for k, u := range v.Common {
			d += x[k] * float64(u)
		}
		for k, u := range v.Common {
			x[k] -= d * float64(u)
		}
	}
	n := 0.0
	for _, a := range x {
		n += a * a
	}
	n = math.Sqrt(max(n, 1e-24))
	out := make([]float32, Dim)
	for k, a := range x {
		out[k] = float32(a / n)
	}
	return out
}

// Probabilities returns the output probabilities of ids.
func (l *Linear) Probabilities(v *Vectors, ids []int32) []float64 {
	c := len(l.Classes)
	row := map[int32]int{}
	for i, id := range l.BowIDs {
		row[id] = i
	}
	z := make([]float64, c)
	ss := 0.0
	seen := map[int32]bool{}
	for _, id := range ids {
		i, ok := row[id]
		if !ok || (l.Presence && seen[id]) {
			continue
		}
		seen[id] = true
		w := float64(l.IDF[i])
		ss += w * w
		for k := range z {
			z[k] += w * float64(l.BowWeights[i*c+k])
		}
	}
	if ss > 0 {
		for k := range z {
			z[k] /= math.Sqrt(ss)
		}
	}
	g := v.mean(ids, float64(l.MeanPrior))
	for k := range z {
		for d, x := range g {
			z[k] += x * float64(l.Dense[d*c+k])
		}
		z[k] += float64(l.Bias[k])
	}
	mx := math.Inf(-1)
	for _, x := range z {
		mx = max(mx, x)
	}
	s := 0.0
	for k, x := range z {
		z[k] = math.Exp(x - mx)
		s += z[k]
	}
	out := make([]float64, len(l.Outputs))
	for k, x := range z {
		out[l.Map[k]] += x / s
	}
	return out
}
