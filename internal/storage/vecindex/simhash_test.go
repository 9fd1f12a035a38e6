package vecindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSimHashTracksTheAngle checks the property the cache's sketch search
// rests on: pairs of vectors at cosine t differ in about SketchBits·θ/π
// bits (θ = arccos t), and almost never in more than SketchRadius(t); and
// that the hyperplanes depend on the dimension only (the same sketches from
// two SimHash values).
func TestSimHashTracksTheAngle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{100, 1024} {
		h, again := NewSimHash(dim), NewSimHash(dim)
		for _, cos := range []float64{0.5, 0.8, 0.92, 0.97} {
			const pairs = 2000
			var sum float64
			over := 0
			for range pairs {
				a, b := pairAt(r, dim, cos)
				sa := h.Sketch(a)
				if sa != again.Sketch(a) {
					t.Fatal("two SimHash values of one dimension sketch a vector differently")
				}
				d := Hamming(sa, h.Sketch(b))
				sum += float64(d)
				if d > SketchRadius(float32(cos)) {
					over++
				}
			}
			mean, want := sum/pairs, SketchBits*math.Acos(cos)/math.Pi
			if math.Abs(mean-want) > 0.6 {
				t.Errorf("dim %d, cosine %.2f: mean distance %.2f, want about %.2f", dim, cos, mean, want)
			}
			if over > 2 {
				t.Errorf("dim %d, cosine %.2f: %d of %d pairs past the radius %d", dim, cos, over, pairs, SketchRadius(float32(cos)))
			}
		}
	}
	if SketchRadius(0) != SketchBits || SketchRadius(-1) != SketchBits || SketchRadius(1) < 1 {
		t.Errorf("radius at 0, -1, 1: %d %d %d", SketchRadius(0), SketchRadius(-1), SketchRadius(1))
	}
	for th := float32(0.05); th < 1; th += 0.05 {
		if SketchRadius(th) > SketchRadius(th-0.05) {
			t.Errorf("the radius grows from %.2f to %.2f", th-0.05, th)
		}
	}
}

// pairAt is two random unit vectors of dim elements at cosine cos.
func pairAt(r *rand.Rand, dim int, cos float64) ([]float32, []float32) {
	a, n := make([]float64, dim), make([]float64, dim)
	for i := range a {
		a[i], n[i] = r.NormFloat64(), r.NormFloat64()
	}
	unit(a)
	var d float64 // n made orthogonal to a
	for i := range a {
		d += a[i] * n[i]
	}
	for i := range n {
		n[i] -= d * a[i]
	}
	unit(n)
	s := math.Sqrt(1 - cos*cos)
	fa, fb := make([]float32, dim), make([]float32, dim)
	for i := range a {
		fa[i], fb[i] = float32(a[i]), float32(cos*a[i]+s*n[i])
	}
	return fa, fb
}

func unit(v []float64) {
	var s float64
	for _, x := range v {
		s += x * x
	}
	s = math.Sqrt(s)
	for i := range v {
		v[i] /= s
	}
}
