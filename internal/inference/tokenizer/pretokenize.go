package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"unicode"
)

// preTokenizer splits normalised text into words; the model tokenises each word on its own. first says
// whether the chunk starts the input (ByteLevel's add_prefix_space and Metaspace act only there).
type preTokenizer interface {
	split(words []text, first bool) []text
}

type preTokenizerSpec struct {
	Type             string            `json:"type"`
	PreTokenizers    []json.RawMessage `json:"pretokenizers"`
	AddPrefixSpace   *bool             `json:"add_prefix_space"`
	UseRegex         *bool             `json:"use_regex"`
	TrimOffsets      *bool             `json:"trim_offsets"`
	Pattern          *patternSpec      `json:"pattern"`
	Behavior         string            `json:"behavior"`
	Invert           bool              `json:"invert"`
	IndividualDigits bool              `json:"individual_digits"`
	Replacement      string            `json:"replacement"`
	PrependScheme    string            `json:"prepend_scheme"`
	Split            *bool             `json:"split"`
}

func parsePreTokenizer(raw json.RawMessage) (preTokenizer, *byteLevel, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var s preTokenizerSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, err
	}
	switch s.Type {
	case "BertPreTokenizer":
		return bertPre{}, nil, nil
	case "Whitespace":
		return whitespacePre{}, nil, nil
	case "WhitespaceSplit":
		return whitespaceSplit{}, nil, nil
	case "Punctuation":
		return splitPre{match: func(r rune) bool { return isBertPunctuation(r) }, behavior: orDefault(s.Behavior, "Isolated")}, nil, nil
	case "Digits":
		if s.IndividualDigits {
			return splitPre{match: unicode.IsDigit, behavior: "Isolated"}, nil, nil
		}
		return splitPre{match: unicode.IsDigit, behavior: "Contiguous"}, nil, nil
	case "ByteLevel":
		b := &byteLevel{addPrefixSpace: boolOr(s.AddPrefixSpace, true), useRegex: boolOr(s.UseRegex, true), trimOffsets: boolOr(s.TrimOffsets, true)}
		return b, b, nil
	case "Split":
		if s.Pattern != nil && s.Pattern.Regex != nil && isGPT2Pattern(*s.Pattern.Regex) && !s.Invert && s.Behavior == "Isolated" {
			return gpt2Split{}, nil, nil
		}
		if s.Pattern != nil && s.Pattern.Regex != nil && !s.Invert && orDefault(s.Behavior, "Isolated") == "Isolated" {
			if ws, ok, err := newWhitespaceLookahead(*s.Pattern.Regex); ok {
				if err != nil {
					return nil, nil, fmt.Errorf("pre-tokenizer Split: %v", err)
				}
				return ws, nil, nil
			}
		}
		re, err := s.Pattern.compile()
		if err != nil {
			return nil, nil, fmt.Errorf("pre-tokenizer Split: %v", err)
		}
		return regexSplit{re: re, behavior: orDefault(s.Behavior, "Isolated"), invert: s.Invert}, nil, nil
	case "Metaspace":
		rep := []rune(orDefault(s.Replacement, "▁"))
		scheme := s.PrependScheme
		if scheme == "" {
			scheme = "always"
			if s.AddPrefixSpace != nil && !*s.AddPrefixSpace {
				scheme = "never"
			}
		}
		return metaspace{replacement: rep[0], scheme: scheme, splitWords: boolOr(s.Split, true)}, nil, nil
	case "Sequence":
		var seq sequencePre
		var bl *byteLevel
		for i, r := range s.PreTokenizers {
			p, b, err := parsePreTokenizer(r)
			if err != nil {
				return nil, nil, fmt.Errorf("pretokenizers[%d]: %w", i, err)
			}
			if b != nil {
				bl = b
			}
			if p != nil {
				seq = append(seq, p)
			}
		}
		return seq, bl, nil
	}
	return nil, nil, fmt.Errorf("pre_tokenizer type %q is not supported (supported: BertPreTokenizer, Whitespace, WhitespaceSplit, Punctuation, Digits, ByteLevel, Split, Metaspace, Sequence)", s.Type)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type sequencePre []preTokenizer

