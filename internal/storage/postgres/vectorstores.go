package postgres

import (
	"context"
	"fmt"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

// The vector stores are storage.SQLCore's; what is PostgreSQL's is how a
// file's chunks go in (driver.InsertChunks) and the index load.

// insertChunks stores a completed file's chunks in two statements for the
// whole file (arrays unnested), not two round trips per chunk, and returns
// their index entries.
func insertChunks(ctx context.Context, tx *pgTx, storeID, fileID string, chunks []storage.Chunk) ([]vecindex.Chunk, error) {
	idxs := make([]int32, len(chunks))
	texts := make([]string, len(chunks))
	tokens := make([]int32, len(chunks))
	vectors := make([][]byte, len(chunks))
	for i := range chunks {
		c := &chunks[i]
		idxs[i], texts[i], tokens[i] = int32(c.Index), c.Text, int32(c.Tokens)
		vectors[i] = storage.EncodeVector(nil, c.Vector)
	}
	rows, err := tx.QueryContext(ctx, `INSERT INTO chunks (store_id, file_id, idx, text, tokens)
		SELECT ?, ?, u.idx, u.text, u.tokens FROM unnest(?::int[], ?::text[], ?::int[]) WITH ORDINALITY AS u(idx, text, tokens, n) ORDER BY u.n
		RETURNING id, idx`, storeID, fileID, idxs, texts, tokens)
	if err != nil {
		return nil, fmt.Errorf("postgres: store chunks: %w", err)
	}
	rowOf := make(map[int]int64, len(chunks))
	for rows.Next() {
		var id int64
		var idx int
		if err := rows.Scan(&id, &idx); err != nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: store chunks: %w", err)
		}
		rowOf[idx] = id
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: store chunks: %w", err)
	}
	ids := make([]int64, len(chunks))
	entries := make([]vecindex.Chunk, 0, len(chunks))
	for i := range chunks {
		ids[i] = rowOf[chunks[i].Index]
		entries = append(entries, vecindex.Chunk{Index: chunks[i].Index, Row: ids[i], Vector: chunks[i].Vector})
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO chunk_vectors (chunk_id, store_id, file_id, idx, vector)
		SELECT u.id, ?, ?, u.idx, u.vector FROM unnest(?::bigint[], ?::int[], ?::bytea[]) AS u(id, idx, vector)`,
		storeID, fileID, ids, idxs, vectors); err != nil {
		return nil, fmt.Errorf("postgres: store chunk vectors: %w", err)
	}
	return entries, nil
}

// loadIndex reads every completed file's vectors into the index (storage.LoadIndex).
func (s *Store) loadIndex(ctx context.Context) error {
	return storage.LoadIndex(ctx, s.r, s.index, "postgres", "sum(chunk_count)::bigint")
}

// reloadFile reads one file's vectors into the index (storage.ReloadFile).
func (s *Store) reloadFile(ctx context.Context, storeID, fileID string, attrs map[string]any) error {
	return storage.ReloadFile(ctx, s.r, s.index, "postgres", storeID, fileID, attrs)
}
