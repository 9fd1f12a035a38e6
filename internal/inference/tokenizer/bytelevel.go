package tokenizer

import (
	"unicode/utf8"
)

// byteLevel is GPT-2's byte-level pre-tokenizer: optional prefix space, the GPT-2 split, and each UTF-8 byte
// mapped to a printable rune so that BPE works on bytes. It also trims whitespace from token offsets.
type byteLevel struct {
	addPrefixSpace bool
	useRegex       bool
	trimOffsets    bool
}

// byteToRune and runeToByte are GPT-2's bytes_to_unicode table and its inverse (constants).
var byteToRune, runeToByte = byteTables()

func byteTables() ([256]rune, map[rune]byte) {
	var fwd [256]rune
	back := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			fwd[b] = rune(b)
		} else {
			fwd[b] = rune(256 + n)
			n++
		}
		back[fwd[b]] = byte(b)
	}
	return fwd, back
}

func (b *byteLevel) split(words []text, first bool) []text {
	if b.addPrefixSpace { // as HF, to every piece it is given; a chunk that continues a text starts with a space
		for i, w := range words {
			if len(w.runes) > 0 && w.runes[0] != ' ' {
				words[i] = prepend{" "}.normalize(w, true, false)
			}
		}
	}
	if b.useRegex {
		words = gpt2Split{}.split(words, first)
	}
	out := make([]text, 0, len(words))
	var buf [utf8.UTFMax]byte
	for _, w := range words {
		m := text{runes: make([]rune, 0, len(w.runes)), orig: make([][2]int, 0, len(w.runes))}
		for i, r := range w.runes {
			k := utf8.EncodeRune(buf[:], r)
			for _, c := range buf[:k] {
				m.runes = append(m.runes, byteToRune[c])
				m.orig = append(m.orig, w.orig[i])
			}
		}
		out = append(out, m)
	}
	return out
}

// byteLevelSpace is the byte-level rune of the space byte (Ġ).
var byteLevelSpace = byteToRune[' ']

// decodeByteLevel turns a byte-level token back into its bytes.
func decodeByteLevel(tok string) []byte {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		if b, ok := runeToByte[r]; ok {
			out = append(out, b)
		} else {
			out = append(out, string(r)...)
		}
	}
	return out
}
