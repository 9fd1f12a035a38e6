package vecindex

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// SketchBits is the length of a SimHash sketch. 128 bits were tried: on
// the cache's labelled pairs and the gateway benchmark's rewordings they
// found the same entries, and cost twice the scan (see docs/benchmarks.md).
const SketchBits = 64

// SimHash maps vectors of one dimension to 64-bit sketches: bit i is the
// side of the i-th of 64 random hyperplanes through the origin the vector
// lies on (Charikar's random-hyperplane hash). Two vectors at angle θ
// differ in each bit with probability θ/π, so the Hamming distance of two
// sketches estimates their cosine from 8 bytes each, without reading the
// vectors. The hyperplanes come from a fixed seed and the dimension: every
// SimHash of a dimension, in any process, gives the same sketches, so
// sketches computed at a store stay comparable with a later query's.
type SimHash struct {
	dim    int
	planes []float32 // SketchBits × dim, row-major
}

// simhashSeed fixes the hyperplanes (any constant would do; changing it
// changes every sketch, which only matters to sketches kept across
// processes, and none are).
const simhashSeed = 0x6a756e6374696f6e // "junction"

// NewSimHash returns the SimHash of vectors of dim elements (dim > 0).
func NewSimHash(dim int) *SimHash {
	r := rand.New(rand.NewPCG(simhashSeed, uint64(dim)))
	planes := make([]float32, SketchBits*dim)
	for i := range planes {
		planes[i] = float32(r.NormFloat64())
	}
	return &SimHash{dim: dim, planes: planes}
}

// Dim is the dimension the SimHash sketches.
func (h *SimHash) Dim() int { return h.dim }

// Sketch is v's sketch; v must have Dim elements (its norm does not
// matter). A zero vector sketches to all ones (each dot product is 0).
func (h *SimHash) Sketch(v []float32) uint64 {
	if len(v) != h.dim {
		panic("vecindex: SimHash.Sketch: dimension mismatch")
	}
	var d [SketchBits]float32
	dots(v, h.planes, d[:])
	var s uint64
	for i, x := range d {
		if x >= 0 {
			s |= 1 << i
		}
	}
	return s
}

// Hamming is the number of bits in which two sketches differ.
func Hamming(a, b uint64) int { return bits.OnesCount64(a ^ b) }

// SketchRadius is the Hamming distance within which the sketch of a vector
// whose cosine with the query is at least threshold falls, but for a
// chance of about 3 in 100,000 (four standard deviations above the
// binomial mean SketchBits·θ/π, θ = arccos threshold, plus one bit for
// rounding near a hyperplane). A threshold at or under 0 gives SketchBits:
// every sketch.
func SketchRadius(threshold float32) int {
	if threshold <= 0 || math.IsNaN(float64(threshold)) {
		return SketchBits
	}
	t := math.Min(float64(threshold), 1)
	p := math.Acos(t) / math.Pi
	r := int(math.Ceil(SketchBits*p+4*math.Sqrt(SketchBits*p*(1-p)))) + 1
	return min(r, SketchBits)
}
