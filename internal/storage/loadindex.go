package storage

import (
	"context"
	"fmt"

	"github.com/junction-router/junction/internal/storage/vecindex"
)

// LoadIndex reads every completed file's vectors into ix, in id
// order (a sequential scan of chunk_vectors; a file's chunks are
// consecutive).
//
// It is the start-up load of both SQL backends: name prefixes its errors (the backend's name), and chunkSum is the
// SQL expression that sums a store's chunk counts to an integer (the dialects type sum() differently).
func LoadIndex(ctx context.Context, q Querier, ix *vecindex.Index, name, chunkSum string) error {
	rows, err := q.QueryContext(ctx, `SELECT id, dimensions FROM vector_stores`)
	if err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	for rows.Next() {
		var id string
		var dim int
		if err := rows.Scan(&id, &dim); err != nil {
			rows.Close()
			return fmt.Errorf("%s: load the index: %w", name, err)
		}
		ix.AddStore(id, dim)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	rows, err = q.QueryContext(ctx, `SELECT store_id, `+chunkSum+` FROM vector_store_files WHERE status = ? GROUP BY store_id`, StatusCompleted)
	if err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return fmt.Errorf("%s: load the index: %w", name, err)
		}
		ix.Reserve(id, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	type key struct{ store, file string }
	attrs := map[key]map[string]any{}
	rows, err = q.QueryContext(ctx, `SELECT store_id, file_id, attributes FROM vector_store_files WHERE status = ?`, StatusCompleted)
	if err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	for rows.Next() {
		var k key
		var raw string
		if err := rows.Scan(&k.store, &k.file, &raw); err != nil {
			rows.Close()
			return fmt.Errorf("%s: load the index: %w", name, err)
		}
		a, err := DecodeAttributes(raw)
		if err != nil {
			rows.Close()
			return fmt.Errorf("%s: load the index: %w", name, err)
		}
		attrs[k] = a
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}

	rows, err = q.QueryContext(ctx, `SELECT chunk_id, store_id, file_id, idx, vector FROM chunk_vectors ORDER BY chunk_id`)
	if err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	defer rows.Close()
	var cur key
	var batch []vecindex.Chunk
	var arena []float32 // the current file's vectors, decoded in one block
	done := map[key]bool{}
	var split []key // files whose chunks were not consecutive (not expected)
	flush := func() error {
		if cur.file == "" || len(batch) == 0 {
			return nil
		}
		a, ok := attrs[cur]
		if !ok {
			return nil // a chunk of a file not completed: not searchable
		}
		if done[cur] {
			split = append(split, cur)
			return nil
		}
		done[cur] = true
		return ix.AddFile(cur.store, cur.file, a, batch)
	}
	for rows.Next() {
		var c vecindex.Chunk
		var k key
		var blob []byte
		if err := rows.Scan(&c.Row, &k.store, &k.file, &c.Index, &blob); err != nil {
			return fmt.Errorf("%s: load the index: %w", name, err)
		}
		if k != cur {
			if err := flush(); err != nil {
				return fmt.Errorf("%s: load the index: %w", name, err)
			}
			cur, batch, arena = k, batch[:0], arena[:0]
		}
		off := len(arena)
		arena = AppendVector(arena, blob)
		c.Vector = arena[off:len(arena):len(arena)]
		batch = append(batch, c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	rows.Close()
	for _, k := range split {
		if err := ReloadFile(ctx, q, ix, name, k.store, k.file, attrs[k]); err != nil {
			return err
		}
	}
	return nil
}

// ReloadFile reads one file's vectors into ix (replacing what ix holds of the file); name prefixes its errors.
func ReloadFile(ctx context.Context, q Querier, ix *vecindex.Index, name, storeID, fileID string, attrs map[string]any) error {
	rows, err := q.QueryContext(ctx, `SELECT chunk_id, idx, vector FROM chunk_vectors WHERE store_id = ? AND file_id = ? ORDER BY chunk_id`, storeID, fileID)
	if err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	defer rows.Close()
	var batch []vecindex.Chunk
	for rows.Next() {
		var c vecindex.Chunk
		var blob []byte
		if err := rows.Scan(&c.Row, &c.Index, &blob); err != nil {
			return fmt.Errorf("%s: load the index: %w", name, err)
		}
		c.Vector = DecodeVector(blob)
		batch = append(batch, c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: load the index: %w", name, err)
	}
	return ix.AddFile(storeID, fileID, attrs, batch)
}
