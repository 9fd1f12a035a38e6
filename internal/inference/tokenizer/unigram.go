package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// unigram is SentencePiece's unigram model as HF tokenizers runs it: the Viterbi path of highest total piece
// score; a character no piece covers becomes the unknown token (score: the lowest piece score less 10), and
// consecutive unknowns fuse; with byte_fallback an unknown becomes <0xXX> byte tokens when they exist.
type unigram struct {
	v            map[string]int64
	score        map[string]float64
	maxRunes     int
	unk          string
	unkID        int64
	unkScore     float64
	byteFallback bool
}

func parseUnigram(raw json.RawMessage) (*unigram, error) {
	var s struct {
		Vocab        [][2]json.RawMessage `json:"vocab"`
		UnkID        *int64               `json:"unk_id"`
		ByteFallback bool                 `json:"byte_fallback"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("model Unigram: %v", err)
	}
	u := &unigram{v: map[string]int64{}, score: map[string]float64{}, byteFallback: s.ByteFallback}
	minScore := math.Inf(1)
	for i, e := range s.Vocab {
		var piece string
		var sc float64
		if err := json.Unmarshal(e[0], &piece); err != nil {
			return nil, fmt.Errorf("model Unigram: vocab[%d]: %v", i, err)
		}
		if err := json.Unmarshal(e[1], &sc); err != nil {
			return nil, fmt.Errorf("model Unigram: vocab[%d] score: %v", i, err)
		}
		if _, dup := u.v[piece]; !dup {
			u.v[piece] = int64(i)
			u.score[piece] = sc
		}
		minScore = math.Min(minScore, sc)
		if n := utf8.RuneCountInString(piece); n > u.maxRunes {
			u.maxRunes = n
		}
	}
	if s.UnkID == nil || *s.UnkID < 0 || int(*s.UnkID) >= len(s.Vocab) {
		return nil, fmt.Errorf("model Unigram needs an unk_id inside its vocabulary")
	}
	u.unkID = *s.UnkID
	_ = json.Unmarshal(s.Vocab[u.unkID][0], &u.unk)
	u.unkScore = minScore - 10
	return u, nil
}

func (u *unigram) kind() string            { return "Unigram" }
func (u *unigram) vocab() map[string]int64 { return u.v }

func (u *unigram) tokenize(word []rune, out []piece) []piece {
	n := len(word)
	type node struct {
		score float64
		from  int // start of the last piece; -1 when unreached
		unk   bool
	}
	best := make([]node, n+1)
	for i := 1; i <= n; i++ {
		best[i].from = -1
	}
	for start := 0; start < n; start++ {
		if start > 0 && best[start].from < 0 {
			continue
		}
		base := best[start].score
		single := false
		for l := 1; l <= u.maxRunes && start+l <= n; l++ {
			sc, ok := u.score[string(word[start:start+l])]
			if !ok {
				continue
			}
			if l == 1 {
				single = true
			}
			if t := &best[start+l]; t.from < 0 || base+sc > t.score {
				*t = node{score: base + sc, from: start}
			}
		}
		if !single {
			if t := &best[start+1]; t.from < 0 || base+u.unkScore > t.score {
				*t = node{score: base + u.unkScore, from: start, unk: true}
			}
		}
	}
	// Backtrack, then emit in order, fusing consecutive unknowns.
	var spans [][3]int // start, end, unk
	for end := n; end > 0; end = best[end].from {
		unk := 0
		if best[end].unk {
			unk = 1
		}
		spans = append(spans, [3]int{best[end].from, end, unk})
	}
	for i := len(spans) - 1; i >= 0; i-- {
		a, b, unk := spans[i][0], spans[i][1], spans[i][2] == 1
		if !unk {
			s := string(word[a:b])
			out = append(out, piece{id: u.v[s], tok: s, start: a, end: b})
			continue
		}
		for i > 0 && spans[i-1][2] == 1 { // fuse the following unknowns
			i--
			b = spans[i][1]
		}
		if u.byteFallback {
			if ps, ok := u.bytePieces(word[a:b], a, b); ok {
				out = append(out, ps...)
				continue
			}
		}
		out = append(out, piece{id: u.unkID, tok: u.unk, start: a, end: b})
	}
	return out
}

func (u *unigram) bytePieces(rs []rune, a, b int) ([]piece, bool) {
	var out []piece
	for _, c := range []byte(string(rs)) {
		tok := fmt.Sprintf("<0x%02X>", c)
		id, ok := u.v[tok]
		if !ok {
			return nil, false
		}
		out = append(out, piece{id: id, tok: tok, start: a, end: b})
	}
	return out, true
}

// precompiled is SentencePiece's normaliser as a charsmap: a darts double-array trie over UTF-8 bytes whose
// values point into a blob of NUL-terminated replacement strings. As HF tokenizers does, each grapheme cluster
// shorter than 6 bytes is looked up whole, else each character; the first (shortest) prefix match replaces it.
type precompiled struct {
	trie       []uint32
	normalized []byte
}

func parsePrecompiled(b64 string) (*precompiled, error) {
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("normalizer Precompiled: precompiled_charsmap is not base64: %v", err)
	}
	if len(data) < 4 {
		return nil, fmt.Errorf("normalizer Precompiled: charsmap too short")
	}
	size := int(binary.LittleEndian.Uint32(data))
	if size%4 != 0 || 4+size > len(data) {
		return nil, fmt.Errorf("normalizer Precompiled: trie size %d does not fit the %d-byte charsmap", size, len(data))
	}
	p := &precompiled{trie: make([]uint32, size/4), normalized: data[4+size:]}
	for i := range p.trie {
		p.trie[i] = binary.LittleEndian.Uint32(data[4+4*i:])
	}
	return p, nil
}

// lookup returns the replacement of the shortest prefix of key that the trie holds.
func (p *precompiled) lookup(key string) (string, bool) {
	if len(p.trie) == 0 {
		return "", false
	}
	offset := func(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }
	label := func(u uint32) uint32 { return u & ((1 << 31) | 0xFF) }
	hasLeaf := func(u uint32) bool { return (u>>8)&1 == 1 }
	value := func(u uint32) uint32 { return u & ((1 << 31) - 1) }
	pos := offset(p.trie[0])
	for i := 0; i < len(key); i++ {
		c := uint32(key[i])
		pos ^= c
		if int(pos) >= len(p.trie) {
			return "", false
		}
		unit := p.trie[pos]
		if label(unit) != c {
			return "", false
		}
		pos ^= offset(unit)
		if hasLeaf(unit) {
			if int(pos) >= len(p.trie) {
				return "", false
			}
			start := int(value(p.trie[pos]))
			if start > len(p.normalized) {
				return "", false
			}
			end := start
			for end < len(p.normalized) && p.normalized[end] != 0 {
				end++
			}
			return string(p.normalized[start:end]), true
		}
	}
	return "", false
}

func (p *precompiled) normalize(t text, _, _ bool) text {
	s := string(t.runes)
	out := text{runes: make([]rune, 0, len(t.runes)), orig: make([][2]int, 0, len(t.runes))}
	ri := 0 // rune index of the grapheme's start
	state := -1
	for len(s) > 0 {
		var g string
		g, s, _, state = uniseg.FirstGraphemeClusterInString(s, state)
		cnt := utf8.RuneCountInString(g)
		if len(g) < 6 {
			if rep, ok := p.lookup(g); ok {
				a, b := t.span(ri, ri+cnt)
				for _, r := range rep {
					out.runes = append(out.runes, r)
					out.orig = append(out.orig, [2]int{a, b})
				}
				ri += cnt
				continue
			}
		}
		for k, r := range g {
			if rep, ok := p.lookup(g[k : k+utf8.RuneLen(r)]); ok {
				for _, nr := range rep {
					out.runes = append(out.runes, nr)
					out.orig = append(out.orig, t.orig[ri])
				}
			} else {
				out.runes = append(out.runes, t.runes[ri])
				out.orig = append(out.orig, t.orig[ri])
			}
			ri++
		}
	}
	return out
}
