package abi_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
)

// TestF32sIsAListOfF32 holds the one-pass list writer and reader to the
// wire format the other records use: a u32 count, then each value as an f32
// primitive. It checks every small length, special floats, writing after a
// prefix (with and without spare capacity), and that every truncation of a
// record is refused and every corruption read as the primitives read it.
func TestF32sIsAListOfF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 70 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		if n > 3 {
			v[0], v[1], v[2] = float32(math.Inf(1)), float32(math.NaN()), float32(math.Copysign(0, -1))
		}
		for _, spare := range []int{0, 1, 4096} {
			prefix := append(make([]byte, 0, 3+spare), 9, 8, 7)
			e := abi.Encoder{B: prefix}
			e.F32s(v)
			if want := primitives(v); !bytes.Equal(e.B[3:], want) || !bytes.Equal(e.B[:3], []byte{9, 8, 7}) {
				t.Fatalf("%d values after a prefix (spare %d): % x, want % x", n, spare, e.B, want)
			}
		}
		rec := append(primitives(v), 0xaa) // a following field stays unread
		d := abi.Decoder{B: rec}
		got := d.F32s()
		if d.Err() != nil || !sameBits(got, v) || !bytes.Equal(d.B, []byte{0xaa}) {
			t.Fatalf("%d values: read %v (%v), %d bytes left", n, got, d.Err(), len(d.B))
		}
		for i := range len(rec) - 1 {
			d := abi.Decoder{B: rec[:i]}
			if got := d.F32s(); d.Err() == nil && !(i >= 4 && n == 0) {
				t.Fatalf("%d values cut at %d: read %v without an error", n, i, got)
			}
		}
		for i := 4; i < len(rec)-1; i++ {
			bad := bytes.Clone(rec)
			bad[i] ^= 0xff
			d := abi.Decoder{B: bad}
			got := d.F32s()
			ref := abi.Decoder{B: bad}
			var want []float32
			for range ref.Count(4) {
				want = append(want, ref.F32())
			}
			if d.Err() != nil || !sameBits(got, want) {
				t.Fatalf("%d values, byte %d corrupted: read %v (%v), want %v", n, i, got, d.Err(), want)
			}
		}
	}
}

// primitives is a list of f32 written one primitive at a time.
func primitives(v []float32) []byte {
	e := abi.Encoder{}
	e.U32(uint32(len(v)))
	for _, f := range v {
		e.F32(f)
	}
	return e.B
}

// sameBits compares bit for bit (a NaN equals itself; nil equals empty).
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func BenchmarkVectorRecord(b *testing.B) {
	v := make([]float32, 1024)
	for i := range v {
		v[i] = float32(i) / 1024
	}
	b.ReportAllocs()
	for b.Loop() {
		rec := abi.Vector(v).Append(nil)
		if _, err := abi.DecodeVector(rec); err != nil {
			b.Fatal(err)
		}
	}
}
