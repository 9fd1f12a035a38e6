package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

const storeCols = `seq, id, coalesce(name, ''), embedding_model, dimensions, metadata, created_at, last_active_at`

func scanStore(row interface{ Scan(...any) error }) (storage.VectorStore, error) {
	var v storage.VectorStore
	var seq, created, active int64
	var meta string
	if err := row.Scan(&seq, &v.ID, &v.Name, &v.EmbeddingModel, &v.Dimensions, &meta, &created, &active); err != nil {
		return v, err
	}
	if err := json.Unmarshal([]byte(meta), &v.Metadata); err != nil {
		return v, fmt.Errorf("vector store %s: metadata: %w", v.ID, err)
	}
	v.CreatedAt, v.LastActiveAt = fromNanos(created), fromNanos(active)
	return v, nil
}

// complete fills the computed fields of v: counts, usage, search activity.
func (s *Store) complete(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, v *storage.VectorStore) error {
	rows, err := q.QueryContext(ctx, `SELECT status, count(*), coalesce(sum(usage_bytes), 0)::bigint FROM vector_store_files WHERE store_id = ? GROUP BY status`, v.ID)
	if err != nil {
		return fmt.Errorf("postgres: count files: %w", err)
	}
	defer rows.Close()
	v.FileCounts, v.UsageBytes = storage.FileCounts{}, 0
	for rows.Next() {
		var status string
		var n int
		var usage int64
		if err := rows.Scan(&status, &n, &usage); err != nil {
			return fmt.Errorf("postgres: count files: %w", err)
		}
		switch status {
		case storage.StatusInProgress:
			v.FileCounts.InProgress = n
		case storage.StatusCompleted:
			v.FileCounts.Completed = n
		case storage.StatusFailed:
			v.FileCounts.Failed = n
		case storage.StatusCancelled:
			v.FileCounts.Cancelled = n
		}
		v.FileCounts.Total += n
		v.UsageBytes += usage
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: count files: %w", err)
	}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	s.amu.Lock()
	if t, ok := s.active[v.ID]; ok && t.After(v.LastActiveAt) {
		v.LastActiveAt = t
	}
	s.amu.Unlock()
	return nil
}

