package storage

import (
	"sort"
	"strings"
	"unicode"

	"github.com/junction-router/junction/internal/storage/vecindex"
)

// Hybrid search (storage.Query.Text): two candidate lists, the vector
// index's top n by cosine and the full-text index's top n by BM25 over the
// query's words, fused by reciprocal rank fusion.
const (
	// rrfK is the rank constant of reciprocal rank fusion: a candidate
	// scores the sum over the lists it is in of 1/(rrfK + rank), rank from
	// 1. 60 is the constant of the original paper (Cormack et al., 2009)
	// and what most engines use; it was not tuned to our labelled set.
	rrfK = 60
	// minCandidates is the least each list contributes; a list has
	// max(minCandidates, candidatesPerK·K).
	minCandidates   = 50
	candidatesPerK  = 5
	MaxQueryTerms   = 32
	maxTermBytes    = 64
	maxCandidateAll = 5000
)

// Candidates is how many candidates each list of a hybrid search of k
// hits brings.
func Candidates(k int) int {
	return min(maxCandidateAll, max(minCandidates, candidatesPerK*k))
}

// Stopwords are English function words left out of the lexical query: they
// match most chunks, so they add little to BM25 (their IDF is small) and
// cost the most to evaluate. Read only.
var Stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each few for from further had
		has have having he her here hers herself him himself his how i if in into is it its itself just me more most
		my myself no nor not now of off on once only or other our ours ourselves out over own same she should so some
		such than that the their theirs them themselves then there these they this those through to too under until
		up very was we were what when where which while who whom why will with would you your yours yourself
		yourselves i'm can't don't`) {
		m[w] = true
	}
	return m
}()

// QueryTerms returns a query's words for the full-text search: its words
// (letters and digits, as FTS5's unicode61 tokenizer cuts them), lower
// case, without stopwords, one-letter words and repeats, at most
// MaxQueryTerms.
func QueryTerms(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r)
	})
	seen := map[string]bool{}
	terms := make([]string, 0, min(len(words), MaxQueryTerms))
	for _, w := range words {
		if len(terms) == MaxQueryTerms {
			break
		}
		if len([]rune(w)) < 2 || len(w) > maxTermBytes || Stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
	}
	return terms
}

// FuseRRF merges the dense and lexical candidate lists by reciprocal rank
// fusion, best first: by fused score, then cosine, then file id, chunk
// index and store id. Scores stay the cosine similarities.
func FuseRRF(dense, lexical []vecindex.Result) []vecindex.Result {
	type cand struct {
		r     vecindex.Result
		fused float64
	}
	byRow := make(map[int64]*cand, len(dense)+len(lexical))
	all := make([]*cand, 0, len(dense)+len(lexical))
	add := func(list []vecindex.Result) {
		for i, r := range list {
			w := 1 / float64(rrfK+i+1)
			if c, ok := byRow[r.Row]; ok {
				c.fused += w
				continue
			}
			c := &cand{r: r, fused: w}
			byRow[r.Row] = c
			all = append(all, c)
		}
	}
	add(dense)
	add(lexical)
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		switch {
		case a.fused != b.fused:
			return a.fused > b.fused
		case a.r.Score != b.r.Score:
			return a.r.Score > b.r.Score
		case a.r.FileID != b.r.FileID:
			return a.r.FileID < b.r.FileID
		case a.r.ChunkIndex != b.r.ChunkIndex:
			return a.r.ChunkIndex < b.r.ChunkIndex
		}
		return a.r.StoreID < b.r.StoreID
	})
	out := make([]vecindex.Result, len(all))
	for i, c := range all {
		out[i] = c.r
	}
	return out
}
