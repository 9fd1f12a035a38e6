package train

import (
	"math"
)

// Entry is one non-zero feature of an example.
type Entry struct {
	Index int32
	Value float64
}

// LogReg is a multinomial logistic regression: P(c|x) = softmax(b + xW).
type LogReg struct {
	Features, Classes int
	// W is Features×Classes, row-major.
	W []float64
	B []float64
}

// FitLogReg minimises the mean cross-entropy plus lambda/2·‖W‖² (the bias is
// not penalised) with L-BFGS from zero, a deterministic procedure: the same
// data gives the same weights.
func FitLogReg(xs [][]Entry, ys []int, weights []float64, features, classes int, lambda float64, maxIter int) *LogReg {
	n := features*classes + classes
	theta := make([]float64, n)
	obj := func(th, grad []float64) float64 {
		return lrObjective(xs, ys, weights, features, classes, lambda, th, grad)
	}
	lbfgs(obj, theta, maxIter, 1e-5)
	return &LogReg{Features: features, Classes: classes, W: theta[:features*classes], B: theta[features*classes:]}
}

// Logits returns b + xW.
func (m *LogReg) Logits(x []Entry) []float64 {
	out := append([]float64(nil), m.B...)
	for _, e := range x {
		row := m.W[int(e.Index)*m.Classes : int(e.Index+1)*m.Classes]
		for c, w := range row {
			out[c] += e.Value * w
		}
	}
	return out
}

// Softmax turns logits into probabilities in place and returns them.
func Softmax(z []float64) []float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = max(mx, v)
	}
	s := 0.0
	for i, v := range z {
		z[i] = math.Exp(v - mx)
		s += z[i]
	}
	for i := range z {
		z[i] /= s
	}
	return z
}

func lrObjective(xs [][]Entry, ys []int, weights []float64, F, C int, lambda float64, th, grad []float64) float64 {
	W, B := th[:F*C], th[F*C:]
	clear(grad)
	gW, gB := grad[:F*C], grad[F*C:]
	z := make([]float64, C)
	loss, total := 0.0, 0.0
	for i, x := range xs {
		wt := 1.0
		if weights != nil {
			wt = weights[i]
		}
		total += wt
		copy(z, B)
		for _, e := range x {
			row := W[int(e.Index)*C : int(e.Index+1)*C]
			for c, w := range row {
				z[c] += e.Value * w
			}
		}
		mx := math.Inf(-1)
		for _, v := range z {
			mx = max(mx, v)
		}
		s := 0.0
		for c, v := range z {
			z[c] = math.Exp(v - mx)
			s += z[c]
		}
		loss -= wt * (math.Log(z[ys[i]] / s))
		for c := range z {
			z[c] = wt * z[c] / s
		}
		z[ys[i]] -= wt
		for c := range z {
			gB[c] += z[c]
		}
		for _, e := range x {
			row := gW[int(e.Index)*C : int(e.Index+1)*C]
			for c := range row {
				row[c] += e.Value * z[c]
			}
		}
	}
	inv := 1 / total
	for i := range grad {
		grad[i] *= inv
	}
	loss *= inv
	for i, w := range W {
		loss += 0.5 * lambda * w * w
		gW[i] += lambda * w
	}
	return loss
}

// lbfgs minimises f from x (updated in place) with limited-memory BFGS and a
// backtracking Armijo line search; it stops after maxIter iterations or when
// the largest gradient component is below tol.
func lbfgs(f func(x, grad []float64) float64, x []float64, maxIter int, tol float64) {
	const m = 10
	n := len(x)
	g := make([]float64, n)
	fx := f(x, g)
	var ss, ys [][]float64
	var rhos []float64
	d := make([]float64, n)
	xn := make([]float64, n)
	gn := make([]float64, n)
	alpha := make([]float64, m)
	for iter := 0; iter < maxIter; iter++ {
		if maxAbs(g) < tol {
			return
		}
		// Two-loop recursion: d = -H·g.
		copy(d, g)
		for i := len(ss) - 1; i >= 0; i-- {
			alpha[i] = rhos[i] * dot(ss[i], d)
			axpy(-alpha[i], ys[i], d)
		}
		if k := len(ss); k > 0 {
			scale(dot(ss[k-1], ys[k-1])/dot(ys[k-1], ys[k-1]), d)
		} else {
			scale(1/math.Max(1, norm(g)), d)
		}
		for i := range ss {
			b := rhos[i] * dot(ys[i], d)
			axpy(alpha[i]-b, ss[i], d)
		}
		scale(-1, d)
		gd := dot(g, d)
		if gd >= 0 { // not a descent direction: restart from steepest descent
			ss, ys, rhos = nil, nil, nil
			copy(d, g)
			scale(-1/math.Max(1, norm(g)), d)
			gd = dot(g, d)
		}
		step := 1.0
		var fn float64
		for tries := 0; ; tries++ {
			for i := range x {
				xn[i] = x[i] + step*d[i]
			}
			fn = f(xn, gn)
			if fn <= fx+1e-4*step*gd || tries > 30 {
				break
			}
			step *= 0.5
		}
		s := make([]float64, n)
		y := make([]float64, n)
		for i := range x {
			s[i] = xn[i] - x[i]
			y[i] = gn[i] - g[i]
		}
		copy(x, xn)
		copy(g, gn)
		improved := fx - fn
		fx = fn
		if sy := dot(s, y); sy > 1e-12 {
			if len(ss) == m {
				ss, ys, rhos = ss[1:], ys[1:], rhos[1:]
			}
			ss, ys, rhos = append(ss, s), append(ys, y), append(rhos, 1/sy)
		}
		if improved >= 0 && improved < 1e-10*math.Max(1, math.Abs(fx)) {
			return
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func axpy(a float64, x, y []float64) {
	for i := range x {
		y[i] += a * x[i]
	}
}

func scale(a float64, x []float64) {
	for i := range x {
		x[i] *= a
	}
}

func norm(x []float64) float64 { return math.Sqrt(dot(x, x)) }

func maxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}
