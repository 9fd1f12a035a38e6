package abi

import (
	"encoding/binary"
	"errors"
	"math"
	"unsafe"
)

// The records are built from five primitives, all little-endian:
//
//	u8, u32, u64, f32   fixed width
//	bytes               u32 length, then that many bytes
//	str                 as bytes, holding UTF-8
//
// A list is a u32 count followed by its elements. There is no padding and
// no alignment.

// ErrTruncated is returned when a record ends before its last field.
var ErrTruncated = errors.New("abi: record truncated")

// Encoder appends primitives to a byte slice.
type Encoder struct {
	B []byte
}

// Grow makes room for n more bytes, so that a record whose size is known
// is written into storage allocated once.
func (e *Encoder) Grow(n int) {
	if cap(e.B)-len(e.B) < n {
		grown := make([]byte, len(e.B), len(e.B)+n)
		copy(grown, e.B)
		e.B = grown
	}
}

// U8 appends v.
func (e *Encoder) U8(v uint8) { e.B = append(e.B, v) }

// U32 appends v.
func (e *Encoder) U32(v uint32) {
	e.B = append(e.B, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

// U64 appends v.
func (e *Encoder) U64(v uint64) {
	e.U32(uint32(v))
	e.U32(uint32(v >> 32))
}

// F32 appends v.
func (e *Encoder) F32(v float32) { e.U32(math.Float32bits(v)) }

// Bytes appends a length-prefixed byte string.
func (e *Encoder) Bytes(v []byte) {
	e.U32(uint32(len(v)))
	e.B = append(e.B, v...)
}

// Str appends a length-prefixed string.
func (e *Encoder) Str(v string) {
	e.U32(uint32(len(v)))
	e.B = append(e.B, v...)
}

// F32s appends a list of f32. An embedding is the largest record most
// plugins move (4 KiB at 1,024 dims, up to four times per semantic cache
// lookup), so the list is written in one pass into storage grown once.
func (e *Encoder) F32s(v []float32) {
	n := len(e.B)
	size := 4 + 4*len(v)
	e.Grow(size)
	e.B = e.B[:n+size]
	binary.LittleEndian.PutUint32(e.B[n:], uint32(len(v)))
	putF32s(e.B[n+4:], v, littleEndian)
}

// putF32s writes v into out (4*len(v) bytes); copied as it is in memory when
// asIs (this machine is little-endian).
func putF32s(out []byte, v []float32, asIs bool) {
	if asIs && len(v) > 0 {
		copy(out, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)))
		return
	}
	for i, f := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
}

// getF32s reads v (len(in)/4 values) from in, as putF32s wrote them.
func getF32s(v []float32, in []byte, asIs bool) {
	if asIs && len(v) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)), in)
		return
	}
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(in[4*i:]))
	}
}

// littleEndian: this machine stores a float32 as the wire does, so a list
// is copied as it is (wasm, amd64 and arm64 are little-endian).
var littleEndian = func() bool {
	x := uint32(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Decoder reads primitives from a byte slice. After the first error every
// read returns a zero value and Err reports the error.
type Decoder struct {
	B   []byte
	err error
}

// Err is the first error met, if any.
func (d *Decoder) Err() error { return d.err }

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.B) {
		d.err = ErrTruncated
		return nil
	}
	v := d.B[:n:n]
	d.B = d.B[n:]
	return v
}

// U8 reads a u8.
func (d *Decoder) U8() uint8 {
	b := d.take(1)
	if b == nil {
		return 0
	}
	return b[0]
}

// U32 reads a u32.
func (d *Decoder) U32() uint32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// U64 reads a u64.
func (d *Decoder) U64() uint64 {
	lo := d.U32()
	return uint64(lo) | uint64(d.U32())<<32
}

// F32 reads an f32.
func (d *Decoder) F32() float32 { return math.Float32frombits(d.U32()) }

// Bytes reads a length-prefixed byte string. The result aliases the input.
func (d *Decoder) Bytes() []byte {
	n := d.U32()
	if d.err != nil {
		return nil
	}
	return d.take(int(n))
}

// Str reads a length-prefixed string (copied).
func (d *Decoder) Str() string { return string(d.Bytes()) }

// Count reads a list length, refusing one that cannot fit in what is left
// given each element takes at least minSize bytes.
func (d *Decoder) Count(minSize int) int {
	n := d.U32()
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if uint64(n)*uint64(minSize) > uint64(len(d.B)) {
		d.err = ErrTruncated
		return 0
	}
	return int(n)
}

// F32s reads a list of f32.
func (d *Decoder) F32s() []float32 {
	n := d.Count(4)
	if n == 0 {
		return nil
	}
	// Count checked that 4*n bytes are left.
	in := d.B[: 4*n : 4*n]
	d.B = d.B[4*n:]
	v := make([]float32, n)
	getF32s(v, in, littleEndian)
	return v
}
