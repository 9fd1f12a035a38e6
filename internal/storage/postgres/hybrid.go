package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/junction-router/junction/internal/storage/vecindex"
)

// lexical returns the full-text candidates of a hybrid search: up to n
// chunks of the given stores matching any of the query's terms, best
// ts_rank first (then id), that the index holds and allow (nil: all)
// accepts, each scored by cosine against vector. The terms hold letters
// and digits only (storage.QueryTerms), so joining them with | cannot
// inject tsquery syntax.
func (s *Store) lexical(ctx context.Context, terms []string, vector []float32, storeIDs []string, n int, allow func(string, string, map[string]any) bool) ([]vecindex.Result, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	q := `SELECT id FROM chunks, to_tsquery('english', ?) query WHERE store_id = ANY(?) AND tsv @@ query ORDER BY ts_rank(tsv, query) DESC, id`
	if allow == nil {
		q += fmt.Sprintf(" LIMIT %d", n)
	}
	rows, err := s.r.QueryContext(ctx, q, strings.Join(terms, " | "), storeIDs)
	if err != nil {
		return nil, fmt.Errorf("postgres: full-text search: %w", err)
	}
	defer rows.Close()
	out := make([]vecindex.Result, 0, n)
	for len(out) < n && rows.Next() {
		var row int64
		if err := rows.Scan(&row); err != nil {
			return nil, fmt.Errorf("postgres: full-text search: %w", err)
		}
		if r, ok := s.index.Lookup(vector, row, storeIDs, allow); ok {
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: full-text search: %w", err)
	}
	return out, nil
}