func (s sequencePre) split(words []text, first bool) []text {
	for _, p := range s {
		words = p.split(words, first)
	}
	return words
}

// splitRunes applies a rune classifier to each word: runs of runes for which keep is false are removed, and a
// boundary is placed before rune i when cut(prev, r) says so.
func splitEach(words []text, f func(w text, out []text) []text) []text {
	out := make([]text, 0, len(words))
	for _, w := range words {
		out = f(w, out)
	}
	return out
}

// bertPre splits on whitespace and isolates punctuation.
type bertPre struct{}

func (bertPre) split(words []text, _ bool) []text {
	return splitEach(words, func(w text, out []text) []text {
		start := -1
		for i, r := range w.runes {
			switch {
			case unicode.IsSpace(r):
				if start >= 0 {
					out = append(out, w.slice(start, i))
					start = -1
				}
			case isBertPunctuation(r):
				if start >= 0 {
					out = append(out, w.slice(start, i))
					start = -1
				}
				out = append(out, w.slice(i, i+1))
			default:
				if start < 0 {
					start = i
				}
			}
		}
		if start >= 0 {
			out = append(out, w.slice(start, len(w.runes)))
		}
		return out
	})
}

// isWordRune is Rust regex's Unicode \w (what HF's Whitespace pre-tokenizer uses): alphabetic (letters and
// letter numbers such as Ⅻ), marks, decimal digits, connector punctuation and the join controls; not other
// numbers such as ½ or ².
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) ||
		unicode.Is(unicode.Pc, r) || r == 0x200C || r == 0x200D
}

// whitespacePre is the regex \w+|[^\w\s]+.
type whitespacePre struct{}

func (whitespacePre) split(words []text, _ bool) []text {
	return splitEach(words, func(w text, out []text) []text {
		start, class := -1, 0
		for i, r := range w.runes {
			c := 2 // other
			if unicode.IsSpace(r) {
				c = 0
			} else if isWordRune(r) {
				c = 1
			}
			if start >= 0 && c != class {
				out = append(out, w.slice(start, i))
				start = -1
			}
			if c != 0 && start < 0 {
				start, class = i, c
			}
		}
		if start >= 0 {
			out = append(out, w.slice(start, len(w.runes)))
		}
		return out
	})
}

type whitespaceSplit struct{}

func (whitespaceSplit) split(words []text, _ bool) []text {
	return splitEach(words, func(w text, out []text) []text {
		start := -1
		for i, r := range w.runes {
			if unicode.IsSpace(r) {
				if start >= 0 {
					out = append(out, w.slice(start, i))
					start = -1
				}
			} else if start < 0 {
				start = i
			}
		}
		if start >= 0 {
			out = append(out, w.slice(start, len(w.runes)))
		}
		return out
	})
}

// splitWithBehavior cuts w at the matched rune ranges according to an HF SplitDelimiterBehavior.
func splitWithBehavior(w text, matches [][2]int, behavior string, out []text) []text {
	prev := 0
	pendingNext := -1 // MergedWithNext: start of a delimiter waiting for the following text
	emit := func(a, b int) {
		if a < b {
			out = append(out, w.slice(a, b))
		}
	}
	for _, m := range matches {
		a, b := m[0], m[1]
		switch behavior {
		case "Removed":
			emit(prev, a)
		case "Isolated", "Contiguous":
			emit(prev, a)
			emit(a, b)
		case "MergedWithPrevious":
			emit(prev, b)
		case "MergedWithNext":
			if pendingNext >= 0 {
				emit(pendingNext, a)
			} else {
				emit(prev, a)
			}
			pendingNext = a
			prev = b
			continue
		}
		prev = b
	}
	if pendingNext >= 0 {
		emit(pendingNext, len(w.runes))
		return out
	}
	emit(prev, len(w.runes))
	return out
}

