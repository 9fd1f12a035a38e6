package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Paging bounds of every list: the limit when none is asked, and the most.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// Querier is what List reads through: a *sql.DB, or a backend's wrapper of
// one that rewrites the ? placeholders List writes into its own dialect.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// PageQuery describes one list for List: the columns and table (Select), a
// where clause with args, how a cursor id becomes a seq (Cursor), and a row
// scanner. The table must have an integer seq column in creation order.
type PageQuery[T any] struct {
	Select     string // "SELECT <cols> FROM <table>"
	Where      string // "" or a condition
	Args       []any
	Cursor     string // SQL taking the cursor id (then CursorArgs) returning its seq
	CursorArgs []any
	Scan       func(*sql.Rows) (T, error)
}

// List reads one page of p as o asks (limit, order, after/before cursors),
// the way every SQL backend pages; backend names the backend in errors.
func List[T any](ctx context.Context, db Querier, backend string, p PageQuery[T], o ListOptions) (Page[T], error) {
	var page Page[T]
	limit := o.Limit
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 1 || limit > MaxListLimit:
		return page, fmt.Errorf("%w: limit must be between 1 and %d (got %d)", ErrInvalid, MaxListLimit, o.Limit)
	}
	desc := true
	switch o.Order {
	case "", "desc":
	case "asc":
		desc = false
	default:
		return page, fmt.Errorf("%w: order must be asc or desc (got %q)", ErrInvalid, o.Order)
	}
	conds := []string{}
	args := []any{}
	if p.Where != "" {
		conds = append(conds, p.Where)
		args = append(args, p.Args...)
	}
	seqOf := func(name, id string) (int64, error) {
		var seq int64
		err := db.QueryRowContext(ctx, p.Cursor, append([]any{id}, p.CursorArgs...)...).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("%w: %s %q is not an id of this list", ErrInvalid, name, id)
		}
		return seq, err
	}
	// In list order, "after" means later in the list, "before" earlier.
	later, earlier := ">", "<"
	if desc {
		later, earlier = "<", ">"
	}
	if o.After != "" {
		seq, err := seqOf("after", o.After)
		if err != nil {
			return page, err
		}
		conds = append(conds, "seq "+later+" ?")
		args = append(args, seq)
	}
	if o.Before != "" {
		seq, err := seqOf("before", o.Before)
		if err != nil {
			return page, err
		}
		conds = append(conds, "seq "+earlier+" ?")
		args = append(args, seq)
	}
	// With only a before cursor, the page is the limit items just before
	// it: walk backwards and reverse.
	backwards := o.Before != "" && o.After == ""
	asc := !desc
	if backwards {
		asc = !asc
	}
	q := p.Select
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	if asc {
		q += " ORDER BY seq ASC"
	} else {
		q += " ORDER BY seq DESC"
	}
	q += fmt.Sprintf(" LIMIT %d", limit+1)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return page, fmt.Errorf("%s: list: %w", backend, err)
	}
	defer rows.Close()
	for rows.Next() {
		v, err := p.Scan(rows)
		if err != nil {
			return page, fmt.Errorf("%s: list: %w", backend, err)
		}
		page.Data = append(page.Data, v)
	}
	if err := rows.Err(); err != nil {
		return page, fmt.Errorf("%s: list: %w", backend, err)
	}
	if len(page.Data) > limit {
		page.Data = page.Data[:limit]
		page.HasMore = true
	}
	if backwards {
		for i, j := 0, len(page.Data)-1; i < j; i, j = i+1, j-1 {
			page.Data[i], page.Data[j] = page.Data[j], page.Data[i]
		}
	}
	if page.Data == nil {
		page.Data = []T{}
	}
	return page, nil
}
