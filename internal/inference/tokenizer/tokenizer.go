// Package tokenizer is a pure-Go implementation of the Hugging Face `tokenizer.json` format, enough to run the
// exports Junction serves: WordPiece (BERT: BertNormalizer, BertPreTokenizer), byte-level BPE (GPT-2, RoBERTa,
// ModernBERT, Llama 3 and Qwen style splits), WordLevel (with Whitespace pre-tokenisation), SentencePiece
// Unigram with its precompiled charsmap (XLM-R, DeBERTa-v3), added and special tokens, and the
// TemplateProcessing, BertProcessing, RobertaProcessing and ByteLevel post-processors. Every token carries its
// byte offsets in the input text.
//
// Long texts are tokenised only as far as a caller's limit needs: the text is read in chunks cut where a word
// ends, and reading stops once the limit is passed, so the tokens returned equal the first tokens of the whole
// text (Tokens reports whether the text was read to its end).
//
// It must not run models or decide budgets: package inference does that. Components it does not implement are
// refused with a clear error at Load.
package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Token is one token of a text: its id, its vocabulary string and its byte range [Start,End) in the text.
type Token struct {
	ID    int64
	Text  string
	Start int
	End   int
}

// Encoding is the model input for one text or text pair, special tokens included.
type Encoding struct {
	IDs     []int64
	TypeIDs []int64
	Tokens  []string
	// Offsets are byte ranges in the text the token came from (the pair's second text for Sequence 1);
	// special tokens have [0,0).
	Offsets  [][2]int
	Special  []bool // added by the post-processor
	Sequence []int8 // 0 first text, 1 second text, -1 special token
}

// Len is the number of tokens.
func (e Encoding) Len() int { return len(e.IDs) }

// Tokenizer is a loaded tokenizer.json. It is safe for concurrent use.
type Tokenizer struct {
	normalizer   normalizer
	pre          preTokenizer
	byteLevel    *byteLevel // set when a ByteLevel pre-tokenizer maps bytes (offsets trimmed, vocab in byte alphabet)
	model        model
	added        []addedToken
	addedByFirst [256][]int // first byte of content → indexes into added, longest first
	post         template
	trimOffsets  bool
	padID        int64
	padToken     string
	maxChars     int
}

type addedToken struct {
	ID         int64  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type fileSpec struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         json.RawMessage `json:"model"`
	Padding       *struct {
		PadID    int64  `json:"pad_id"`
		PadToken string `json:"pad_token"`
	} `json:"padding"`
}

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse reads tokenizer.json content.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileSpec
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %v", err)
	}
	if len(f.Model) == 0 {
		return nil, fmt.Errorf("tokenizer.json has no model")
	}
	t := &Tokenizer{}
	var err error
	if t.normalizer, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("tokenizer.json /normalizer: %w", err)
	}
	if t.pre, t.byteLevel, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("tokenizer.json /pre_tokenizer: %w", err)
	}
	if t.model, err = parseModel(f.Model); err != nil {
		return nil, fmt.Errorf("tokenizer.json /model: %w", err)
	}
	t.added = f.AddedTokens
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].Content) > len(t.added[j].Content) })
	special := map[string]bool{}
	for i, a := range t.added {
		if a.Content == "" {
			return nil, fmt.Errorf("tokenizer.json /added_tokens: token %d has empty content", a.ID)
		}
		t.addedByFirst[a.Content[0]] = append(t.addedByFirst[a.Content[0]], i)
		special[a.Content] = true
	}
	vocab := t.model.vocab()
	lookup := func(tok string) (int64, bool) {
		for _, a := range t.added {
			if a.Content == tok {
				return a.ID, true
			}
		}
		id, ok := vocab[tok]
		return id, ok
	}
	if t.post, err = parsePostProcessor(f.PostProcessor, lookup); err != nil {
		return nil, fmt.Errorf("tokenizer.json /post_processor: %w", err)
	}
	t.trimOffsets = t.post.trimOffsets || (t.byteLevel != nil && t.byteLevel.trimOffsets)
	switch {
	case f.Padding != nil:
		t.padID, t.padToken = f.Padding.PadID, f.Padding.PadToken
	default:
		for _, cand := range []string{"[PAD]", "<pad>", "<|padding|>", "<|endoftext|>"} {
			if id, ok := lookup(cand); ok {
				t.padID, t.padToken = id, cand
				break
			}
		}
	}
	t.maxChars = maxTokenChars(t.model, special, t.byteLevel != nil)
	return t, nil
}

