package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// text is a normalised string that remembers, for each rune, the byte range of the original text it came from
// (the alignment HF tokenizers keep in NormalizedString), so every token carries offsets into the input.
type text struct {
	runes []rune
	orig  [][2]int
}

func newText(s string, base int) text {
	t := text{runes: make([]rune, 0, len(s)), orig: make([][2]int, 0, len(s))}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:]) // an invalid byte is one U+FFFD of width 1
		t.runes = append(t.runes, r)
		t.orig = append(t.orig, [2]int{base + i, base + i + size})
		i += size
	}
	return t
}

func (t text) slice(i, j int) text { return text{runes: t.runes[i:j], orig: t.orig[i:j]} }

func (t text) String() string { return string(t.runes) }

// span is the original byte range covered by runes [i,j).
func (t text) span(i, j int) (int, int) {
	if i >= j {
		if i < len(t.orig) {
			return t.orig[i][0], t.orig[i][0]
		}
		if len(t.orig) > 0 {
			e := t.orig[len(t.orig)-1][1]
			return e, e
		}
		return 0, 0
	}
	return t.orig[i][0], t.orig[j-1][1]
}

// mapRunes rebuilds t with f applied to each rune; f appends zero or more runes that all align to the rune's
// original range.
func (t text) mapRunes(f func(r rune, out []rune) []rune) text {
	n := text{runes: make([]rune, 0, len(t.runes)), orig: make([][2]int, 0, len(t.runes))}
	var buf []rune
	for i, r := range t.runes {
		buf = f(r, buf[:0])
		for _, o := range buf {
			n.runes = append(n.runes, o)
			n.orig = append(n.orig, t.orig[i])
		}
	}
	return n
}

// normalizeForm applies a Unicode normalisation form segment by segment; every output rune of a segment aligns
// to the segment's whole original range. ASCII runes followed by ASCII (or the end) are stable under every form
// and are copied as they are; only the stretches around other runes go through the normaliser.
func (t text) normalizeForm(f norm.Form) text {
	n := len(t.runes)
	stable := func(i int) bool { return t.runes[i] < utf8.RuneSelf && (i+1 == n || t.runes[i+1] < utf8.RuneSelf) }
	i := 0
	for i < n && stable(i) {
		i++
	}
	if i == n {
		return t
	}
	out := text{runes: make([]rune, 0, n+8), orig: make([][2]int, 0, n+8)}
	out.runes = append(out.runes, t.runes[:i]...)
	out.orig = append(out.orig, t.orig[:i]...)
	for i < n {
		if stable(i) {
			out.runes = append(out.runes, t.runes[i])
			out.orig = append(out.orig, t.orig[i])
			i++
			continue
		}
		j := i + 1
		for j < n && !stable(j) {
			j++
		}
		seg := t.slice(i, j)
		s := string(seg.runes)
		if f.IsNormalString(s) {
			out.runes = append(out.runes, seg.runes...)
			out.orig = append(out.orig, seg.orig...)
		} else {
			ri := 0
			for len(s) > 0 {
				end := f.NextBoundaryInString(s, true)
				if end <= 0 {
					end = len(s)
				}
				part := s[:end]
				cnt := utf8.RuneCountInString(part)
				a, b := seg.span(ri, ri+cnt)
				for _, r := range f.String(part) {
					out.runes = append(out.runes, r)
					out.orig = append(out.orig, [2]int{a, b})
				}
				ri += cnt
				s = s[end:]
			}
		}
		i = j
	}
	return out
}

// normalizer changes text before pre-tokenisation. first and last say whether the chunk holds the beginning
// and the end of the input (Strip and Prepend act only there).
type normalizer interface {
	normalize(t text, first, last bool) text
}

type normalizerSpec struct {
	Type                string            `json:"type"`
	CleanText           *bool             `json:"clean_text"`
	HandleChineseChars  *bool             `json:"handle_chinese_chars"`
	StripAccents        *bool             `json:"strip_accents"`
	Lowercase           *bool             `json:"lowercase"`
	Normalizers         []json.RawMessage `json:"normalizers"`
	Left                *bool             `json:"left"`
	Right               *bool             `json:"right"`
	Pattern             *patternSpec      `json:"pattern"`
	Content             string            `json:"content"`
	Prepend             string            `json:"prepend"`
	PrecompiledCharsmap string            `json:"precompiled_charsmap"`
}