func (s *Store) getStore(ctx context.Context, where string, arg any) (storage.VectorStore, error) {
	v, err := scanStore(s.r.QueryRowContext(ctx, `SELECT `+storeCols+` FROM vector_stores WHERE `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return v, fmt.Errorf("vector store %q: %w", arg, storage.ErrNotFound)
	}
	if err != nil {
		return v, fmt.Errorf("postgres: get vector store: %w", err)
	}
	return v, s.complete(ctx, s.r, &v)
}

func checkName(name string) error {
	if len(name) > storage.MaxNameBytes {
		return fmt.Errorf("%w: a vector store name is at most %d bytes", storage.ErrInvalid, storage.MaxNameBytes)
	}
	return nil
}

func nullName(name string) any {
	if name == "" {
		return nil
	}
	return name
}

func metadataJSON(m map[string]string) string {
	if m == nil {
		m = map[string]string{}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// CreateVectorStore implements storage.VectorStores.
func (s *Store) CreateVectorStore(ctx context.Context, nv storage.NewVectorStore) (storage.VectorStore, error) {
	if err := checkName(nv.Name); err != nil {
		return storage.VectorStore{}, err
	}
	if nv.EmbeddingModel == "" {
		return storage.VectorStore{}, fmt.Errorf("%w: a vector store needs an embedding model", storage.ErrInvalid)
	}
	if nv.Dimensions < 1 || nv.Dimensions > storage.MaxDimensions {
		return storage.VectorStore{}, fmt.Errorf("%w: dimensions must be between 1 and %d (got %d)", storage.ErrInvalid, storage.MaxDimensions, nv.Dimensions)
	}
	t := now()
	v := storage.VectorStore{
		ID:             newID("vs_"),
		Name:           nv.Name,
		Metadata:       map[string]string{},
		EmbeddingModel: nv.EmbeddingModel,
		Dimensions:     nv.Dimensions,
		CreatedAt:      t,
		LastActiveAt:   t,
	}
	for k, val := range nv.Metadata {
		v.Metadata[k] = val
	}
	err := s.tx(ctx, func(tx *pgTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO vector_stores (id, name, embedding_model, dimensions, metadata, created_at, last_active_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			v.ID, nullName(v.Name), v.EmbeddingModel, v.Dimensions, metadataJSON(v.Metadata), t.UnixNano(), t.UnixNano())
		if isUnique(err) {
			return fmt.Errorf("a vector store is named %q already: %w", v.Name, storage.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("postgres: create vector store: %w", err)
		}
		return logChange(ctx, tx, s.replica, changeStoreCreated, v.ID, "")
	}, func() { s.index.AddStore(v.ID, v.Dimensions) })
	return v, err
}

// GetVectorStore implements storage.VectorStores.
func (s *Store) GetVectorStore(ctx context.Context, id string) (storage.VectorStore, error) {
	if err := s.check(ctx); err != nil {
		return storage.VectorStore{}, err
	}
	return s.getStore(ctx, `id = ?`, id)
}

// FindVectorStore implements storage.VectorStores.
func (s *Store) FindVectorStore(ctx context.Context, idOrName string) (storage.VectorStore, error) {
	if err := s.check(ctx); err != nil {
		return storage.VectorStore{}, err
	}
	v, err := s.getStore(ctx, `id = ?`, idOrName)
	if errors.Is(err, storage.ErrNotFound) && idOrName != "" {
		v, err = s.getStore(ctx, `name = ?`, idOrName)
	}
	return v, err
}

// ListVectorStores implements storage.VectorStores.
func (s *Store) ListVectorStores(ctx context.Context, o storage.ListOptions) (storage.Page[storage.VectorStore], error) {
	if err := s.check(ctx); err != nil {
		return storage.Page[storage.VectorStore]{}, err
	}
	page, err := list(ctx, s.r, pageQuery[storage.VectorStore]{
		Select: `SELECT ` + storeCols + ` FROM vector_stores`,
		Cursor: `SELECT seq FROM vector_stores WHERE id = ?`,
		Scan:   func(r *sql.Rows) (storage.VectorStore, error) { return scanStore(r) },
	}, o)
	if err != nil {
		return page, err
	}
	for i := range page.Data {
		if err := s.complete(ctx, s.r, &page.Data[i]); err != nil {
			return page, err
		}
	}
	return page, nil
}

// UpdateVectorStore implements storage.VectorStores.
func (s *Store) UpdateVectorStore(ctx context.Context, id string, u storage.VectorStoreUpdate) (storage.VectorStore, error) {
	if u.Name != nil {
		if err := checkName(*u.Name); err != nil {
			return storage.VectorStore{}, err
		}
	}
	err := s.tx(ctx, func(tx *pgTx) error {
		sets := []string{"last_active_at = ?"}
		args := []any{now().UnixNano()}
		if u.Name != nil {
			sets = append(sets, "name = ?")
			args = append(args, nullName(*u.Name))
		}
		if u.Metadata != nil {
			sets = append(sets, "metadata = ?")
			args = append(args, metadataJSON(u.Metadata))
		}
		res, err := tx.ExecContext(ctx, `UPDATE vector_stores SET `+strings.Join(sets, ", ")+` WHERE id = ?`, append(args, id)...)
		if isUnique(err) {
			return fmt.Errorf("a vector store is named %q already: %w", *u.Name, storage.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("postgres: update vector store: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("vector store %q: %w", id, storage.ErrNotFound)
		}
		return nil
	}, nil)
	if err != nil {
		return storage.VectorStore{}, err
	}
	return s.getStore(ctx, `id = ?`, id)
}

// DeleteVectorStore implements storage.VectorStores.
func (s *Store) DeleteVectorStore(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *pgTx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM vector_stores WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("postgres: delete vector store: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("vector store %q: %w", id, storage.ErrNotFound)
		}
		return logChange(ctx, tx, s.replica, changeStoreDeleted, id, "")
	}, func() {
		s.index.DropStore(id)
		s.amu.Lock()
		delete(s.active, id)
		s.amu.Unlock()
	})
}

// ---- vector-store files

const vsfCols = `seq, file_id, store_id, status, last_error_code, last_error_message, attributes, max_tokens, overlap_tokens, usage_bytes, chunk_count, created_at`

func scanVSF(row interface{ Scan(...any) error }) (storage.VectorStoreFile, error) {
	var f storage.VectorStoreFile
	var seq, created int64
	var attrs string
	if err := row.Scan(&seq, &f.FileID, &f.VectorStoreID, &f.Status, &f.LastErrorCode, &f.LastErrorMessage, &attrs,
		&f.Chunking.MaxTokens, &f.Chunking.OverlapTokens, &f.UsageBytes, &f.Chunks, &created); err != nil {
		return f, err
	}
	a, err := storage.DecodeAttributes(attrs)
	if err != nil {
		return f, err
	}
	f.Attributes = a
	f.CreatedAt = fromNanos(created)
	return f, nil
}

// AttachFile implements storage.VectorStores.
func (s *Store) AttachFile(ctx context.Context, storeID, fileID string, attrs map[string]any, c storage.Chunking) (storage.VectorStoreFile, error) {
	raw, err := storage.CheckAttributes(attrs)
	if err != nil {
		return storage.VectorStoreFile{}, err
	}
	decoded, _ := storage.DecodeAttributes(raw)
	t := now()
	f := storage.VectorStoreFile{
		FileID:        fileID,
		VectorStoreID: storeID,
		Status:        storage.StatusInProgress,
		Attributes:    decoded,
		Chunking:      c,
		CreatedAt:     t,
	}
	err = s.tx(ctx, func(tx *pgTx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM vector_stores WHERE id = ?`, storeID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("vector store %q: %w", storeID, storage.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("postgres: attach file: %w", err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM files WHERE id = ?`, fileID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("file %q: %w", fileID, storage.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("postgres: attach file: %w", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO vector_store_files (store_id, file_id, status, attributes, max_tokens, overlap_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			storeID, fileID, storage.StatusInProgress, raw, c.MaxTokens, c.OverlapTokens, t.UnixNano())
		if isUnique(err) {
			return fmt.Errorf("file %q is attached to vector store %q already: %w", fileID, storeID, storage.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("postgres: attach file: %w", err)
		}
		return touch(ctx, tx, storeID, t)
	}, nil)
	return f, err
}

func touch(ctx context.Context, tx *pgTx, storeID string, t time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE vector_stores SET last_active_at = ? WHERE id = ?`, t.UnixNano(), storeID); err != nil {
		return fmt.Errorf("postgres: mark the vector store active: %w", err)
	}
	return nil
}

// GetVectorStoreFile implements storage.VectorStores.
func (s *Store) GetVectorStoreFile(ctx context.Context, storeID, fileID string) (storage.VectorStoreFile, error) {
	if err := s.check(ctx); err != nil {
		return storage.VectorStoreFile{}, err
	}
	f, err := scanVSF(s.r.QueryRowContext(ctx, `SELECT `+vsfCols+` FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, fileID))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("file %q in vector store %q: %w", fileID, storeID, storage.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("postgres: get vector store file: %w", err)
	}
	return f, nil
}

func validStatus(status string) bool {
	switch status {
	case storage.StatusInProgress, storage.StatusCompleted, storage.StatusFailed, storage.StatusCancelled:
		return true
	}
	return false
}

// ListVectorStoreFiles implements storage.VectorStores.
func (s *Store) ListVectorStoreFiles(ctx context.Context, storeID, status string, o storage.ListOptions) (storage.Page[storage.VectorStoreFile], error) {
	var page storage.Page[storage.VectorStoreFile]
	if err := s.check(ctx); err != nil {
		return page, err
	}
	if status != "" && !validStatus(status) {
		return page, fmt.Errorf("%w: status must be in_progress, completed, failed or cancelled (got %q)", storage.ErrInvalid, status)
	}
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1 FROM vector_stores WHERE id = ?`, storeID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return page, fmt.Errorf("vector store %q: %w", storeID, storage.ErrNotFound)
	} else if err != nil {
		return page, fmt.Errorf("postgres: list vector store files: %w", err)
	}
	p := pageQuery[storage.VectorStoreFile]{
		Select:     `SELECT ` + vsfCols + ` FROM vector_store_files`,
		Where:      `store_id = ?`,
		Args:       []any{storeID},
		Cursor:     `SELECT seq FROM vector_store_files WHERE file_id = ? AND store_id = ?`,
		CursorArgs: []any{storeID},
		Scan:       func(r *sql.Rows) (storage.VectorStoreFile, error) { return scanVSF(r) },
	}
	if status != "" {
		p.Where += ` AND status = ?`
		p.Args = append(p.Args, status)
	}
	return list(ctx, s.r, p, o)
}

// DetachFile implements storage.VectorStores.
func (s *Store) DetachFile(ctx context.Context, storeID, fileID string) error {
	return s.tx(ctx, func(tx *pgTx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, fileID)
		if err != nil {
			return fmt.Errorf("postgres: detach file: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("file %q in vector store %q: %w", fileID, storeID, storage.ErrNotFound)
		}
		if err := logChange(ctx, tx, s.replica, changeFileRemoved, storeID, fileID); err != nil {
			return err
		}
		return touch(ctx, tx, storeID, now())
	}, func() { s.index.RemoveFile(storeID, fileID) })
}

// inProgress checks that the attachment exists and is in progress.
func inProgress(ctx context.Context, tx *pgTx, storeID, fileID string) (attrs string, err error) {
	var status string
	err = tx.QueryRowContext(ctx, `SELECT status, attributes FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, fileID).Scan(&status, &attrs)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("file %q in vector store %q (detached meanwhile?): %w", fileID, storeID, storage.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("postgres: read the file's status: %w", err)
	}
	if status != storage.StatusInProgress {
		return "", fmt.Errorf("file %q in vector store %q is %s, not in_progress: %w", fileID, storeID, status, storage.ErrConflict)
	}
	return attrs, nil
}

// CompleteFile implements storage.VectorStores.
func (s *Store) CompleteFile(ctx context.Context, storeID, fileID string, chunks []storage.Chunk) error {
	var entries []vecindex.Chunk
	var attrs map[string]any
	return s.tx(ctx, func(tx *pgTx) error {
		var dim int
		if err := tx.QueryRowContext(ctx, `SELECT dimensions FROM vector_stores WHERE id = ?`, storeID).Scan(&dim); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("vector store %q: %w", storeID, storage.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("postgres: complete file: %w", err)
		}
		raw, err := inProgress(ctx, tx, storeID, fileID)
		if err != nil {
			return err
		}
		if attrs, err = storage.DecodeAttributes(raw); err != nil {
			return fmt.Errorf("postgres: complete file: %w", err)
		}
		seen := make(map[int]bool, len(chunks))
		for i := range chunks {
			c := &chunks[i]
			if len(c.Vector) != dim {
				return fmt.Errorf("chunk %d has %d dimensions, vector store %q has %d: %w", c.Index, len(c.Vector), storeID, dim, storage.ErrDimension)
			}
			if !storage.Finite(c.Vector) {
				return fmt.Errorf("%w: chunk %d has a NaN or infinite component", storage.ErrInvalid, c.Index)
			}
			if c.Index < 0 || seen[c.Index] {
				return fmt.Errorf("%w: chunk index %d is negative or repeated", storage.ErrInvalid, c.Index)
			}
			seen[c.Index] = true
		}
		// Two statements for the whole file (arrays unnested), not two
		// round trips per chunk.
		idxs := make([]int32, len(chunks))
		texts := make([]string, len(chunks))
		tokens := make([]int32, len(chunks))
		vectors := make([][]byte, len(chunks))
		var usage int64
		for i := range chunks {
			c := &chunks[i]
			idxs[i], texts[i], tokens[i] = int32(c.Index), c.Text, int32(c.Tokens)
			vectors[i] = storage.EncodeVector(nil, c.Vector)
			usage += int64(len(c.Text))
		}
		rows, err := tx.QueryContext(ctx, `INSERT INTO chunks (store_id, file_id, idx, text, tokens)
			SELECT ?, ?, u.idx, u.text, u.tokens FROM unnest(?::int[], ?::text[], ?::int[]) WITH ORDINALITY AS u(idx, text, tokens, n) ORDER BY u.n
			RETURNING id, idx`, storeID, fileID, idxs, texts, tokens)
		if err != nil {
			return fmt.Errorf("postgres: store chunks: %w", err)
		}
		rowOf := make(map[int]int64, len(chunks))
		for rows.Next() {
			var id int64
			var idx int
			if err := rows.Scan(&id, &idx); err != nil {
				rows.Close()
				return fmt.Errorf("postgres: store chunks: %w", err)
			}
			rowOf[idx] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("postgres: store chunks: %w", err)
		}
		ids := make([]int64, len(chunks))
		entries = make([]vecindex.Chunk, 0, len(chunks))
		for i := range chunks {
			ids[i] = rowOf[chunks[i].Index]
			entries = append(entries, vecindex.Chunk{Index: chunks[i].Index, Row: ids[i], Vector: chunks[i].Vector})
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO chunk_vectors (chunk_id, store_id, file_id, idx, vector)
			SELECT u.id, ?, ?, u.idx, u.vector FROM unnest(?::bigint[], ?::int[], ?::bytea[]) AS u(id, idx, vector)`,
			storeID, fileID, ids, idxs, vectors); err != nil {
			return fmt.Errorf("postgres: store chunk vectors: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET status = ?, usage_bytes = ?, chunk_count = ?, last_error_code = '', last_error_message = '' WHERE store_id = ? AND file_id = ?`,
			storage.StatusCompleted, usage, len(chunks), storeID, fileID); err != nil {
			return fmt.Errorf("postgres: complete file: %w", err)
		}
		if err := logChange(ctx, tx, s.replica, changeFileCompleted, storeID, fileID); err != nil {
			return err
		}
		return touch(ctx, tx, storeID, now())
	}, func() {
		if err := s.index.AddFile(storeID, fileID, attrs, entries); err != nil {
			// Cannot happen: the store exists (we hold the write lock) and
			// the dimensions were checked.
			s.log.Error("postgres: index update failed; restart to rebuild the index", "vector_store_id", storeID, "file_id", fileID, "error", err)
		}
	})
}

// FailFile implements storage.VectorStores.
func (s *Store) FailFile(ctx context.Context, storeID, fileID, code, message string) error {
	if len(message) > 4096 {
		message = message[:4096]
	}
	return s.tx(ctx, func(tx *pgTx) error {
		if _, err := inProgress(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE store_id = ? AND file_id = ?`, storeID, fileID); err != nil {
			return fmt.Errorf("postgres: fail file: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET status = ?, last_error_code = ?, last_error_message = ?, usage_bytes = 0, chunk_count = 0 WHERE store_id = ? AND file_id = ?`,
			storage.StatusFailed, code, message, storeID, fileID); err != nil {
			return fmt.Errorf("postgres: fail file: %w", err)
		}
		if err := logChange(ctx, tx, s.replica, changeFileRemoved, storeID, fileID); err != nil {
			return err
		}
		return touch(ctx, tx, storeID, now())
	}, func() { s.index.RemoveFile(storeID, fileID) })
}

// PendingFiles implements storage.VectorStores.
func (s *Store) PendingFiles(ctx context.Context) ([]storage.VectorStoreFile, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+vsfCols+` FROM vector_store_files WHERE status = ? ORDER BY seq`, storage.StatusInProgress)
	if err != nil {
		return nil, fmt.Errorf("postgres: pending files: %w", err)
	}
	defer rows.Close()
	var out []storage.VectorStoreFile
	for rows.Next() {
		f, err := scanVSF(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: pending files: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// ---- search

// Search implements storage.VectorStores.
func (s *Store) Search(ctx context.Context, q storage.Query) ([]storage.Hit, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := storage.CheckQuery(q); err != nil {
		return nil, err
	}
	for _, id := range q.StoreIDs {
		dim, ok := s.index.Dimension(id)
		if !ok {
			// Created on another replica and not yet followed: load it now.
			if err := s.applyStore(ctx, id); err != nil {
				return nil, err
			}
			dim, ok = s.index.Dimension(id)
		}
		if !ok {
			return nil, fmt.Errorf("vector store %q: %w", id, storage.ErrNotFound)
		}
		if dim != len(q.Vector) {
			return nil, fmt.Errorf("the query has %d dimensions, vector store %q has %d: %w", len(q.Vector), id, dim, storage.ErrDimension)
		}
	}
	plan, err := storage.PlanQuery(q)
	if err != nil {
		return nil, err
	}
	allow, terms, n := plan.Allow, plan.Terms, plan.N
	// The full-text candidates are read beside the vector scan.
	var lex []vecindex.Result
	var lexErr error
	lexDone := make(chan struct{})
	if len(terms) > 0 {
		go func() {
			defer close(lexDone)
			lex, lexErr = s.lexical(ctx, terms, q.Vector, q.StoreIDs, n, allow)
		}()
	} else {
		close(lexDone)
	}
	res, err := s.index.Search(q.Vector, n, q.StoreIDs, allow)
	<-lexDone
	if err != nil {
		return nil, storage.IndexSearchError(err)
	}
	if len(terms) > 0 {
		if lexErr != nil {
			return nil, lexErr
		}
		res = storage.FuseRRF(res, lex)
	}
	t := now()
	s.amu.Lock()
	for _, id := range q.StoreIDs {
		s.active[id] = t
	}
	s.amu.Unlock()
	res = storage.TrimResults(res, q.K, q.HasMinScore, q.MinScore)
	if len(res) == 0 {
		return []storage.Hit{}, nil
	}
	return s.hits(ctx, res)
}

// hits reads the texts and filenames of search results; a result whose
// chunk was deleted since the search is dropped.
func (s *Store) hits(ctx context.Context, res []vecindex.Result) ([]storage.Hit, error) {
	rowArgs := make([]any, len(res))
	marks := make([]string, len(res))
	for i, r := range res {
		rowArgs[i] = r.Row
		marks[i] = "?"
	}
	rows, err := s.r.QueryContext(ctx, `SELECT c.id, c.text, f.filename FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN (`+strings.Join(marks, ",")+`)`, rowArgs...)
	if err != nil {
		return nil, fmt.Errorf("postgres: read search hits: %w", err)
	}
	defer rows.Close()
	type text struct{ text, filename string }
	texts := make(map[int64]text, len(res))
	for rows.Next() {
		var id int64
		var t text
		if err := rows.Scan(&id, &t.text, &t.filename); err != nil {
			return nil, fmt.Errorf("postgres: read search hits: %w", err)
		}
		texts[id] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read search hits: %w", err)
	}
	hits := make([]storage.Hit, 0, len(res))
	for _, r := range res {
		t, ok := texts[r.Row]
		if !ok {
			continue
		}
		hits = append(hits, storage.NewHit(r, t.text, t.filename))
	}
	return hits, nil
}

// ScanChunks implements storage.VectorStores.
func (s *Store) ScanChunks(ctx context.Context, storeIDs []string, fn func(storage.Hit, []float32) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	for _, id := range storeIDs {
		if _, ok := s.index.Dimension(id); !ok {
			if err := s.applyStore(ctx, id); err != nil {
				return err
			}
		}
		if _, ok := s.index.Dimension(id); !ok {
			return fmt.Errorf("vector store %q: %w", id, storage.ErrNotFound)
		}
	}
	for _, id := range storeIDs {
		if err := s.scanStore(ctx, id, fn); err != nil {
			return err
		}
	}
	return nil
}

// scanBatch is how many chunks ScanChunks reads per query: it holds no
// read transaction (nor connection) while fn runs, so a slow consumer (a
// download streamed to a slow client) neither pins the WAL nor a reader.
const scanBatch = 256

func (s *Store) scanStore(ctx context.Context, storeID string, fn func(storage.Hit, []float32) error) error {
	type row struct {
		hit storage.Hit
		raw string
		vec []float32
	}
	var lastFile, lastRaw string
	var lastAttrs map[string]any
	afterFile, afterIdx := "", -1
	for {
		rows, err := s.r.QueryContext(ctx, `SELECT c.file_id, f.filename, v.attributes, c.idx, c.text, cv.vector
			FROM chunks c JOIN chunk_vectors cv ON cv.chunk_id = c.id JOIN files f ON f.id = c.file_id
			JOIN vector_store_files v ON v.store_id = c.store_id AND v.file_id = c.file_id
			WHERE c.store_id = ? AND (c.file_id, c.idx) > (?, ?) ORDER BY c.file_id, c.idx LIMIT ?`, storeID, afterFile, afterIdx, scanBatch)
		if err != nil {
			return fmt.Errorf("postgres: scan chunks: %w", err)
		}
		batch := make([]row, 0, scanBatch)
		for rows.Next() {
			var r row
			var blob []byte
			r.hit.VectorStoreID = storeID
			if err := rows.Scan(&r.hit.FileID, &r.hit.Filename, &r.raw, &r.hit.ChunkIndex, &r.hit.Text, &blob); err != nil {
				rows.Close()
				return fmt.Errorf("postgres: scan chunks: %w", err)
			}
			r.vec = storage.DecodeVector(blob)
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("postgres: scan chunks: %w", err)
		}
		for _, r := range batch {
			if r.hit.FileID != lastFile || r.raw != lastRaw {
				if lastAttrs, err = storage.DecodeAttributes(r.raw); err != nil {
					return fmt.Errorf("postgres: scan chunks: %w", err)
				}
				lastFile, lastRaw = r.hit.FileID, r.raw
			}
			r.hit.Attributes = make(map[string]any, len(lastAttrs))
			for k, v := range lastAttrs {
				r.hit.Attributes[k] = v
			}
			if err := fn(r.hit, r.vec); err != nil {
				return err
			}
		}
		if len(batch) < scanBatch {
			return nil
		}
		last := batch[len(batch)-1].hit
		afterFile, afterIdx = last.FileID, last.ChunkIndex
	}
}

// loadIndex reads every completed file's vectors into the index (storage.LoadIndex).
func (s *Store) loadIndex(ctx context.Context) error {
	return storage.LoadIndex(ctx, s.r, s.index, "postgres", "sum(chunk_count)::bigint")
}

// reloadFile reads one file's vectors into the index (storage.ReloadFile).
func (s *Store) reloadFile(ctx context.Context, storeID, fileID string, attrs map[string]any) error {
	return storage.ReloadFile(ctx, s.r, s.index, "postgres", storeID, fileID, attrs)
}
