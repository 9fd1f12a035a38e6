package lexical

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Features says how a text becomes naive Bayes features. It is stored with a
// model, so that prediction extracts exactly what training counted.
type Features struct {
	// Bigrams adds pairs of adjacent tokens to the single tokens.
	Bigrams bool `json:"bigrams"`
	// Binary counts a feature once per text (binarized multinomial NB), which
	// usually suits short texts better than raw counts.
	Binary bool `json:"binary"`
	// Symbols keeps punctuation and symbols ("^", "=", "∫") as one-rune tokens;
	// they carry signal for math and code questions.
	Symbols bool `json:"symbols"`
	// Numbers collapses every run of digits into one token, so that specific
	// values do not dilute the evidence that a number is present.
	Numbers bool `json:"numbers"`
	// Prefix, when positive, truncates word tokens to that many runes: a crude
	// stemmer that merges "photosynthesis" and "photosynthetic".
	Prefix int `json:"prefix,omitempty"`
}

// numberToken cannot collide with a real token: '<' is always split off.
const numberToken = "<num>"

// tokens calls emit for every token of text, in order. The text is lower-cased
// once; tokens are substrings of that copy, so extraction does not allocate per
// token.
func (f Features) tokens(text string, emit func(tok string)) {
	lower := strings.ToLower(text)
	for i := 0; i < len(lower); {
		r, size := rune(lower[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(lower[i:])
		}
		switch {
		case isWordRune(r):
			start, digits := i, true
			for i < len(lower) {
				r2, s2 := rune(lower[i]), 1
				if r2 >= utf8.RuneSelf {
					r2, s2 = utf8.DecodeRuneInString(lower[i:])
				}
				if !isWordRune(r2) {
					break
				}
				if r2 < '0' || r2 > '9' {
					digits = false
				}
				i += s2
			}
			tok := lower[start:i]
			if digits && f.Numbers {
				tok = numberToken
			} else if f.Prefix > 0 {
				tok = runePrefix(tok, f.Prefix)
			}
			emit(tok)
			continue
		case unicode.IsSpace(r) || r == utf8.RuneError:
		default:
			if f.Symbols && (unicode.IsPunct(r) || unicode.IsSymbol(r)) {
				emit(lower[i : i+size])
			}
		}
		i += size
	}
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

func runePrefix(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// strings calls emit for every feature of text as the model file stores it: a
// token, or two tokens joined by one space. Training counts these.
func (f Features) strings(text string, emit func(feature string)) {
	prev := ""
	f.tokens(text, func(tok string) {
		emit(tok)
		if f.Bigrams && prev != "" {
			emit(prev + " " + tok)
		}
		prev = tok
	})
}

// hashes calls emit for the hash of every feature of text, in the order and
// multiplicity of strings; featureHash of each string gives the same values.
func (f Features) hashes(text string, emit func(h uint64)) {
	var prev uint64
	have := false
	f.tokens(text, func(tok string) {
		h := fnv64(tok)
		emit(mix(h))
		if f.Bigrams && have {
			emit(bigramHash(prev, h))
		}
		prev, have = h, true
	})
}

// featureHash hashes a stored feature string the way hashes does.
func featureHash(feature string) uint64 {
	if a, b, ok := strings.Cut(feature, " "); ok {
		return bigramHash(fnv64(a), fnv64(b))
	}
	return mix(fnv64(feature))
}

func bigramHash(a, b uint64) uint64 {
	return mix(a*0x9e3779b97f4a7c15 ^ b ^ 0x5bd1e9955bd1e995)
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is the splitmix64 finalizer; FNV alone spreads short strings poorly.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
