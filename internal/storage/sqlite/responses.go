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
// A response is forgotten Options.ResponseTTL after it was stored (not
// found from then on, removed at Open and every pruneEvery puts), and at
// most Options.MaxResponses are kept, the oldest removed first.

var _ storage.Responses = (*Store)(nil)

// DefaultMaxResponses is Options.MaxResponses's default.
const DefaultMaxResponses = 100000

const (
	// pruneEvery is how many puts pass between removals of the expired
	// responses (Open removes them too).
	pruneEvery = 256
	// pruneBatch is the most rows one removal transaction deletes, so a
	// large prune never holds the writer long.
	pruneBatch = 500
)

// responseState is the stored responses' bounds and count; count and puts
// change only under the write mutex.
type responseState struct {
	ttl   time.Duration
	max   int
	now   func() time.Time
	count int // rows in responses
	puts  int // since the last prune
}

// openResponses sets the bounds from o, removes the expired responses and
// those past the count bound, and counts the rest.
func (s *Store) openResponses(ctx context.Context, o Options) error {
	s.resp = responseState{ttl: o.ResponseTTL, max: o.MaxResponses, now: o.Now}
	if s.resp.ttl <= 0 {
		s.resp.ttl = storage.DefaultResponseTTL
	}
	if s.resp.max <= 0 {
		s.resp.max = DefaultMaxResponses
	}
	if s.resp.now == nil {
		s.resp.now = time.Now
	}
	var n int
	if err := s.w.QueryRowContext(ctx, `SELECT count(*) FROM responses`).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: count stored responses: %w", err)
	}
	s.wmu.Lock()
	s.resp.count = n
	s.wmu.Unlock()
	return s.pruneResponses(ctx)
}

// keepFrom is the oldest created_at (Unix seconds) not yet expired: a
// response is expired when it was stored before now - TTL.
func (s *Store) keepFrom() int64 {
	cutoff := s.resp.now().Add(-s.resp.ttl)
	c := cutoff.Unix()
	if cutoff.Nanosecond() > 0 {
		c++
	}
	return c
}

// pruneResponses removes the expired responses and those past the count
// bound, oldest first, in transactions of at most pruneBatch rows.
func (s *Store) pruneResponses(ctx context.Context) error {
	for {
		var n int64
		err := s.tx(ctx, func(tx *sql.Tx) error {
			limit := int64(pruneBatch)
			where := `WHERE created_at < ?`
			args := []any{s.keepFrom()}
			if over := int64(s.resp.count - s.resp.max); over > 0 {
				where, args = ``, nil
				limit = min(limit, over)
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM responses WHERE id IN (SELECT id FROM responses `+where+` ORDER BY created_at, rowid LIMIT ?)`, append(args, limit)...)
			if err != nil {
				return fmt.Errorf("sqlite: remove expired responses: %w", err)
			}
			n, _ = res.RowsAffected()
			return nil
		}, func() {
			s.resp.count -= int(n)
			s.resp.puts = 0
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// PutResponse implements storage.Responses. Past MaxResponses the oldest
// responses are removed in the same transaction.
func (s *Store) PutResponse(ctx context.Context, r storage.StoredResponse) error {
	if r.ID == "" {
		return fmt.Errorf("sqlite: a stored response needs an id: %w", storage.ErrInvalid)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.resp.now()
	}
	var count int
	prune := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM responses WHERE id = ?`, r.ID).Scan(&one)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			count = s.resp.count + 1
		case err != nil:
			return fmt.Errorf("sqlite: store response: %w", err)
		default:
			count = s.resp.count
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO responses (id, created_at, response, input, conversation) VALUES (?, ?, ?, ?, ?)`,
			r.ID, r.CreatedAt.Unix(), nonNil(r.Response), nonNil(r.Input), nonNil(r.Conversation))
		if err != nil {
			return fmt.Errorf("sqlite: store response: %w", err)
		}
		if over := count - s.resp.max; over > 0 {
			res, err := tx.ExecContext(ctx, `DELETE FROM responses WHERE id IN (SELECT id FROM responses WHERE id != ? ORDER BY created_at, rowid LIMIT ?)`, r.ID, min(over, pruneBatch))
			if err != nil {
				return fmt.Errorf("sqlite: remove the oldest responses: %w", err)
			}
			n, _ := res.RowsAffected()
			count -= int(n)
		}
		return nil
	}, func() {
		s.resp.count = count
		s.resp.puts++
		prune = s.resp.puts >= pruneEvery || s.resp.count > s.resp.max
	})
	if err != nil {
		return err
	}
	if prune {
		// The response is durable; a failed prune is retried later.
		if err := s.pruneResponses(ctx); err != nil {
			s.log.Warn("sqlite: removing expired responses failed; retried later", "err", err)
		}
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// GetResponse implements storage.Responses; an expired response is not
// found.
func (s *Store) GetResponse(ctx context.Context, id string) (storage.StoredResponse, error) {
	if err := s.check(ctx); err != nil {
		return storage.StoredResponse{}, err
	}
	r := storage.StoredResponse{ID: id}
	var created int64
	err := s.r.QueryRowContext(ctx, `SELECT created_at, response, input, conversation FROM responses WHERE id = ? AND created_at >= ?`, id, s.keepFrom()).
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

// DeleteResponse implements storage.Responses; an expired response is
// removed all the same and not found, like one that is gone.
func (s *Store) DeleteResponse(ctx context.Context, id string) error {
	var created int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `DELETE FROM responses WHERE id = ? RETURNING created_at`, id).Scan(&created)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("response %q: %w", id, storage.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: delete response: %w", err)
		}
		return nil
	}, func() { s.resp.count-- })
	if err == nil && created < s.keepFrom() {
		return fmt.Errorf("response %q: %w", id, storage.ErrNotFound)
	}
	return err
}