type patternSpec struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func (p *patternSpec) compile() (*regexp.Regexp, error) {
	switch {
	case p == nil:
		return nil, fmt.Errorf("missing pattern")
	case p.String != nil:
		return regexp.MustCompile(regexp.QuoteMeta(*p.String)), nil
	case p.Regex != nil:
		re, err := regexp.Compile(*p.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q is not supported by Go's regexp (RE2): %v", *p.Regex, err)
		}
		return re, nil
	}
	return nil, fmt.Errorf("pattern has neither String nor Regex")
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s normalizerSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	switch s.Type {
	case "BertNormalizer":
		lower := boolOr(s.Lowercase, true)
		return bertNormalizer{
			clean:   boolOr(s.CleanText, true),
			chinese: boolOr(s.HandleChineseChars, true),
			strip:   boolOr(s.StripAccents, lower), // null follows lowercase, as in BERT
			lower:   lower,
		}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "NFD":
		return formNormalizer{norm.NFD}, nil
	case "NFC":
		return formNormalizer{norm.NFC}, nil
	case "NFKD":
		return formNormalizer{norm.NFKD}, nil
	case "NFKC":
		return formNormalizer{norm.NFKC}, nil
	case "StripAccents":
		return stripAccents{}, nil
	case "Strip":
		return strip{left: boolOr(s.Left, true), right: boolOr(s.Right, true)}, nil
	case "Prepend":
		return prepend{s.Prepend}, nil
	case "Replace":
		re, err := s.Pattern.compile()
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %v", err)
		}
		return replace{re: re, content: s.Content}, nil
	case "Precompiled":
		if s.PrecompiledCharsmap == "" { // an empty charsmap normalises nothing
			return nil, nil
		}
		return parsePrecompiled(s.PrecompiledCharsmap)
	case "Sequence":
		var seq sequenceNormalizer
		for i, r := range s.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizers[%d]: %w", i, err)
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("normalizer type %q is not supported (supported: BertNormalizer, Lowercase, NFC, NFD, NFKC, NFKD, StripAccents, Strip, Prepend, Replace, Precompiled, Sequence)", s.Type)
}

type sequenceNormalizer []normalizer

func (s sequenceNormalizer) normalize(t text, first, last bool) text {
	for _, n := range s {
		t = n.normalize(t, first, last)
	}
	return t
}

type bertNormalizer struct{ clean, chinese, strip, lower bool }

func (b bertNormalizer) normalize(t text, first, last bool) text {
	// Cleaning and the spaces around Chinese characters in one pass; then NFD (a no-op on ASCII); then accent
	// removal and lowercasing in one pass — the same result as BERT's four steps, with two copies of the text.
	t = t.mapRunes(func(r rune, out []rune) []rune {
		if b.clean {
			if r == 0 || r == 0xfffd || isControl(r) {
				return out
			}
			if isBertWhitespace(r) {
				return append(out, ' ')
			}
		}
		if b.chinese && isChinese(r) {
			return append(out, ' ', r, ' ')
		}
		return append(out, r)
	})
	if b.strip {
		t = t.normalizeForm(norm.NFD)
	}
	if !b.strip && !b.lower {
		return t
	}
	return t.mapRunes(func(r rune, out []rune) []rune {
		if b.strip && r >= utf8.RuneSelf && unicode.Is(unicode.Mn, r) {
			return out
		}
		if !b.lower {
			return append(out, r)
		}
		if r < utf8.RuneSelf {
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			return append(out, r)
		}
		return append(out, []rune(strings.ToLower(string(r)))...)
	})
}

type lowercase struct{}

func (lowercase) normalize(t text, _, _ bool) text {
	return t.mapRunes(func(r rune, out []rune) []rune {
		if r < utf8.RuneSelf {
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			return append(out, r)
		}
		return append(out, []rune(strings.ToLower(string(r)))...)
	})
}

type formNormalizer struct{ f norm.Form }

func (n formNormalizer) normalize(t text, _, _ bool) text { return t.normalizeForm(n.f) }

type stripAccents struct{}

func (stripAccents) normalize(t text, _, _ bool) text {
	t = t.normalizeForm(norm.NFD)
	return t.mapRunes(func(r rune, out []rune) []rune {
		if unicode.Is(unicode.Mn, r) {
			return out
		}
		return append(out, r)
	})
}

type strip struct{ left, right bool }

func (s strip) normalize(t text, first, last bool) text {
	i, j := 0, len(t.runes)
	if s.left && first {
		for i < j && unicode.IsSpace(t.runes[i]) {
			i++
		}
	}
	if s.right && last {
		for j > i && unicode.IsSpace(t.runes[j-1]) {
			j--
		}
	}
	return t.slice(i, j)
}

type prepend struct{ s string }

func (p prepend) normalize(t text, first, _ bool) text {
	if !first || len(t.runes) == 0 {
		return t
	}
	n := text{}
	o := t.orig[0] // as HF: the prepended characters align with the first character
	for _, r := range p.s {
		n.runes = append(n.runes, r)
		n.orig = append(n.orig, o)
	}
	n.runes = append(n.runes, t.runes...)
	n.orig = append(n.orig, t.orig...)
	return n
}

type replace struct {
	re      *regexp.Regexp
	content string
}

func (p replace) normalize(t text, _, _ bool) text {
	s := string(t.runes)
	locs := p.re.FindAllStringIndex(s, -1)
	if len(locs) == 0 {
		return t
	}
	// byte index → rune index
	runeAt := make([]int, len(s)+1)
	ri := 0
	for bi := range s {
		runeAt[bi] = ri
		ri++
	}
	runeAt[len(s)] = ri
	n := text{}
	prev := 0
	for _, l := range locs {
		a, b := runeAt[l[0]], runeAt[l[1]]
		n.runes = append(n.runes, t.runes[prev:a]...)
		n.orig = append(n.orig, t.orig[prev:a]...)
		start, end := t.span(a, b)
		for _, r := range p.content {
			n.runes = append(n.runes, r)
			n.orig = append(n.orig, [2]int{start, end})
		}
		prev = b
	}
	n.runes = append(n.runes, t.runes[prev:]...)
	n.orig = append(n.orig, t.orig[prev:]...)
	return n
}

// Character classes of the BERT reference tokenizer.

func isBertWhitespace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

func isControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

func isBertPunctuation(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

func isChinese(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