type splitPre struct {
	match    func(rune) bool
	behavior string
}

func (s splitPre) split(words []text, _ bool) []text {
	return splitEach(words, func(w text, out []text) []text {
		var matches [][2]int
		for i, r := range w.runes {
			if !s.match(r) {
				continue
			}
			if s.behavior == "Contiguous" && len(matches) > 0 && matches[len(matches)-1][1] == i {
				matches[len(matches)-1][1] = i + 1
				continue
			}
			matches = append(matches, [2]int{i, i + 1})
		}
		b := s.behavior
		if b == "Contiguous" {
			b = "Isolated"
		}
		return splitWithBehavior(w, matches, b, out)
	})
}

type regexSplit struct {
	re       *regexp.Regexp
	behavior string
	invert   bool
}

func (s regexSplit) split(words []text, _ bool) []text {
	return splitEach(words, func(w text, out []text) []text {
		str := string(w.runes)
		locs := s.re.FindAllStringIndex(str, -1)
		runeAt := make([]int, len(str)+1)
		ri := 0
		for bi := range str {
			runeAt[bi] = ri
			ri++
		}
		runeAt[len(str)] = ri
		var matches [][2]int
		for _, l := range locs {
			if l[0] == l[1] {
				continue
			}
			matches = append(matches, [2]int{runeAt[l[0]], runeAt[l[1]]})
		}
		if s.invert { // the pattern describes the words: the gaps are the delimiters
			var gaps [][2]int
			prev := 0
			for _, m := range matches {
				if prev < m[0] {
					gaps = append(gaps, [2]int{prev, m[0]})
				}
				prev = m[1]
			}
			if prev < len(w.runes) {
				gaps = append(gaps, [2]int{prev, len(w.runes)})
			}
			matches = gaps
		}
		return splitWithBehavior(w, matches, s.behavior, out)
	})
}

// metaspace replaces spaces with ▁ and splits before each (SentencePiece style).
type metaspace struct {
	replacement rune
	scheme      string // always, first, never
	splitWords  bool
}

func (m metaspace) split(words []text, _ bool) []text {
	return splitEach(words, func(w text, out []text) []text {
		w = w.mapRunes(func(r rune, o []rune) []rune {
			if r == ' ' {
				return append(o, m.replacement)
			}
			return append(o, r)
		})
		// As HF: always prepends to every piece it is given (a chunk that continues a text starts with a space,
		// now ▁, so it gets none); first only at the input's start.
		atInputStart := len(w.orig) > 0 && w.orig[0][0] == 0
		if (m.scheme == "always" || (m.scheme == "first" && atInputStart)) && len(w.runes) > 0 && w.runes[0] != m.replacement {
			w = prepend{string(m.replacement)}.normalize(w, true, false)
		}
		if !m.splitWords {
			return append(out, w)
		}
		start := 0
		for i, r := range w.runes {
			if r == m.replacement && i > start {
				out = append(out, w.slice(start, i))
				start = i
			}
		}
		if start < len(w.runes) {
			out = append(out, w.slice(start, len(w.runes)))
		}
		return out
	})
}

// The GPT-2 split pattern uses a look-ahead that RE2 lacks; gpt2Split implements it by hand:
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func isGPT2Pattern(p string) bool { return p == gpt2Pattern }

type gpt2Split struct{}

func (gpt2Split) split(words []text, _ bool) []text {
	return splitEach(words, func(w text, out []text) []text {
		for _, m := range gpt2Matches(w.runes) {
			out = append(out, w.slice(m[0], m[1]))
		}
		return out
	})
}

func runeClass(r rune) int {
	switch {
	case unicode.IsSpace(r):
		return 0
	case unicode.IsLetter(r):
		return 1
	case unicode.IsNumber(r):
		return 2
	}
	return 3
}

