package postgres

import (
	"context"

	"github.com/junction-router/junction/internal/storage"
)

// The replay methods are storage's shared SQL (storage/replays.go), run
// in this backend's transactions and reads.

// PutReplays implements storage.Replays.
func (s *Store) PutReplays(ctx context.Context, rs []storage.Replay, bounds map[string]storage.ReplayBounds) error {
	if len(rs) == 0 {
		return s.check(ctx)
	}
	return s.tx(ctx, func(tx *pgTx) error { return storage.InsertReplays(ctx, tx, "postgres", rs, bounds, now()) }, nil)
}

// GetReplay implements storage.Replays.
func (s *Store) GetReplay(ctx context.Context, id string) (storage.Replay, error) {
	if err := s.check(ctx); err != nil {
		return storage.Replay{}, err
	}
	return storage.GetReplayFrom(ctx, s.r, "postgres", id)
}

// ListReplays implements storage.Replays.
func (s *Store) ListReplays(ctx context.Context, q storage.ReplayQuery, o storage.ListOptions) (storage.Page[storage.Replay], error) {
	if err := s.check(ctx); err != nil {
		return storage.Page[storage.Replay]{}, err
	}
	return storage.ListReplaysFrom(ctx, s.r, "postgres", q, o)
}

// ScanReplays implements storage.Replays.
func (s *Store) ScanReplays(ctx context.Context, q storage.ReplayQuery, max int, fn func(storage.Replay) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return storage.ScanReplaysFrom(ctx, s.r, "postgres", q, max, fn)
}

// UpdateReplay implements storage.Replays.
func (s *Store) UpdateReplay(ctx context.Context, id string, record []byte) error {
	return s.tx(ctx, func(tx *pgTx) error { return storage.UpdateReplayIn(ctx, tx, "postgres", id, record) }, nil)
}

// AddOutcome implements storage.Replays. Two submissions with the same
// idempotency key racing each other (two replicas, say) both find none and
// insert; the unique index refuses the second, which is then answered as
// the retry it is.
func (s *Store) AddOutcome(ctx context.Context, o storage.Outcome) (storage.Outcome, bool, error) {
	var kept storage.Outcome
	var created bool
	add := func() error {
		return s.tx(ctx, func(tx *pgTx) error {
			var err error
			kept, created, err = storage.AddOutcomeIn(ctx, tx, "postgres", o, now())
			return err
		}, nil)
	}
	err := add()
	if err != nil && o.IdempotencyKey != "" && isUnique(err) {
		err = add()
	}
	return kept, created, err
}

// TallyOutcomes implements storage.Replays.
func (s *Store) TallyOutcomes(ctx context.Context, target string, correct []string) ([]storage.OutcomeTally, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return storage.TallyOutcomesFrom(ctx, s.r, "postgres", target, correct)
}
