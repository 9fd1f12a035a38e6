package signal

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/recipes"
)

// MethodKeyword names literal keyword matching in routing output.
const MethodKeyword = "keyword"

// keywordSet matches every keyword of every signal in one pass over the text
// per case mode: all keywords are compiled into an Aho-Corasick automaton, so
// the cost is linear in the text whatever the number of keywords, with no
// regular expression and no allocation beyond two small per-request arrays
// (and a lower-cased copy of non-ASCII text for case-insensitive keywords).
type keywordSet struct {
	signals []keywordSignal
	exact   *automaton // case-sensitive keywords
	folded  *automaton // lower-cased keywords of case-insensitive signals
}

type keywordSignal struct {
	name     string
	all      bool // AND: every keyword must occur
	whole    bool // whole-word matches only
	folded   bool
	keywords []string
	pattern  []int32 // keywords[i]'s pattern id in the signal's automaton
}

func newKeywordSet(cfg []recipes.KeywordSignal) (Set, error) {
	var exact, folded automatonBuilder
	set := &keywordSet{}
	for _, c := range cfg {
		ks := keywordSignal{name: c.Name, folded: !c.CaseSensitive, whole: c.WordBoundary == nil || *c.WordBoundary}
		switch strings.ToUpper(strings.TrimSpace(c.Operator)) {
		case "", recipes.OpOR:
		case recipes.OpAND:
			ks.all = true
		default:
			return nil, fmt.Errorf("signals: keyword signal %q: operator %q is neither OR nor AND", c.Name, c.Operator)
		}
		if len(c.Keywords) == 0 {
			return nil, fmt.Errorf("signals: keyword signal %q has no keywords", c.Name)
		}
		b := &exact
		if ks.folded {
			b = &folded
		}
		for _, k := range c.Keywords {
			if k == "" || !utf8.ValidString(k) {
				return nil, fmt.Errorf("signals: keyword signal %q has an empty or invalid keyword", c.Name)
			}
			p := k
			if ks.folded {
				p = strings.ToLower(k)
			}
			ks.keywords = append(ks.keywords, k)
			ks.pattern = append(ks.pattern, b.add(p))
		}
		set.signals = append(set.signals, ks)
	}
	set.exact = exact.build(false)
	set.folded = folded.build(true)
	return set, nil
}

func (s *keywordSet) Kind() string { return recipes.KindKeyword }
func (s *keywordSet) Cheap() bool  { return true }

func (s *keywordSet) Missing(code string) []Result {
	out := make([]Result, len(s.signals))
	for i, ks := range s.signals {
		out[i] = Result{Kind: recipes.KindKeyword, Name: ks.name, Method: MethodKeyword, Error: code}
	}
	return out
}

