package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

// Hybrid search's query words, candidate counts and reciprocal rank fusion
// are shared with the other backends (package storage, hybrid.go); what
// is here is FTS5's part: the MATCH expression, the common-word bound and
// the full-text candidate list.

// matchExpr builds an FTS5 MATCH expression from a query's text: its
// storage.QueryTerms, each quoted as a string so that nothing in the text is read
// as FTS5 syntax, joined with OR. It returns "" when no word is left.
func matchExpr(text string) string { return orExpr(storage.QueryTerms(text)) }

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
