package abi

import (
	"bytes"
	"math"
	"testing"
)

// TestF32sCopyIsTheByteOrderLoop: the in-memory copy used on little-endian
// machines writes and reads the bytes the portable loop does, so a
// big-endian host (which takes the loop) speaks the same wire.
func TestF32sCopyIsTheByteOrderLoop(t *testing.T) {
	v := []float32{1, -2.5, float32(math.Inf(-1)), float32(math.NaN()), 3.25e-38, 0}
	if !littleEndian {
		t.Skip("a big-endian machine: only the loop runs here")
	}
	copied, looped := make([]byte, 4*len(v)), make([]byte, 4*len(v))
	putF32s(copied, v, true)
	putF32s(looped, v, false)
	if !bytes.Equal(copied, looped) {
		t.Fatalf("copy % x, loop % x", copied, looped)
	}
	a, b := make([]float32, len(v)), make([]float32, len(v))
	getF32s(a, looped, true)
	getF32s(b, looped, false)
	for i := range v {
		if math.Float32bits(a[i]) != math.Float32bits(v[i]) || math.Float32bits(b[i]) != math.Float32bits(v[i]) {
			t.Fatalf("value %d: copy %v, loop %v, want %v", i, a[i], b[i], v[i])
		}
	}
}