// Model names the tokenisation model: WordPiece, BPE, WordLevel or Unigram.
func (t *Tokenizer) Model() string { return t.model.kind() }

// VocabSize is the number of ids (vocabulary plus added tokens).
func (t *Tokenizer) VocabSize() int {
	n := len(t.model.vocab())
	for _, a := range t.added {
		if _, ok := t.model.vocab()[a.Content]; !ok {
			n++
		}
	}
	return n
}

// PadID is the id used for padding.
func (t *Tokenizer) PadID() int64 { return t.padID }

// TokenID returns the id of a vocabulary or added token.
func (t *Tokenizer) TokenID(tok string) (int64, bool) {
	for _, a := range t.added {
		if a.Content == tok {
			return a.ID, true
		}
	}
	id, ok := t.model.vocab()[tok]
	return id, ok
}

// MaxTokenChars is the largest number of characters one vocabulary token stands for (special tokens aside).
// The spec's reject rule uses it: a text longer than budget × MaxTokenChars characters cannot fit.
func (t *Tokenizer) MaxTokenChars() int { return t.maxChars }

// NumSpecial is the number of tokens the post-processor adds to one text (pair false) or a pair.
func (t *Tokenizer) NumSpecial(pair bool) int { return t.post.added(pair) }

// Encode tokenises a whole text and adds the special tokens.
func (t *Tokenizer) Encode(s string) Encoding {
	toks, _ := t.Tokens(s, -1)
	return t.Wrap(toks, nil, false)
}

// EncodePair tokenises a text pair and adds the special tokens.
func (t *Tokenizer) EncodePair(a, b string) Encoding {
	ta, _ := t.Tokens(a, -1)
	tb, _ := t.Tokens(b, -1)
	return t.Wrap(ta, tb, true)
}

// Tokens tokenises s without special tokens, reading only as far as limit tokens need (limit < 0: all of it).
// It returns at most limit tokens; complete is false when s has more tokens than that.
func (t *Tokenizer) Tokens(s string, limit int) (toks []Token, complete bool) {
	if limit == 0 {
		toks, _ := t.tokenizeChunk(s, 0, true, true, nil, 1)
		return nil, len(toks) == 0
	}
	if limit < 0 {
		toks, _ := t.tokenizeChunk(s, 0, true, true, nil, -1)
		return toks, true
	}
	chunk := 16 * limit
	if chunk < 4096 {
		chunk = 4096
	}
	pos := 0
	segmentStart := true // the next chunk begins a segment (the input, or text after an added token)
	for pos < len(s) {
		end := cutPoint(s, pos+chunk)
		toks, segmentStart = t.tokenizeChunk(s[pos:end], pos, segmentStart, end == len(s), toks, limit+1)
		pos = end
		if len(toks) > limit {
			return toks[:limit], false
		}
		chunk *= 2
	}
	return toks, true
}

// cutPoint returns a position ≥ want where a chunk may end without changing how the text tokenises: just
// after a non-space character that a whitespace character follows (or the end of s).
func cutPoint(s string, want int) int {
	if want >= len(s) {
		return len(s)
	}
	for i := want; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			p, _ := utf8.DecodeLastRuneInString(s[:i])
			if !unicode.IsSpace(p) {
				return i
			}
		}
		i += size
	}
	return len(s)
}