func (s *keywordSet) Evaluate(ctx context.Context, in *Input) []Result {
	start := time.Now()
	text := inputOrEmpty(in).Text
	exactHits := s.exact.scan(text)
	var foldedHits []hit
	if s.folded != nil {
		t := text
		if !isASCII(t) {
			// Only non-ASCII text needs a real case mapping; for ASCII the
			// automaton folds A-Z itself.
			t = strings.ToLower(t)
		}
		foldedHits = s.folded.scan(t)
	}
	out := make([]Result, len(s.signals))
	for i, ks := range s.signals {
		hits := exactHits
		if ks.folded {
			hits = foldedHits
		}
		r := Result{Kind: recipes.KindKeyword, Name: ks.name, Method: MethodKeyword}
		found, first, firstAt := 0, "", int32(-1)
		for j, p := range ks.pattern {
			at := hits[p].any
			if ks.whole {
				at = hits[p].whole
			}
			if at < 0 {
				continue
			}
			found++
			if firstAt < 0 || at < firstAt {
				first, firstAt = ks.keywords[j], at
			}
		}
		if (ks.all && found == len(ks.pattern)) || (!ks.all && found > 0) {
			r.Matched, r.Score, r.Value = true, 1, first
		}
		out[i] = r
	}
	return stamp(out, start)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hit is where a pattern first occurred: at any position, and as a whole word.
// -1 means never.
type hit struct{ any, whole int32 }

// automatonBuilder collects distinct patterns.
type automatonBuilder struct {
	patterns []string
	ids      map[string]int32
}

func (b *automatonBuilder) add(p string) int32 {
	if id, ok := b.ids[p]; ok {
		return id
	}
	if b.ids == nil {
		b.ids = map[string]int32{}
	}
	id := int32(len(b.patterns))
	b.ids[p] = id
	b.patterns = append(b.patterns, p)
	return id
}

// automaton is an Aho-Corasick DFA over byte classes: bytes that occur in no
// pattern share class 0, which keeps the transition table small (states ×
// distinct pattern bytes) and the inner loop to two array loads per byte.
type automaton struct {
	class  [256]uint16
	nclass int
	// delta[row+class] is the next state's row offset (state*nclass), or its
	// bitwise complement when patterns end at that state: the scan loop then
	// needs one load and one sign test per byte.
	delta    []int32
	outStart []int32 // patterns ending at state s: outs[outStart[s]:outStart[s+1]]
	outs     []int32
	patterns []string
	// firstWord/lastWord: whether the pattern begins/ends with a word rune, the
	// only edges where a whole-word match needs a boundary ("C++" needs none
	// after its last '+').
	firstWord, lastWord []bool
}

func (b *automatonBuilder) build(foldASCII bool) *automaton {
	if len(b.patterns) == 0 {
		return nil
	}
	a := &automaton{patterns: b.patterns}
	for _, p := range b.patterns {
		for i := 0; i < len(p); i++ {
			if a.class[p[i]] == 0 {
				a.nclass++
				a.class[p[i]] = uint16(a.nclass)
			}
		}
		first, _ := utf8.DecodeRuneInString(p)
		last, _ := utf8.DecodeLastRuneInString(p)
		a.firstWord = append(a.firstWord, isWordRune(first))
		a.lastWord = append(a.lastWord, isWordRune(last))
	}
	a.nclass++ // class 0
	if foldASCII {
		for c := 'A'; c <= 'Z'; c++ {
			a.class[c] = a.class[c+'a'-'A']
		}
	}
	// Trie.
	nc := a.nclass
	trie := [][]int32{make([]int32, nc)}
	var own [][]int32
	own = append(own, nil)
	for id, p := range b.patterns {
		s := int32(0)
		for i := 0; i < len(p); i++ {
			c := a.class[p[i]]
			if trie[s][c] == 0 {
				trie = append(trie, make([]int32, nc))
				own = append(own, nil)
				trie[s][c] = int32(len(trie) - 1)
			}
			s = trie[s][c]
		}
		own[s] = append(own[s], int32(id))
	}
	// Failure links by breadth-first search turn the trie into a DFA.
	n := len(trie)
	fail := make([]int32, n)
	outs := make([][]int32, n)
	outs[0] = own[0]
	queue := make([]int32, 0, n)
	for c := 0; c < nc; c++ {
		if t := trie[0][c]; t != 0 {
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		outs[s] = append(append([]int32(nil), own[s]...), outs[fail[s]]...)
		for c := 0; c < nc; c++ {
			t := trie[s][c]
			if t == 0 {
				trie[s][c] = trie[fail[s]][c]
				continue
			}
			fail[t] = trie[fail[s]][c]
			queue = append(queue, t)
		}
	}
	a.delta = make([]int32, n*nc)
	a.outStart = make([]int32, n+1)
	for s := 0; s < n; s++ {
		for c, t := range trie[s] {
			v := t * int32(nc)
			if len(outs[t]) > 0 {
				v = ^v
			}
			a.delta[s*nc+c] = v
		}
		a.outStart[s] = int32(len(a.outs))
		a.outs = append(a.outs, outs[s]...)
	}
	a.outStart[n] = int32(len(a.outs))
	return a
}

// scan returns, per pattern, its first occurrence in text and its first
// whole-word occurrence (byte offsets of the start).
func (a *automaton) scan(text string) []hit {
	if a == nil {
		return nil
	}
	hits := make([]hit, len(a.patterns))
	for i := range hits {
		hits[i] = hit{-1, -1}
	}
	// unresolved counts the whole-word slots still empty; once all are
	// filled (and so all "any" slots) the rest of the text cannot change
	// the answer.
	unresolved := len(hits)
	nc := int32(a.nclass)
	delta, class := a.delta, &a.class
	row := int32(0)
	for i := 0; i < len(text); i++ {
		next := delta[row+int32(class[text[i]])]
		if next >= 0 {
			row = next
			continue
		}
		row = ^next
		s := row / nc
		for _, p := range a.outs[a.outStart[s]:a.outStart[s+1]] {
			h := &hits[p]
			if h.whole >= 0 {
				continue
			}
			end := i + 1
			start := end - len(a.patterns[p])
			if h.any < 0 {
				h.any = int32(start)
			}
			if a.boundaryOK(text, p, start, end) {
				h.whole = int32(start)
				unresolved--
			}
		}
		if unresolved == 0 {
			break
		}
	}
	return hits
}

func (a *automaton) boundaryOK(text string, p int32, start, end int) bool {
	if a.firstWord[p] && start > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:start]); isWordRune(r) {
			return false
		}
	}
	if a.lastWord[p] && end < len(text) {
		if r, _ := utf8.DecodeRuneInString(text[end:]); isWordRune(r) {
			return false
		}
	}
	return true
}

// isWordRune is the word-boundary rule the pii detector also uses (one
// rule, kept in internal/pii).
func isWordRune(r rune) bool { return pii.IsWordRune(r) }
