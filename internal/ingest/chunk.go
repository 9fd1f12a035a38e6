package ingest

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/storage"
)

// Chunking limits and defaults, in tokens (OpenAI's static chunking
// strategy has the same).
const (
	DefaultMaxTokens     = 800
	DefaultOverlapTokens = 400
	MinMaxTokens         = 100
	MaxMaxTokens         = 4096
)

// WithDefaults returns c with the defaults where it says nothing: the zero
// Chunking is 800 tokens with 400 of overlap (OpenAI's "auto"); a zero
// MaxTokens alone is 800.
func WithDefaults(c storage.Chunking) storage.Chunking {
	if c.MaxTokens == 0 && c.OverlapTokens == 0 {
		return storage.Chunking{MaxTokens: DefaultMaxTokens, OverlapTokens: DefaultOverlapTokens}
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	return c
}

// CheckChunking says what is wrong with a chunking a client asked for
// (after WithDefaults): 100 ≤ max_chunk_size_tokens ≤ 4096 and
// 0 ≤ chunk_overlap_tokens ≤ max_chunk_size_tokens/2.
func CheckChunking(c storage.Chunking) error {
	c = WithDefaults(c)
	if c.MaxTokens < MinMaxTokens || c.MaxTokens > MaxMaxTokens {
		return fmt.Errorf("max_chunk_size_tokens must be between %d and %d (got %d)", MinMaxTokens, MaxMaxTokens, c.MaxTokens)
	}
	if c.OverlapTokens < 0 || c.OverlapTokens > c.MaxTokens/2 {
		return fmt.Errorf("chunk_overlap_tokens must be between 0 and half of max_chunk_size_tokens, %d (got %d)", c.MaxTokens/2, c.OverlapTokens)
	}
	return nil
}

// Piece is one chunk of a document's text.
type Piece struct {
	Text   string
	Tokens int
}

// CountTokens counts tokens the way the router does for its context
// signals: signal.EstimateTokens, the vocabulary-free estimate calibrated
// against cl100k_base (about 3% over on average). Counts of texts joined by
// whitespace add up exactly, which Chunk relies on.
func CountTokens(s string) int { return signal.EstimateTokens(s) }

// Boundary strengths: where a chunk may end, best first.
const (
	cutInWord   = 0 // inside a run without whitespace too long for one piece
	cutWord     = 1
	cutSentence = 2 // after . ! ? … (or their CJK forms), or at a line break
	cutPara     = 3 // at a blank line
)

// unit is a word and the whitespace after it: text[start:end], tokens, and
// how good a place its end is to cut.
type unit struct {
	start, end int
	tokens     int
	cut        int
}

// Chunk cuts text into pieces of at most c.MaxTokens tokens (CountTokens),
// each repeating the tail of the one before it, up to c.OverlapTokens tokens
// and at most half of that piece (so every piece moves on by at least half
// its length). A piece ends at the best boundary in the second half of
// what fits: a blank line, else a sentence end or line break, else between
// words; a run without whitespace longer than a piece (CJK text, a long
// token) is cut between characters, never inside a UTF-8 sequence. Pieces
// are trimmed of surrounding whitespace. c is taken through WithDefaults
// and clamped to the limits CheckChunking states. Work is linear in the
// text's length and pieces share its memory.
func Chunk(text string, c storage.Chunking) []Piece {
	c = WithDefaults(c)
	maxT := min(max(c.MaxTokens, MinMaxTokens), MaxMaxTokens)
	overlap := min(max(c.OverlapTokens, 0), maxT/2)
	s := &unitScanner{text: text, cap: max(maxT/8, 1)}
	var out []Piece
	var units []unit // the units from units[0] on; earlier ones are dropped
	next := 0        // index in units of the next piece's first unit
	for {
		// Fill units until they hold more than maxT tokens after next (or
		// the text ends).
		sum := 0
		for i := next; i < len(units); i++ {
			sum += units[i].tokens
		}
		for sum <= maxT {
			u, ok := s.next()
			if !ok {
				break
			}
			units = append(units, u)
			sum += u.tokens
		}
		if next >= len(units) {
			break
		}
		// The last unit that fits, and the best cut in the second half.
		end, total := next, 0
		for end < len(units) && total+units[end].tokens <= maxT {
			total += units[end].tokens
			end++
		}
		if end == next { // cannot happen: every unit is at most cap ≤ maxT tokens
			end, total = next+1, units[next].tokens
		}
		last := end - 1
		if end < len(units) { // more follows: choose the cut
			best, bestCut, acc := last, -1, 0
			for i := next; i < end; i++ {
				acc += units[i].tokens
				if acc*2 >= total && units[i].cut >= bestCut {
					best, bestCut = i, units[i].cut
				}
			}
			last = best
		}
		piece := strings.TrimSpace(text[units[next].start:units[last].end])
		tokens := CountTokens(piece)
		if piece != "" {
			out = append(out, Piece{Text: piece, Tokens: tokens})
		}
		if last == len(units)-1 {
			if _, more := s.peek(); !more {
				break
			}
		}
		// The next piece starts with the tail of this one: whole units, as
		// many as fit in the overlap, starting after the best boundary among
		// the starts that repeat at least half of it.
		limit := min(overlap, tokens/2)
		first := next
		next = last + 1
		longest, bestCut, acc := last+1, -1, 0
		for i := last; i > first; i-- {
			if acc+units[i].tokens > limit {
				break
			}
			acc += units[i].tokens
			longest = i
			if 2*acc >= limit && units[i-1].cut >= bestCut {
				next, bestCut = i, units[i-1].cut
			}
		}
		if bestCut < 0 {
			next = longest
		}
		// Drop the units before next, now and then, so memory stays bounded.
		if next > 4096 {
			units = append(units[:0], units[next:]...)
			next = 0
		}
	}
	return out
}

// unitScanner yields the units of a text in order.
type unitScanner struct {
	text    string
	pos     int
	cap     int    // the most tokens one unit may have
	pending []unit // the pieces of a long run not yet given
}

func (s *unitScanner) peek() (unit, bool) {
	if len(s.pending) > 0 {
		return s.pending[0], true
	}
	return unit{}, s.pos < len(s.text)
}

func (s *unitScanner) next() (unit, bool) {
	if len(s.pending) > 0 {
		u := s.pending[0]
		s.pending = s.pending[1:]
		return u, true
	}
	t := s.text
	if s.pos >= len(t) {
		return unit{}, false
	}
	start := s.pos
	// Leading whitespace (the text's start only) belongs to the first word.
	i := skipSpace(t, start)
	wordStart := i
	for i < len(t) {
		r, size := utf8.DecodeRuneInString(t[i:])
		if unicode.IsSpace(r) {
			break
		}
		i += size
	}
	wordEnd := i
	i = skipSpace(t, i)
	s.pos = i
	u := unit{start: start, end: i, tokens: CountTokens(t[wordStart:wordEnd])}
	u.cut = boundary(t[wordStart:wordEnd], t[wordEnd:i], i == len(t))
	if u.tokens <= s.cap {
		return u, true
	}
	// A run too long for one unit: split it between characters.
	s.pending = s.split(start, wordEnd, i, u.cut)
	return s.next()
}

// split cuts t[start:end] (no whitespace inside, after any leading
// whitespace) into units of at most cap tokens; the last one takes the
// whitespace up to after and the run's cut.
func (s *unitScanner) split(start, end, after, cut int) []unit {
	t := s.text
	var out []unit
	for start < end {
		// Guess a length from the bytes per token so far, then shrink.
		n := min(end-start, 8*s.cap)
		for {
			n = runeStart(t, start+n) - start
			if n == 0 {
				_, n = utf8.DecodeRuneInString(t[start:])
			}
			k := CountTokens(t[start : start+n])
			if k <= s.cap || n <= utf8.UTFMax {
				out = append(out, unit{start: start, end: start + n, tokens: k, cut: cutInWord})
				break
			}
			n = max(n*s.cap/k*9/10, 1)
		}
		start += n
	}
	last := &out[len(out)-1]
	last.end, last.cut = after, cut
	last.tokens = CountTokens(t[last.start:end])
	return out
}

// runeStart moves i back to the start of the UTF-8 character it is in.
func runeStart(t string, i int) int {
	for i < len(t) && i > 0 && !utf8.RuneStart(t[i]) {
		i--
	}
	return i
}

func skipSpace(t string, i int) int {
	for i < len(t) {
		r, size := utf8.DecodeRuneInString(t[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += size
	}
	return i
}

// boundary is how good a cut after word (followed by space) is.
func boundary(word, space string, end bool) int {
	switch {
	case end || strings.Count(space, "\n") >= 2:
		return cutPara
	case strings.Contains(space, "\n"):
		return cutSentence
	}
	w := strings.TrimRight(word, `"')]}»”’`)
	r, _ := utf8.DecodeLastRuneInString(w)
	switch r {
	case '.', '!', '?', '…', '。', '！', '？', ';', ':':
		return cutSentence
	}
	if space == "" {
		return cutInWord
	}
	return cutWord
}
