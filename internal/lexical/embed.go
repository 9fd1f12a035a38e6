package lexical

import (
	"context"
	"math"
	"unicode/utf8"
)

// MethodHashed names the hashed n-gram embedder in routing output.
const MethodHashed = "hashed-ngrams"

// DefaultDimensions is the embedder's default vector size: large enough that
// a routing-length text's few hundred features rarely share a bucket.
const DefaultDimensions = 1024

// maxEmbedBytes bounds the text one vector reads. A neural embedder reads a
// few hundred tokens; reading megabytes would cost time without changing what
// the text is about.
const maxEmbedBytes = 8 << 10

// wordWeight makes a whole-word match count for more than one shared
// character n-gram.
const wordWeight = 2

// HashedEmbedder maps text to a fixed-size vector by feature hashing: every
// lower-cased word and every character 3-, 4- and 5-gram of "<word>" adds ±1
// (the sign is a hash bit, so that unrelated features cancel rather than pile
// up) to one of Dims buckets; bucket values are damped to sign·(1+ln|v|) and the
// vector is scaled to unit length. It captures shared words and word forms,
// not meaning: "refund" and "money back" are unrelated to it. It is
// deterministic, allocation-light and safe for concurrent use.
type HashedEmbedder struct {
	dims int
}

// NewHashedEmbedder returns an embedder of dims dimensions (DefaultDimensions
// when dims <= 0).
func NewHashedEmbedder(dims int) *HashedEmbedder {
	if dims <= 0 {
		dims = DefaultDimensions
	}
	return &HashedEmbedder{dims: dims}
}

// Dims returns the vector size.
func (e *HashedEmbedder) Dims() int { return e.dims }

// Method names the embedder for routing output.
func (e *HashedEmbedder) Method() string { return MethodHashed }

// Embed returns one unit vector per text (the zero vector for a text without
// words); it stops early when ctx is done.
func (e *HashedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = e.Vector(t)
	}
	return out, nil
}

// Vector embeds one text.
func (e *HashedEmbedder) Vector(text string) []float32 {
	if len(text) > maxEmbedBytes {
		cut := maxEmbedBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	acc := make([]float32, e.dims)
	var marked []byte
	var starts []int
	Features{}.tokens(text, func(word string) {
		e.add(acc, mix(fnv64(word)), wordWeight)
		marked = append(append(append(marked[:0], '<'), word...), '>')
		starts = starts[:0]
		for i := range string(marked) {
			starts = append(starts, i)
		}
		starts = append(starts, len(marked))
		runes := len(starts) - 1
		for n := 3; n <= 5; n++ {
			for a := 0; a+n <= runes; a++ {
				// The n-gram length is mixed in so that "abc" the trigram and
				// "abc" inside a longer gram cannot be confused.
				h := fnv64bytes(marked[starts[a]:starts[a+n]]) ^ uint64(n)<<56
				e.add(acc, mix(h), 1)
			}
		}
	})
	var norm float64
	for i, v := range acc {
		if v == 0 {
			continue
		}
		a := float64(v)
		d := 1 + math.Log(math.Abs(a))
		if a < 0 {
			d = -d
		}
		acc[i] = float32(d)
		norm += d * d
	}
	if norm == 0 {
		return acc
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range acc {
		acc[i] *= inv
	}
	return acc
}

func (e *HashedEmbedder) add(acc []float32, h uint64, w float32) {
	if h>>63 == 1 {
		w = -w
	}
	acc[(h&0x7fffffffffffffff)%uint64(e.dims)] += w
}

func fnv64bytes(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
