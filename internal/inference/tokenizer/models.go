package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// piece is one token of a word: its id and text, and the rune range [start,end) of the word it covers.
type piece struct {
	id         int64
	tok        string
	start, end int
}

// model turns one pre-tokenised word into tokens.
type model interface {
	tokenize(word []rune, out []piece) []piece
	vocab() map[string]int64
	kind() string
}

type modelSpec struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	MaxInputCharsPerWord    int             `json:"max_input_chars_per_word"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
}

func parseModel(raw json.RawMessage) (model, error) {
	var s modelSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	var vocab map[string]int64
	if s.Type == "Unigram" {
		return parseUnigram(raw)
	}
	if err := json.Unmarshal(s.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("model.vocab: %v", err)
	}
	unk := ""
	if s.UnkToken != nil {
		unk = *s.UnkToken
	}
	switch s.Type {
	case "WordPiece":
		prefix := "##"
		if s.ContinuingSubwordPrefix != nil {
			prefix = *s.ContinuingSubwordPrefix
		}
		maxChars := s.MaxInputCharsPerWord
		if maxChars == 0 {
			maxChars = 100
		}
		if _, ok := vocab[unk]; !ok {
			return nil, fmt.Errorf("model.unk_token %q is not in the WordPiece vocabulary", unk)
		}
		return &wordPiece{v: vocab, unk: unk, unkID: vocab[unk], prefix: prefix, maxChars: maxChars}, nil
	case "WordLevel":
		id, ok := vocab[unk]
		if !ok {
			return nil, fmt.Errorf("model.unk_token %q is not in the WordLevel vocabulary", unk)
		}
		return &wordLevel{v: vocab, unk: unk, unkID: id, words: wordsByID(vocab)}, nil
	case "BPE", "":
		b := &bpe{v: vocab, unk: unk, fuseUnk: s.FuseUnk, byteFallback: s.ByteFallback, ignoreMerges: s.IgnoreMerges, ranks: map[[2]string]int{}}
		if s.ContinuingSubwordPrefix != nil {
			b.prefix = *s.ContinuingSubwordPrefix
		}
		if s.EndOfWordSuffix != nil {
			b.suffix = *s.EndOfWordSuffix
		}
		if id, ok := vocab[unk]; ok {
			b.unkID = id
		} else if unk != "" {
			return nil, fmt.Errorf("model.unk_token %q is not in the BPE vocabulary", unk)
		}
		merges, err := parseMerges(s.Merges)
		if err != nil {
			return nil, err
		}
		for i, m := range merges {
			if _, ok := b.ranks[m]; !ok {
				b.ranks[m] = i
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("model type %q is not supported; supported: WordPiece, BPE, WordLevel, Unigram", s.Type)
}

// parseMerges reads merges written as "a b" strings (older files) or as ["a","b"] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, 0, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("model.merges[%d] %q is not two tokens separated by a space", i, s)
			}
			out = append(out, [2]string{a, b})
		}
		return out, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("model.merges: neither strings nor pairs: %v", err)
	}
	return pairs, nil
}

// wordPiece is BERT's greedy longest-match-first subword model.
type wordPiece struct {
	v        map[string]int64
	unk      string
	unkID    int64
	prefix   string
	maxChars int
}

func (w *wordPiece) kind() string            { return "WordPiece" }
func (w *wordPiece) vocab() map[string]int64 { return w.v }

func (w *wordPiece) tokenize(word []rune, out []piece) []piece {
	if len(word) > w.maxChars {
		return append(out, piece{id: w.unkID, tok: w.unk, start: 0, end: len(word)})
	}
	mark := len(out)
	// byteAt[i] is the UTF-8 offset of rune i in the word's encoding; candidates are slices of one buffer, and
	// the map lookup with string(bytes) does not allocate.
	enc := make([]byte, 0, len(w.prefix)+4*len(word))
	enc = append(enc, w.prefix...)
	byteAt := make([]int, len(word)+1)
	for i, r := range word {
		byteAt[i] = len(enc)
		enc = utf8.AppendRune(enc, r)
	}
	byteAt[len(word)] = len(enc)
	key := make([]byte, 0, len(enc))
	for start := 0; start < len(word); {
		end := len(word)
		found := false
		for end > start {
			key = key[:0]
			if start > 0 {
				key = append(key, w.prefix...)
			}
			key = append(key, enc[byteAt[start]:byteAt[end]]...)
			if id, ok := w.v[string(key)]; ok {
				out = append(out, piece{id: id, tok: string(key), start: start, end: end})
				found = true
				break
			}
			end--
		}
		if !found { // the whole word is unknown
			return append(out[:mark], piece{id: w.unkID, tok: w.unk, start: 0, end: len(word)})
		}
		start = end
	}
	return out
}

// wordLevel maps each word to its id.
type wordLevel struct {
	v     map[string]int64
	unk   string
	unkID int64
	// words[id] is the word of id (nil unless every id is one word's, in
	// [0, len(v))): a token's text without a string made per word.
	words []string
}

// wordsByID inverts vocab when its ids are 0..len(vocab)-1, each once; nil
// otherwise.
func wordsByID(vocab map[string]int64) []string {
	words := make([]string, len(vocab))
	for w, id := range vocab {
		if id < 0 || id >= int64(len(words)) || words[id] != "" || w == "" {
			return nil
		}
		words[id] = w
	}
	return words
}

func (w *wordLevel) kind() string            { return "WordLevel" }
func (w *wordLevel) vocab() map[string]int64 { return w.v }

func (w *wordLevel) tokenize(word []rune, out []piece) []piece {
	// The word's UTF-8 in a stack buffer: the map lookup of string(b)
	// allocates nothing, and a known word's text is the vocabulary's.
	var buf [64]byte
	b := buf[:0]
	for _, r := range word {
		b = utf8.AppendRune(b, r)
	}
	if id, ok := w.v[string(b)]; ok {
		tok := ""
		if w.words != nil {
			tok = w.words[id]
		} else {
			tok = string(b)
		}
		return append(out, piece{id: id, tok: tok, start: 0, end: len(word)})
	}
	return append(out, piece{id: w.unkID, tok: w.unk, start: 0, end: len(word)})
}

// bpe applies merges by rank (lowest first, leftmost on ties), as HF tokenizers does.
type bpe struct {
	v            map[string]int64
	ranks        map[[2]string]int
	unk          string
	unkID        int64
	prefix       string
	suffix       string
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool

	cache sync.Map // word → []piece; bounded by cacheLimit entries
	size  int64
	mu    sync.Mutex
}

const cacheLimit = 1 << 16

func (b *bpe) kind() string            { return "BPE" }
func (b *bpe) vocab() map[string]int64 { return b.v }

type symbol struct {
	s          string
	start, end int // rune range in the word
}

func (b *bpe) tokenize(word []rune, out []piece) []piece {
	key := string(word)
	if c, ok := b.cache.Load(key); ok {
		return append(out, c.([]piece)...)
	}
	mark := len(out)
	out = b.merge(word, out)
	b.mu.Lock()
	if b.size < cacheLimit {
		b.size++
		b.cache.Store(key, append([]piece(nil), out[mark:]...))
	}
	b.mu.Unlock()
	return out
}

func (b *bpe) merge(word []rune, out []piece) []piece {
	if b.ignoreMerges {
		if id, ok := b.v[string(word)]; ok {
			return append(out, piece{id: id, tok: string(word), start: 0, end: len(word)})
		}
	}
	syms := make([]symbol, 0, len(word))
	for i, r := range word {
		s := string(r)
		if i > 0 && b.prefix != "" {
			s = b.prefix + s
		}
		if i == len(word)-1 && b.suffix != "" {
			s += b.suffix
		}
		syms = append(syms, symbol{s: s, start: i, end: i + 1})
	}
	for len(syms) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := b.ranks[[2]string{syms[i].s, syms[i+1].s}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		right := syms[at+1].s
		if b.prefix != "" {
			right = strings.TrimPrefix(right, b.prefix)
		}
		syms[at] = symbol{s: syms[at].s + right, start: syms[at].start, end: syms[at+1].end}
		syms = append(syms[:at+1], syms[at+2:]...)
	}
	lastUnk := false
	for _, s := range syms {
		if id, ok := b.v[s.s]; ok {
			out = append(out, piece{id: id, tok: s.s, start: s.start, end: s.end})
			lastUnk = false
			continue
		}
		if b.byteFallback {
			if ps, ok := b.bytePieces(s); ok {
				out = append(out, ps...)
				lastUnk = false
				continue
			}
		}
		if b.unk == "" {
			continue // HF drops symbols it cannot map when there is no unk token
		}
		if b.fuseUnk && lastUnk {
			out[len(out)-1].end = s.end
			continue
		}
		out = append(out, piece{id: b.unkID, tok: b.unk, start: s.start, end: s.end})
		lastUnk = true
	}
	return out
}

// bytePieces maps a symbol to <0xXX> tokens, one per UTF-8 byte.
func (b *bpe) bytePieces(s symbol) ([]piece, bool) {
	var out []piece
	for _, c := range []byte(strings.TrimSuffix(strings.TrimPrefix(s.s, b.prefix), b.suffix)) {
		tok := fmt.Sprintf("<0x%02X>", c)
		id, ok := b.v[tok]
		if !ok {
			return nil, false
		}
		out = append(out, piece{id: id, tok: tok, start: s.start, end: s.end})
	}
	return out, true
}

// maxTokenChars is the largest number of characters one vocabulary token can stand for.
func maxTokenChars(m model, special map[string]bool, byteLevelAlphabet bool) int {
	best := 1
	prefix := ""
	if wp, ok := m.(*wordPiece); ok {
		prefix = wp.prefix
	}
	for tok := range m.vocab() {
		if special[tok] {
			continue
		}
		t := tok
		if prefix != "" {
			t = strings.TrimPrefix(t, prefix)
		}
		n := utf8.RuneCountInString(t)
		if byteLevelAlphabet {
			n = utf8.RuneCount(decodeByteLevel(t))
		}
		if n > best {
			best = n
		}
	}
	return best
}
