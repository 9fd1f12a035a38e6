package hostapi

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/junction-router/junction/hostapi/abi"
)

// The host's side of the two records that carry an embedding on a
// semantic cache lookup: embed's answer and cache_lookup's arguments. abi's
// encoder appends and its decoder takes one value at a time, which for a
// 1,024-dim embedding was a third of a native semantic lookup's request
// phase; these write and read the same bytes in one pass. abi stays as it
// is (the guests compile it: changing it would change every module), so
// these are checked against it (vectorwire_test.go).

// appendVector is abi.Vector(v).Append(b).
func appendVector(b []byte, v []float32) []byte {
	n := len(b)
	size := 4 + 4*len(v)
	b = slices.Grow(b, size)[:n+size]
	binary.LittleEndian.PutUint32(b[n:], uint32(len(v)))
	out := b[n+4:]
	for i, f := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return b
}

// decodeCacheLookupArgs is abi.DecodeCacheLookupArgs.
func decodeCacheLookupArgs(b []byte) (abi.CacheLookupArgs, error) {
	d := abi.Decoder{B: b}
	a := abi.CacheLookupArgs{Namespace: d.Str(), Key: d.Str()}
	if n := d.Count(4); n > 0 {
		a.Embedding = make([]float32, n)
		in := d.B[:4*n]
		for i := range a.Embedding {
			a.Embedding[i] = math.Float32frombits(binary.LittleEndian.Uint32(in[4*i:]))
		}
		d.B = d.B[4*n:]
	}
	a.Threshold = d.F32()
	return a, d.Err()
}
