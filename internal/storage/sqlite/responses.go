package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/junction-router/junction/internal/storage"
)

// The Responses API's response store (storage.Responses): one row per
// response (schema version 5), written durably like everything else here.

var _ storage.Responses = (*Store)(nil)

// PutResponse implements storage.Responses.
func (s *Store) PutResponse(ctx context.Context, r storage.StoredResponse) error {
	if r.ID == "" {
		return fmt.Errorf("sqlite: a stored response needs an id: %w", storage.ErrInvalid)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO responses (id, created_at, response, input, conversation) VALUES (?, ?, ?, ?, ?)`,
			r.ID, r.CreatedAt.Unix(), nonNil(r.Response), nonNil(r.Input), nonNil(r.Conversation))
		if err != nil {
			return fmt.Errorf("sqlite: store response: %w", err)
		}
		return nil
	}, nil)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// GetResponse implements storage.Responses.
func (s *Store) GetResponse(ctx context.Context, id string) (storage.StoredResponse, error) {
	if err := s.check(ctx); err != nil {
		return storage.StoredResponse{}, err
	}
	r := storage.StoredResponse{ID: id}
	var created int64
	err := s.r.QueryRowContext(ctx, `SELECT created_at, response, input, conversation FROM responses WHERE id = ?`, id).
		Scan(&created, &r.Response, &r.Input, &r.Conversation)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("response %q: %w", id, storage.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("sqlite: get response: %w", err)
	}
	r.CreatedAt = time.Unix(created, 0)
	return r, nil
}

// DeleteResponse implements storage.Responses.
func (s *Store) DeleteResponse(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM responses WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete response: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("response %q: %w", id, storage.ErrNotFound)
		}
		return nil
	}, nil)
}