func gpt2Matches(rs []rune) [][2]int {
	var out [][2]int
	n := len(rs)
	run := func(i, class int) int {
		for i < n && runeClass(rs[i]) == class {
			i++
		}
		return i
	}
	for i := 0; i < n; {
		r := rs[i]
		if r == '\'' && i+1 < n {
			if l := contraction(rs[i+1:]); l > 0 {
				out = append(out, [2]int{i, i + 1 + l})
				i += 1 + l
				continue
			}
		}
		c := runeClass(r)
		if r == ' ' && i+1 < n && runeClass(rs[i+1]) != 0 {
			j := run(i+1, runeClass(rs[i+1]))
			out = append(out, [2]int{i, j})
			i = j
			continue
		}
		if c != 0 {
			j := run(i, c)
			out = append(out, [2]int{i, j})
			i = j
			continue
		}
		j := run(i, 0)
		switch {
		case j == n:
			out = append(out, [2]int{i, j})
			i = j
		case j-i > 1:
			out = append(out, [2]int{i, j - 1})
			i = j - 1
		default:
			out = append(out, [2]int{i, j})
			i = j
		}
	}
	return out
}

func contraction(rs []rune) int {
	if len(rs) >= 2 {
		switch string(rs[:2]) {
		case "re", "ve", "ll":
			return 2
		}
	}
	switch rs[0] {
	case 's', 't', 'm', 'd':
		return 1
	}
	return 0
}

// The split patterns of GPT-4-style tokenizers (Llama 3, Qwen 2 and 3, OLMo, …) end like GPT-2's with
// `\s+(?!\S)|\s+`, a look-ahead RE2 lacks. whitespaceLookahead runs the rest of the pattern with Go's regexp,
// anchored at each position (leftmost-first alternation, as the original), and applies those two alternatives by
// hand: a whitespace run followed by a non-space leaves its last character to the next match. Go's \s is
// ASCII-only where the original's is Unicode; other Unicode spaces then fall to the alternatives by hand.
const lookaheadTail = `|\s+(?!\S)|\s+`

type whitespaceLookahead struct{ re *regexp.Regexp }

func newWhitespaceLookahead(pattern string) (whitespaceLookahead, bool, error) {
	if len(pattern) <= len(lookaheadTail) || pattern[len(pattern)-len(lookaheadTail):] != lookaheadTail {
		return whitespaceLookahead{}, false, nil
	}
	re, err := regexp.Compile(`^(?:` + pattern[:len(pattern)-len(lookaheadTail)] + `)`)
	if err != nil {
		return whitespaceLookahead{}, true, fmt.Errorf("regex %q is not supported by Go's regexp (RE2): %v", pattern, err)
	}
	return whitespaceLookahead{re: re}, true, nil
}

func (w whitespaceLookahead) split(words []text, _ bool) []text {
	return splitEach(words, func(word text, out []text) []text {
		s := string(word.runes)
		runeAt := make([]int, len(s)+1) // byte offset in s → rune index
		ri := 0
		for bi := range s {
			runeAt[bi] = ri
			ri++
		}
		runeAt[len(s)] = ri
		byteAt := make([]int, len(word.runes)+1) // rune index → byte offset
		for bi := range s {
			byteAt[runeAt[bi]] = bi
		}
		byteAt[len(word.runes)] = len(s)
		n := len(word.runes)
		for i := 0; i < n; {
			if loc := w.re.FindStringIndex(s[byteAt[i]:]); loc != nil && loc[1] > 0 {
				j := runeAt[byteAt[i]+loc[1]]
				out = append(out, word.slice(i, j))
				i = j
				continue
			}
			j := i
			for j < n && unicode.IsSpace(word.runes[j]) {
				j++
			}
			switch {
			case j == i: // not whitespace and no alternative matched: the character alone
				j = i + 1
			case j < n && j-i > 1: // \s+(?!\S): leave the last space to the next match
				j--
			}
			out = append(out, word.slice(i, j))
			i = j
		}
		return out
	})
}
