//go:build !purego

package vecindex

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernel; false on CPUs without AVX2 and FMA.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dotsAVX2(q, vecs *float32, dim, n int, out *float32)

// dots sets out[i] to the dot product of q and the i-th len(q)-long vector
// of vecs, for i < len(out).
func dots(q, vecs []float32, out []float32) {
	dim, n := len(q), len(out)
	if n == 0 {
		return
	}
	if len(vecs) < n*dim {
		panic("vecindex: dots: vecs too short")
	}
	if !useAVX2 || dim == 0 {
		dotsGo(q, vecs, out)
		return
	}
	dotsAVX2(&q[0], &vecs[0], dim, n, &out[0])
}
