package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

const memCols = `seq, id, scope, text, embedding_model, vector, created_at`

func scanMemory(row interface{ Scan(...any) error }) (storage.Memory, error) {
	var m storage.Memory
	var seq, created int64
	var blob []byte
	if err := row.Scan(&seq, &m.ID, &m.Scope, &m.Text, &m.EmbeddingModel, &blob, &created); err != nil {
		return m, err
	}
	m.Vector = storage.DecodeVector(blob)
	m.CreatedAt = fromNanos(created)
	return m, nil
}

// Remember implements storage.Memories.
func (s *Store) Remember(ctx context.Context, m storage.Memory) (storage.Memory, bool, error) {
	if err := storage.CheckMemory(m); err != nil {
		return storage.Memory{}, false, err
	}
	kept := storage.Memory{
		ID:             newID("mem_"),
		Scope:          m.Scope,
		Text:           strings.TrimSpace(m.Text),
		CreatedAt:      now(),
		EmbeddingModel: m.EmbeddingModel,
		Vector:         append([]float32(nil), m.Vector...),
	}
	created := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO memories (id, scope, text, text_hash, embedding_model, dimensions, vector, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (scope, text_hash) DO NOTHING`,
			kept.ID, kept.Scope, kept.Text, storage.MemoryHash(kept.Text), kept.EmbeddingModel, len(kept.Vector), storage.EncodeVector(nil, kept.Vector), kept.CreatedAt.UnixNano())
		if err != nil {
			return fmt.Errorf("sqlite: remember: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			created = true
			return nil
		}
		kept, err = scanMemory(tx.QueryRowContext(ctx, `SELECT `+memCols+` FROM memories WHERE scope = ? AND text_hash = ?`, kept.Scope, storage.MemoryHash(kept.Text)))
		if err != nil {
			return fmt.Errorf("sqlite: remember: %w", err)
		}
		return nil
	}, nil)
	if err != nil {
		return storage.Memory{}, false, err
	}
	return kept, created, nil
}

// Recall implements storage.Memories: an exact cosine scan over the scope's
// memories made with the same model and dimension.
func (s *Store) Recall(ctx context.Context, scope, model string, vector []float32, k int, minScore float32) ([]storage.MemoryHit, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := storage.CheckRecall(vector, k); err != nil {
		return nil, err
	}
	q := append([]float32(nil), vector...)
	vecindex.Normalize(q)
	rows, err := s.r.QueryContext(ctx, `SELECT `+memCols+` FROM memories WHERE scope = ? AND embedding_model = ? AND dimensions = ?`, scope, model, len(vector))
	if err != nil {
		return nil, fmt.Errorf("sqlite: recall: %w", err)
	}
	defer rows.Close()
	var hits []storage.MemoryHit
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: recall: %w", err)
		}
		v := append([]float32(nil), m.Vector...)
		vecindex.Normalize(v)
		score := vecindex.Dot(q, v)
		if score < minScore {
			continue
		}
		hits = append(hits, storage.MemoryHit{Memory: m, Score: score})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: recall: %w", err)
	}
	return storage.RankMemoryHits(hits, k), nil
}

// ListMemories implements storage.Memories.
func (s *Store) ListMemories(ctx context.Context, scope string, o storage.ListOptions) (storage.Page[storage.Memory], error) {
	if err := s.check(ctx); err != nil {
		return storage.Page[storage.Memory]{}, err
	}
	p := pageQuery[storage.Memory]{
		Select: `SELECT ` + memCols + ` FROM memories`,
		Cursor: `SELECT seq FROM memories WHERE id = ?`,
		Scan:   func(r *sql.Rows) (storage.Memory, error) { return scanMemory(r) },
	}
	if scope != "" {
		p.Where, p.Args = `scope = ?`, []any{scope}
	}
	return list(ctx, s.r, p, o)
}

// GetMemory implements storage.Memories.
func (s *Store) GetMemory(ctx context.Context, id string) (storage.Memory, error) {
	if err := s.check(ctx); err != nil {
		return storage.Memory{}, err
	}
	m, err := scanMemory(s.r.QueryRowContext(ctx, `SELECT `+memCols+` FROM memories WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("memory %q: %w", id, storage.ErrNotFound)
	}
	if err != nil {
		return m, fmt.Errorf("sqlite: get memory: %w", err)
	}
	return m, nil
}

// DeleteMemory implements storage.Memories.
func (s *Store) DeleteMemory(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete memory: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("memory %q: %w", id, storage.ErrNotFound)
		}
		return nil
	}, nil)
}

// DeleteScope implements storage.Memories.
func (s *Store) DeleteScope(ctx context.Context, scope string) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE scope = ?`, scope)
		if err != nil {
			return fmt.Errorf("sqlite: delete scope: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	}, nil)
	return int(n), err
}
