package abi

import (
	"errors"
	"math"
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

// F32s appends a list of f32.
func (e *Encoder) F32s(v []float32) {
	e.U32(uint32(len(v)))
	for _, f := range v {
		e.F32(f)
	}
}

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
	v := make([]float32, n)
	for i := range v {
		v[i] = d.F32()
	}
	return v
}
