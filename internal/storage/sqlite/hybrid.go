package sqlite

import (
	"context"
	"fmt"
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
	maxQueryTerms   = 32
	maxTermBytes    = 64
	maxCandidateAll = 5000
)

// candidates is how many candidates each list of a hybrid search of k
// hits brings.
func candidates(k int) int {
	return min(maxCandidateAll, max(minCandidates, candidatesPerK*k))
}

// stopwords are English function words left out of the lexical query: they
// match most chunks, so they add little to BM25 (their IDF is small) and
// cost the most to evaluate.
var stopwords = func() map[string]bool {
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

// queryTerms returns a query's words for the full-text search: its words
// (letters and digits, as FTS5's unicode61 tokenizer cuts them), lower
// case, without stopwords, one-letter words and repeats, at most
// maxQueryTerms.
func queryTerms(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r)
	})
	seen := map[string]bool{}
	terms := make([]string, 0, min(len(words), maxQueryTerms))
	for _, w := range words {
		if len(terms) == maxQueryTerms {
			break
		}
		if len([]rune(w)) < 2 || len(w) > maxTermBytes || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
	}
	return terms
}

// matchExpr builds an FTS5 MATCH expression from a query's text: its
// queryTerms, each quoted as a string so that nothing in the text is read
// as FTS5 syntax, joined with OR. It returns "" when no word is left.
func matchExpr(text string) string { return orExpr(queryTerms(text)) }

func orExpr(terms []string) string {
	quoted := make([]string, len(terms))
	for i, w := range terms {
		// The words hold letters and digits only; doubling quotes keeps
		// the string literal closed whatever the word.
		quoted[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(quoted, " OR ")
}

// Common words: FTS5 computes BM25 for every chunk that matches any query
// word, whatever the LIMIT, so a search costs about a microsecond per
// chunk holding its commonest word. A word in more than
// commonDocs(chunks) chunks is left out of the full-text query: its IDF,
// the weight BM25 gives it, is small (about ln(100) ≈ 4.6 at 1% against
// 11.5 for a word in one chunk of 100k), and the dense list still sees it.
// At 100k chunks (docs/benchmarks.md, "Hybrid search") a bound of 1% gave
// a hybrid p50 of 2.3 ms and p99 of 6 ms, 2% 2.5 and 11 ms, 5% 3.5 and
// 22 ms, no bound 8.9 and 126 ms. The floor keeps every word of a small
// corpus, whose counts say little (the labelled set of internal/rageval).
const (
	commonDocsFloor    = 1000
	commonDocsFraction = 0.01
)

// defaultCommonDocs is the document count over which a query word is left
// out of a full-text search of an index of total chunks.
func defaultCommonDocs(total int) int {
	return max(commonDocsFloor, int(commonDocsFraction*float64(total)))
}

// rareTerms returns the terms of a query whose document counts, read from
// the full-text index's vocabulary (B-tree lookups, one per term), are at
// most s.commonDocs of all chunks. A term's count is looked up under its
// Porter stem, the form the index holds; a term without a count (not
// ASCII, or a stem the lookup does not find) is kept.
func (s *Store) rareTerms(ctx context.Context, terms []string) ([]string, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	bound := s.commonDocs(s.index.Total())
	stems := make([]string, len(terms))
	args := make([]any, 0, len(terms))
	for i, w := range terms {
		if ascii(w) {
			stems[i] = porterStem(w)
			args = append(args, stems[i])
		}
	}
	docs := make(map[string]int, len(args))
	if len(args) > 0 {
		q := `SELECT term, doc FROM chunks_fts_terms WHERE term IN (?` + strings.Repeat(",?", len(args)-1) + `)`
		rows, err := s.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: full-text vocabulary: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var term string
			var doc int
			if err := rows.Scan(&term, &doc); err != nil {
				return nil, fmt.Errorf("sqlite: full-text vocabulary: %w", err)
			}
			docs[term] = doc
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: full-text vocabulary: %w", err)
		}
	}
	kept := terms[:0:0]
	for i, w := range terms {
		if stems[i] == "" || docs[stems[i]] <= bound {
			kept = append(kept, w)
		}
	}
	return kept, nil
}

func ascii(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= 0x80 {
			return false
		}
	}
	return true
}

// lexical returns the full-text candidates of a hybrid search: up to n
// chunks of the given stores matching any of the query's rare terms (none
// when every term is common), best BM25 first, that the index holds and
// allow (nil: all) accepts, each scored by cosine against vector.
//
// The full-text index covers every store; the ranked rows are kept or
// dropped by the in-memory index (which knows each row's store and file),
// so the query reads no chunk row. FTS5 computes BM25 for every matching
// row whatever the LIMIT, so the rows are ranked once: the first n when
// the stores searched hold every chunk and no filter applies, else as many
// as it takes (read in rank order until n pass).
func (s *Store) lexical(ctx context.Context, terms []string, vector []float32, storeIDs []string, n int, allow func(string, string, map[string]any) bool) ([]vecindex.Result, error) {
	terms, err := s.rareTerms(ctx, terms)
	if err != nil || len(terms) == 0 {
		return nil, err
	}
	q := `SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank`
	if allow == nil && s.index.Covers(storeIDs) {
		q += fmt.Sprintf(" LIMIT %d", n)
	}
	rows, err := s.r.QueryContext(ctx, q, orExpr(terms))
	if err != nil {
		return nil, fmt.Errorf("sqlite: full-text search: %w", err)
	}
	defer rows.Close()
	out := make([]vecindex.Result, 0, n)
	for len(out) < n && rows.Next() {
		var row int64
		if err := rows.Scan(&row); err != nil {
			return nil, fmt.Errorf("sqlite: full-text search: %w", err)
		}
		if r, ok := s.index.Lookup(vector, row, storeIDs, allow); ok {
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: full-text search: %w", err)
	}
	return out, nil
}

// fuse merges the dense and lexical candidate lists by reciprocal rank
// fusion, best first: by fused score, then cosine, then file id, chunk
// index and store id. Scores stay the cosine similarities.
func fuse(dense, lexical []vecindex.Result) []vecindex.Result {
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
