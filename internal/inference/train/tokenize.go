package train

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenize splits text the way the exported tokenizer.json does: a Lowercase
// normalizer, then the Whitespace pre-tokenizer (runs of word characters, or
// runs of other non-space characters; the regex \w+|[^\w\s]+). The models'
// features are defined on these tokens, so training and the runtime must agree.
func Tokenize(text string) []string {
	lower := strings.ToLower(text)
	var out []string
	for i := 0; i < len(lower); {
		r, size := utf8.DecodeRuneInString(lower[i:])
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		word := isWord(r)
		start := i
		for i < len(lower) {
			r2, s2 := utf8.DecodeRuneInString(lower[i:])
			if unicode.IsSpace(r2) || isWord(r2) != word {
				break
			}
			i += s2
		}
		out = append(out, lower[start:i])
	}
	return out
}

// isWord is the regex class \w of the Rust regex crate: alphabetic, marks,
// decimal digits, connector punctuation.
func isWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) || unicode.Is(unicode.Pc, r) ||
		unicode.Is(unicode.Nl, r) || r == 0x200C || r == 0x200D
}
