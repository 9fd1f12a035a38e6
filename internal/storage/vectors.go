package storage

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/junction-router/junction/internal/storage/vecindex"
)

// Bounds on what a vector store takes; every backend enforces the same ones.
const (
	// MaxDimensions bounds a vector store's dimension count.
	MaxDimensions = 16384
	// MaxK bounds a search's k.
	MaxK = 1000
	// MaxNameBytes bounds a vector store's name.
	MaxNameBytes = 256
	// MaxQueryText bounds a hybrid search's text (its first MaxQueryTerms
	// words are used).
	MaxQueryText = 64 << 10
)

// Finite reports whether every component of v is a finite number.
func Finite(v []float32) bool {
	for _, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return false
		}
	}
	return true
}

// EncodeVector writes v as little-endian float32s into buf (resized), the
// form the backends store vectors in.
func EncodeVector(buf []byte, v []float32) []byte {
	if cap(buf) < 4*len(v) {
		buf = make([]byte, 4*len(v))
	}
	buf = buf[:4*len(v)]
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	return buf
}

// DecodeVector reads a vector written by EncodeVector.
func DecodeVector(b []byte) []float32 { return AppendVector(nil, b) }

// AppendVector appends the little-endian float32s of b to v.
func AppendVector(v []float32, b []byte) []float32 {
	for i := 0; i+4 <= len(b); i += 4 {
		v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	return v
}

// DecodeAttributes reads a vector store file's stored attributes (JSON).
func DecodeAttributes(s string) (map[string]any, error) {
	a := map[string]any{}
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return nil, fmt.Errorf("attributes: %w", err)
	}
	return a, nil
}

// CheckAttributes accepts string, number and bool values only, and returns
// the attributes as the JSON the backends store.
func CheckAttributes(attrs map[string]any) (string, error) {
	for k, v := range attrs {
		switch v.(type) {
		case string, bool, float64, float32, int, int64, int32, json.Number:
		default:
			return "", fmt.Errorf("%w: attribute %q must be a string, number or boolean", ErrInvalid, k)
		}
	}
	if attrs == nil {
		attrs = map[string]any{}
	}
	b, err := json.Marshal(attrs)
	if err != nil {
		return "", fmt.Errorf("%w: attributes: %v", ErrInvalid, err)
	}
	return string(b), nil
}

// TrimResults drops the results under minScore (when hasMinScore) and keeps
// at most k, in place.
func TrimResults(res []vecindex.Result, k int, hasMinScore bool, minScore float32) []vecindex.Result {
	if hasMinScore {
		n := 0
		for _, r := range res {
			if r.Score >= minScore {
				res[n] = r
				n++
			}
		}
		res = res[:n]
	}
	if len(res) > k {
		res = res[:k]
	}
	return res
}

// NewHit makes a search hit of an index result and its chunk's text and
// file name; the attributes are copied, so the hit does not share the
// index's map.
func NewHit(r vecindex.Result, text, filename string) Hit {
	attrs := make(map[string]any, len(r.Attributes))
	for k, v := range r.Attributes {
		attrs[k] = v
	}
	return Hit{
		VectorStoreID: r.StoreID,
		FileID:        r.FileID,
		Filename:      filename,
		ChunkIndex:    r.ChunkIndex,
		Score:         r.Score,
		Text:          text,
		Attributes:    attrs,
	}
}
