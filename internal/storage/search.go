package storage

import (
	"errors"
	"fmt"

	"github.com/junction-router/junction/internal/storage/vecindex"
)

// CheckQuery checks what a search query must hold before any vector store
// is looked at: store ids, k within MaxK, and a non-empty finite vector.
// The backends check the stores' dimensions next, then call PlanQuery.
func CheckQuery(q Query) error {
	if len(q.StoreIDs) == 0 {
		return fmt.Errorf("%w: a search needs at least one vector store", ErrInvalid)
	}
	if q.K < 1 || q.K > MaxK {
		return fmt.Errorf("%w: k must be between 1 and %d (got %d)", ErrInvalid, MaxK, q.K)
	}
	if len(q.Vector) == 0 {
		return fmt.Errorf("%w: the query vector is empty", ErrInvalid)
	}
	if !Finite(q.Vector) {
		return fmt.Errorf("%w: the query vector has a NaN or infinite component", ErrInvalid)
	}
	return nil
}

// SearchPlan is how a backend runs a checked query against its index.
type SearchPlan struct {
	// Allow is the attribute filter for the index (nil: no filter).
	Allow func(storeID, fileID string, attrs map[string]any) bool
	// Terms are the full-text terms of a hybrid search (none: vector only).
	Terms []string
	// N is how many candidates each list of the search reads.
	N int
}

// PlanQuery validates q's filter and text and says how to search for it.
func PlanQuery(q Query) (SearchPlan, error) {
	var p SearchPlan
	if q.Filter != nil {
		if err := q.Filter.Validate(); err != nil {
			return p, err
		}
		p.Allow = func(_, _ string, attrs map[string]any) bool { return q.Filter.Match(attrs) }
	}
	if len(q.Text) > MaxQueryText {
		return p, fmt.Errorf("%w: the query text is over %d bytes", ErrInvalid, MaxQueryText)
	}
	if q.Text != "" {
		p.Terms = QueryTerms(q.Text)
	}
	p.N = q.K
	if len(p.Terms) > 0 {
		p.N = Candidates(q.K)
	}
	return p, nil
}

// IndexSearchError maps an error of vecindex.Index.Search to the storage
// errors callers test for (ErrNotFound, ErrDimension); nil stays nil.
func IndexSearchError(err error) error {
	switch {
	case errors.Is(err, vecindex.ErrNoStore):
		return fmt.Errorf("%v: %w", err, ErrNotFound)
	case errors.Is(err, vecindex.ErrDimension):
		return fmt.Errorf("%v: %w", err, ErrDimension)
	}
	return err
}
