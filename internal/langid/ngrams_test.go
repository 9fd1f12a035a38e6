//go:build !nolingua

package langid

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// ngramsReference is the n-gram hashing as it was first written (each prefix hashed from
// its start, a map of the n-grams seen): what ngrams must answer, in the
// same order.
func ngramsReference(words []string, n int) [][maxNgram]uint64 {
	hashBytes := func(b []byte) uint64 {
		h := uint64(14695981039346656037)
		for _, c := range b {
			h = (h ^ uint64(c)) * 1099511628211
		}
		return nonzero(fmix64(h))
	}
	var out [][maxNgram]uint64
	seen := map[uint64]bool{}
	var runes []rune
	var buf []byte
	for _, w := range words {
		runes = append(runes[:0], []rune(w)...)
		for i := 0; i+n <= len(runes); i++ {
			var g [maxNgram]uint64
			buf = buf[:0]
			for k := 0; k < n; k++ {
				buf = utf8.AppendRune(buf, runes[i+k])
				g[k] = hashBytes(buf)
			}
			if seen[g[n-1]] {
				continue
			}
			seen[g[n-1]] = true
			out = append(out, g)
		}
	}
	return out
}

// TestNgramsMatchReference compares prefixHashes and distinctNgrams with
// ngramsReference on the edge texts, the shared data's texts, random texts
// over a few scripts and words that are not valid UTF-8, for every n-gram
// length, reusing one scratch set across lengths as fill does.
func TestNgramsMatchReference(t *testing.T) {
	texts := append([]string{"", "a", "ab", "Urgent: where is my parcel? Answer in one word, please."}, edgeTexts...)
	if !testing.Short() {
		texts = append(texts, sharedTexts(t)...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abcdeäöüßéçñ日本語한국어αβγπρστабвгд ,.!")
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(80) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	check := func(words []string) {
		t.Helper()
		chars := 0
		for _, w := range words {
			chars += utf8.RuneCountInString(w)
		}
		var seen hashSet
		seen.reset(chars)
		var at []int32
		pre := prefixHashes(words, maxNgram, nil)
		for n := 1; n <= maxNgram; n++ {
			// Hashed up to n (a long text's trigrams) or to maxNgram.
			short := prefixHashes(words, n, nil)
			at = distinctNgrams(short, n, at[:0], &seen)
			if want := distinctNgrams(pre, n, nil, &seen); !slices.Equal(at, want) {
				t.Fatalf("words %q, n=%d: hashed up to n, positions %v; up to %d, %v", words, n, at, maxNgram, want)
			}
			var got [][maxNgram]uint64
			for _, i := range at {
				var g [maxNgram]uint64
				copy(g[:n], short[i].g[:n])
				got = append(got, g)
			}
			if want := ngramsReference(words, n); !slices.Equal(got, want) {
				t.Fatalf("words %q, n=%d: ngrams %d grams, reference %d (or a different order or hash)", words, n, len(got), len(want))
			}
		}
	}
	for _, text := range texts {
		check(splitWords(strings.ToLower(text)))
	}
	// ngrams itself is defined for any bytes: invalid UTF-8 counts as
	// U+FFFD per byte, as []rune does.
	check([]string{"ab\xffcd", "\xe2\x82", "x\xed\xa0\x80yz", "\xff\xfe\xfd\xfc\xfb\xfa"})
}
