//go:build !amd64 || purego

package vecindex

// dots sets out[i] to the dot product of q and the i-th len(q)-long vector
// of vecs, for i < len(out).
func dots(q, vecs []float32, out []float32) { dotsGo(q, vecs, out) }