// tokenizeChunk tokenises s (which starts at byte base of the input) and appends to out, stopping early once
// out holds stop tokens (stop < 0: never). Normalizers and pre-tokenizers see each segment between added tokens
// on its own, as in HF tokenizers: first says whether s begins a segment, last whether it ends the input.
// endsAtAdded reports whether s ends with an added token (the next chunk then begins a segment).
func (t *Tokenizer) tokenizeChunk(s string, base int, first, last bool, out []Token, stop int) (toks []Token, endsAtAdded bool) {
	segStart := 0
	emitText := func(seg string, segBase int, segFirst, segLast bool) {
		if seg == "" {
			return
		}
		w := newText(seg, segBase)
		if t.normalizer != nil {
			w = t.normalizer.normalize(w, segFirst, segLast)
		}
		words := []text{w}
		if t.pre != nil {
			words = t.pre.split(words, segFirst)
		}
		var ps []piece
		for _, word := range words {
			if stop >= 0 && len(out) >= stop {
				return
			}
			if len(word.runes) == 0 {
				continue
			}
			ps = t.model.tokenize(word.runes, ps[:0])
			for _, p := range ps {
				start, end := word.span(p.start, p.end)
				if t.trimOffsets && t.byteLevel != nil {
					// As HF's ByteLevel offset trimming: leading and trailing Ġ (spaces) leave the offsets; a
					// token of spaces only keeps an empty range at its end. Other whitespace bytes stay.
					a, b := p.start, p.end
					for a < b && word.runes[a] == byteLevelSpace {
						a++
					}
					if a == b {
						start = end
					} else {
						for b > a && word.runes[b-1] == byteLevelSpace {
							b--
						}
						start, end = word.span(a, b)
					}
				}
				out = append(out, Token{ID: p.id, Text: p.tok, Start: start, End: end})
			}
		}
	}
	for i := 0; i < len(s); {
		if stop >= 0 && len(out) >= stop {
			return out, false
		}
		at, a, mStart, mEnd := t.matchAdded(s, i)
		if at < 0 {
			i++
			continue
		}
		emitText(s[segStart:mStart], base+segStart, first || segStart > 0, true)
		out = append(out, Token{ID: a.ID, Text: a.Content, Start: base + at, End: base + at + len(a.Content)})
		segStart, i = mEnd, mEnd
	}
	emitText(s[segStart:], base+segStart, first || segStart > 0, last)
	return out, segStart > 0 && segStart == len(s)
}

// matchAdded looks for an added token at byte i of s. It returns the token's own start, the token, and the
// range it consumes (wider with lstrip/rstrip); at < 0 when none matches.
func (t *Tokenizer) matchAdded(s string, i int) (at int, a addedToken, start, end int) {
	for _, k := range t.addedByFirst[s[i]] {
		c := t.added[k]
		if !strings.HasPrefix(s[i:], c.Content) {
			continue
		}
		j := i + len(c.Content)
		if c.SingleWord {
			if i > 0 {
				if r, _ := utf8.DecodeLastRuneInString(s[:i]); isWordRune(r) {
					continue
				}
			}
			if j < len(s) {
				if r, _ := utf8.DecodeRuneInString(s[j:]); isWordRune(r) {
					continue
				}
			}
		}
		start, end = i, j
		if c.LStrip {
			for start > 0 {
				r, size := utf8.DecodeLastRuneInString(s[:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= size
			}
		}
		if c.RStrip {
			for end < len(s) {
				r, size := utf8.DecodeRuneInString(s[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += size
			}
		}
		return i, c, start, end
	}
	return -1, addedToken{}, 0, 0
}

// Wrap adds the post-processor's special tokens around one text's tokens (pair false) or a pair's.
func (t *Tokenizer) Wrap(a, b []Token, pair bool) Encoding {
	items := t.post.single
	if pair {
		items = t.post.pair
	}
	n := len(a) + t.post.added(pair)
	if pair {
		n += len(b)
	}
	e := Encoding{
		IDs: make([]int64, 0, n), TypeIDs: make([]int64, 0, n), Tokens: make([]string, 0, n),
		Offsets: make([][2]int, 0, n), Special: make([]bool, 0, n), Sequence: make([]int8, 0, n),
	}
	for _, it := range items {
		if it.sequence < 0 {
			for k, id := range it.ids {
				e.IDs = append(e.IDs, id)
				e.TypeIDs = append(e.TypeIDs, it.typeID)
				e.Tokens = append(e.Tokens, it.tokens[k])
				e.Offsets = append(e.Offsets, [2]int{0, 0})
				e.Special = append(e.Special, true)
				e.Sequence = append(e.Sequence, -1)
			}
			continue
		}
		toks := a
		if it.sequence == 1 {
			toks = b
		}
		for _, tk := range toks {
			e.IDs = append(e.IDs, tk.ID)
			e.TypeIDs = append(e.TypeIDs, it.typeID)
			e.Tokens = append(e.Tokens, tk.Text)
			e.Offsets = append(e.Offsets, [2]int{tk.Start, tk.End})
			e.Special = append(e.Special, false)
			e.Sequence = append(e.Sequence, int8(it.sequence))
		}
	}
	return e
}
