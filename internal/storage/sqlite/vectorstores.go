package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

// The vector stores are storage.SQLCore's; what is SQLite's is how a file's
// chunks go in (driver.InsertChunks) and the index load.

// insertChunks stores a completed file's chunks (dim components each), one
// prepared insert per table and chunk, and returns their index entries.
func insertChunks(ctx context.Context, tx *sql.Tx, storeID, fileID string, dim int, chunks []storage.Chunk) ([]vecindex.Chunk, error) {
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO chunks (store_id, file_id, idx, text, tokens) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: complete file: %w", err)
	}
	defer stmt.Close()
	vstmt, err := tx.PrepareContext(ctx, `INSERT INTO chunk_vectors (chunk_id, store_id, file_id, idx, vector) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: complete file: %w", err)
	}
	defer vstmt.Close()
	entries := make([]vecindex.Chunk, 0, len(chunks))
	buf := make([]byte, 4*dim)
	for i := range chunks {
		c := &chunks[i]
		res, err := stmt.ExecContext(ctx, storeID, fileID, c.Index, c.Text, c.Tokens)
		if err != nil {
			return nil, fmt.Errorf("sqlite: store chunk %d: %w", c.Index, err)
		}
		row, err := res.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("sqlite: store chunk %d: %w", c.Index, err)
		}
		if _, err := vstmt.ExecContext(ctx, row, storeID, fileID, c.Index, storage.EncodeVector(buf, c.Vector)); err != nil {
			return nil, fmt.Errorf("sqlite: store chunk %d: %w", c.Index, err)
		}
		entries = append(entries, vecindex.Chunk{Index: c.Index, Row: row, Vector: c.Vector})
	}
	return entries, nil
}

// loadIndex reads every completed file's vectors into the index (storage.LoadIndex).
func (s *Store) loadIndex(ctx context.Context) error {
	return storage.LoadIndex(ctx, s.r, s.index, "sqlite", "sum(chunk_count)")
}
