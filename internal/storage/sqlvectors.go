package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/storage/vecindex"
)

// SQLCore's VectorStores: the stores, their files and chunks in the tables,
// searched through the in-memory index (sqlcore.go).

const storeCols = `seq, id, coalesce(name, ''), embedding_model, dimensions, metadata, created_at, last_active_at`

func scanStore(row interface{ Scan(...any) error }) (VectorStore, error) {
	var v VectorStore
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
func (c *SQLCore[T]) complete(ctx context.Context, q Querier, v *VectorStore) error {
	rows, err := q.QueryContext(ctx, `SELECT status, count(*), CAST(coalesce(sum(usage_bytes), 0) AS BIGINT) FROM vector_store_files WHERE store_id = ? GROUP BY status`, v.ID)
	if err != nil {
		return fmt.Errorf("%s: count files: %w", c.name, err)
	}
	defer rows.Close()
	v.FileCounts, v.UsageBytes = FileCounts{}, 0
	for rows.Next() {
		var status string
		var n int
		var usage int64
		if err := rows.Scan(&status, &n, &usage); err != nil {
			return fmt.Errorf("%s: count files: %w", c.name, err)
		}
		switch status {
		case StatusInProgress:
			v.FileCounts.InProgress = n
		case StatusCompleted:
			v.FileCounts.Completed = n
		case StatusFailed:
			v.FileCounts.Failed = n
		case StatusCancelled:
			v.FileCounts.Cancelled = n
		}
		v.FileCounts.Total += n
		v.UsageBytes += usage
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: count files: %w", c.name, err)
	}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	c.amu.Lock()
	if t, ok := c.active[v.ID]; ok && t.After(v.LastActiveAt) {
		v.LastActiveAt = t
	}
	c.amu.Unlock()
	return nil
}

func (c *SQLCore[T]) getStore(ctx context.Context, where string, arg any) (VectorStore, error) {
	v, err := scanStore(c.r.QueryRowContext(ctx, `SELECT `+storeCols+` FROM vector_stores WHERE `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return v, fmt.Errorf("vector store %q: %w", arg, ErrNotFound)
	}
	if err != nil {
		return v, fmt.Errorf("%s: get vector store: %w", c.name, err)
	}
	return v, c.complete(ctx, c.r, &v)
}

func checkStoreName(name string) error {
	if len(name) > MaxNameBytes {
		return fmt.Errorf("%w: a vector store name is at most %d bytes", ErrInvalid, MaxNameBytes)
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

// CreateVectorStore implements VectorStores.
func (c *SQLCore[T]) CreateVectorStore(ctx context.Context, nv NewVectorStore) (VectorStore, error) {
	if err := checkStoreName(nv.Name); err != nil {
		return VectorStore{}, err
	}
	if nv.EmbeddingModel == "" {
		return VectorStore{}, fmt.Errorf("%w: a vector store needs an embedding model", ErrInvalid)
	}
	if nv.Dimensions < 1 || nv.Dimensions > MaxDimensions {
		return VectorStore{}, fmt.Errorf("%w: dimensions must be between 1 and %d (got %d)", ErrInvalid, MaxDimensions, nv.Dimensions)
	}
	t := now()
	v := VectorStore{
		ID:             NewID("vs_"),
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
	err := c.d.Write(ctx, func(tx T) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO vector_stores (id, name, embedding_model, dimensions, metadata, created_at, last_active_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			v.ID, nullName(v.Name), v.EmbeddingModel, v.Dimensions, metadataJSON(v.Metadata), t.UnixNano(), t.UnixNano())
		if c.d.IsUnique(err) {
			return fmt.Errorf("a vector store is named %q already: %w", v.Name, ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("%s: create vector store: %w", c.name, err)
		}
		return c.d.Changed(ctx, tx, ChangeStoreCreated, v.ID, "")
	}, func() { c.index.AddStore(v.ID, v.Dimensions) })
	return v, err
}

// GetVectorStore implements VectorStores.
func (c *SQLCore[T]) GetVectorStore(ctx context.Context, id string) (VectorStore, error) {
	if err := c.d.Check(ctx); err != nil {
		return VectorStore{}, err
	}
	return c.getStore(ctx, `id = ?`, id)
}

// FindVectorStore implements VectorStores.
func (c *SQLCore[T]) FindVectorStore(ctx context.Context, idOrName string) (VectorStore, error) {
	if err := c.d.Check(ctx); err != nil {
		return VectorStore{}, err
	}
	v, err := c.getStore(ctx, `id = ?`, idOrName)
	if errors.Is(err, ErrNotFound) && idOrName != "" {
		v, err = c.getStore(ctx, `name = ?`, idOrName)
	}
	return v, err
}

// ListVectorStores implements VectorStores.
func (c *SQLCore[T]) ListVectorStores(ctx context.Context, o ListOptions) (Page[VectorStore], error) {
	if err := c.d.Check(ctx); err != nil {
		return Page[VectorStore]{}, err
	}
	page, err := List(ctx, c.r, c.name, PageQuery[VectorStore]{
		Select: `SELECT ` + storeCols + ` FROM vector_stores`,
		Cursor: `SELECT seq FROM vector_stores WHERE id = ?`,
		Scan:   func(r *sql.Rows) (VectorStore, error) { return scanStore(r) },
	}, o)
	if err != nil {
		return page, err
	}
	for i := range page.Data {
		if err := c.complete(ctx, c.r, &page.Data[i]); err != nil {
			return page, err
		}
	}
	return page, nil
}

// UpdateVectorStore implements VectorStores.
func (c *SQLCore[T]) UpdateVectorStore(ctx context.Context, id string, u VectorStoreUpdate) (VectorStore, error) {
	if u.Name != nil {
		if err := checkStoreName(*u.Name); err != nil {
			return VectorStore{}, err
		}
	}
	err := c.d.Write(ctx, func(tx T) error {
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
		if c.d.IsUnique(err) {
			return fmt.Errorf("a vector store is named %q already: %w", *u.Name, ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("%s: update vector store: %w", c.name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("vector store %q: %w", id, ErrNotFound)
		}
		return nil
	}, nil)
	if err != nil {
		return VectorStore{}, err
	}
	return c.getStore(ctx, `id = ?`, id)
}

// DeleteVectorStore implements VectorStores.
func (c *SQLCore[T]) DeleteVectorStore(ctx context.Context, id string) error {
	return c.d.Write(ctx, func(tx T) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM vector_stores WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("%s: delete vector store: %w", c.name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("vector store %q: %w", id, ErrNotFound)
		}
		return c.d.Changed(ctx, tx, ChangeStoreDeleted, id, "")
	}, func() {
		c.index.DropStore(id)
		c.amu.Lock()
		delete(c.active, id)
		c.amu.Unlock()
	})
}

// ---- vector-store files

const vsfCols = `seq, file_id, store_id, status, last_error_code, last_error_message, attributes, max_tokens, overlap_tokens, usage_bytes, chunk_count, created_at`

func scanVSF(row interface{ Scan(...any) error }) (VectorStoreFile, error) {
	var f VectorStoreFile
	var seq, created int64
	var attrs string
	if err := row.Scan(&seq, &f.FileID, &f.VectorStoreID, &f.Status, &f.LastErrorCode, &f.LastErrorMessage, &attrs,
		&f.Chunking.MaxTokens, &f.Chunking.OverlapTokens, &f.UsageBytes, &f.Chunks, &created); err != nil {
		return f, err
	}
	a, err := DecodeAttributes(attrs)
	if err != nil {
		return f, err
	}
	f.Attributes = a
	f.CreatedAt = fromNanos(created)
	return f, nil
}

// AttachFile implements VectorStores.
func (c *SQLCore[T]) AttachFile(ctx context.Context, storeID, fileID string, attrs map[string]any, ch Chunking) (VectorStoreFile, error) {
	raw, err := CheckAttributes(attrs)
	if err != nil {
		return VectorStoreFile{}, err
	}
	decoded, _ := DecodeAttributes(raw)
	t := now()
	f := VectorStoreFile{
		FileID:        fileID,
		VectorStoreID: storeID,
		Status:        StatusInProgress,
		Attributes:    decoded,
		Chunking:      ch,
		CreatedAt:     t,
	}
	err = c.d.Write(ctx, func(tx T) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM vector_stores WHERE id = ?`, storeID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("vector store %q: %w", storeID, ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("%s: attach file: %w", c.name, err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM files WHERE id = ?`, fileID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("file %q: %w", fileID, ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("%s: attach file: %w", c.name, err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO vector_store_files (store_id, file_id, status, attributes, max_tokens, overlap_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			storeID, fileID, StatusInProgress, raw, ch.MaxTokens, ch.OverlapTokens, t.UnixNano())
		if c.d.IsUnique(err) {
			return fmt.Errorf("file %q is attached to vector store %q already: %w", fileID, storeID, ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("%s: attach file: %w", c.name, err)
		}
		return c.touch(ctx, tx, storeID, t)
	}, nil)
	return f, err
}

func (c *SQLCore[T]) touch(ctx context.Context, tx T, storeID string, t time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE vector_stores SET last_active_at = ? WHERE id = ?`, t.UnixNano(), storeID); err != nil {
		return fmt.Errorf("%s: mark the vector store active: %w", c.name, err)
	}
	return nil
}

// GetVectorStoreFile implements VectorStores.
func (c *SQLCore[T]) GetVectorStoreFile(ctx context.Context, storeID, fileID string) (VectorStoreFile, error) {
	if err := c.d.Check(ctx); err != nil {
		return VectorStoreFile{}, err
	}
	f, err := scanVSF(c.r.QueryRowContext(ctx, `SELECT `+vsfCols+` FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, fileID))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("file %q in vector store %q: %w", fileID, storeID, ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("%s: get vector store file: %w", c.name, err)
	}
	return f, nil
}

func validStatus(status string) bool {
	switch status {
	case StatusInProgress, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// ListVectorStoreFiles implements VectorStores.
func (c *SQLCore[T]) ListVectorStoreFiles(ctx context.Context, storeID, status string, o ListOptions) (Page[VectorStoreFile], error) {
	var page Page[VectorStoreFile]
	if err := c.d.Check(ctx); err != nil {
		return page, err
	}
	if status != "" && !validStatus(status) {
		return page, fmt.Errorf("%w: status must be in_progress, completed, failed or cancelled (got %q)", ErrInvalid, status)
	}
	var one int
	if err := c.r.QueryRowContext(ctx, `SELECT 1 FROM vector_stores WHERE id = ?`, storeID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return page, fmt.Errorf("vector store %q: %w", storeID, ErrNotFound)
	} else if err != nil {
		return page, fmt.Errorf("%s: list vector store files: %w", c.name, err)
	}
	p := PageQuery[VectorStoreFile]{
		Select:     `SELECT ` + vsfCols + ` FROM vector_store_files`,
		Where:      `store_id = ?`,
		Args:       []any{storeID},
		Cursor:     `SELECT seq FROM vector_store_files WHERE file_id = ? AND store_id = ?`,
		CursorArgs: []any{storeID},
		Scan:       func(r *sql.Rows) (VectorStoreFile, error) { return scanVSF(r) },
	}
	if status != "" {
		p.Where += ` AND status = ?`
		p.Args = append(p.Args, status)
	}
	return List(ctx, c.r, c.name, p, o)
}

// DetachFile implements VectorStores.
func (c *SQLCore[T]) DetachFile(ctx context.Context, storeID, fileID string) error {
	return c.d.Write(ctx, func(tx T) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, fileID)
		if err != nil {
			return fmt.Errorf("%s: detach file: %w", c.name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("file %q in vector store %q: %w", fileID, storeID, ErrNotFound)
		}
		if err := c.d.Changed(ctx, tx, ChangeFileRemoved, storeID, fileID); err != nil {
			return err
		}
		return c.touch(ctx, tx, storeID, now())
	}, func() { c.index.RemoveFile(storeID, fileID) })
}

// inProgress checks that the attachment exists and is in progress.
func (c *SQLCore[T]) inProgress(ctx context.Context, tx T, storeID, fileID string) (attrs string, err error) {
	var status string
	err = tx.QueryRowContext(ctx, `SELECT status, attributes FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, fileID).Scan(&status, &attrs)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("file %q in vector store %q (detached meanwhile?): %w", fileID, storeID, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("%s: read the file's status: %w", c.name, err)
	}
	if status != StatusInProgress {
		return "", fmt.Errorf("file %q in vector store %q is %s, not in_progress: %w", fileID, storeID, status, ErrConflict)
	}
	return attrs, nil
}

// CompleteFile implements VectorStores: the chunks are checked here and
// inserted by the driver (SQLDriver.InsertChunks), in one transaction.
func (c *SQLCore[T]) CompleteFile(ctx context.Context, storeID, fileID string, chunks []Chunk) error {
	var entries []vecindex.Chunk
	var attrs map[string]any
	return c.d.Write(ctx, func(tx T) error {
		var dim int
		if err := tx.QueryRowContext(ctx, `SELECT dimensions FROM vector_stores WHERE id = ?`, storeID).Scan(&dim); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("vector store %q: %w", storeID, ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("%s: complete file: %w", c.name, err)
		}
		raw, err := c.inProgress(ctx, tx, storeID, fileID)
		if err != nil {
			return err
		}
		if attrs, err = DecodeAttributes(raw); err != nil {
			return fmt.Errorf("%s: complete file: %w", c.name, err)
		}
		seen := make(map[int]bool, len(chunks))
		var usage int64
		for i := range chunks {
			ch := &chunks[i]
			if len(ch.Vector) != dim {
				return fmt.Errorf("chunk %d has %d dimensions, vector store %q has %d: %w", ch.Index, len(ch.Vector), storeID, dim, ErrDimension)
			}
			if !Finite(ch.Vector) {
				return fmt.Errorf("%w: chunk %d has a NaN or infinite component", ErrInvalid, ch.Index)
			}
			if ch.Index < 0 || seen[ch.Index] {
				return fmt.Errorf("%w: chunk index %d is negative or repeated", ErrInvalid, ch.Index)
			}
			seen[ch.Index] = true
			usage += int64(len(ch.Text))
		}
		if entries, err = c.d.InsertChunks(ctx, tx, storeID, fileID, dim, chunks); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET status = ?, usage_bytes = ?, chunk_count = ?, last_error_code = '', last_error_message = '' WHERE store_id = ? AND file_id = ?`,
			StatusCompleted, usage, len(chunks), storeID, fileID); err != nil {
			return fmt.Errorf("%s: complete file: %w", c.name, err)
		}
		if err := c.d.Changed(ctx, tx, ChangeFileCompleted, storeID, fileID); err != nil {
			return err
		}
		return c.touch(ctx, tx, storeID, now())
	}, func() {
		if err := c.index.AddFile(storeID, fileID, attrs, entries); err != nil {
			// Cannot happen: the store exists (we hold the write lock) and
			// the dimensions were checked.
			c.log.Error(c.name+": index update failed; restart to rebuild the index", "vector_store_id", storeID, "file_id", fileID, "error", err)
		}
	})
}

// FailFile implements VectorStores.
func (c *SQLCore[T]) FailFile(ctx context.Context, storeID, fileID, code, message string) error {
	if len(message) > 4096 {
		message = message[:4096]
	}
	return c.d.Write(ctx, func(tx T) error {
		if _, err := c.inProgress(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE store_id = ? AND file_id = ?`, storeID, fileID); err != nil {
			return fmt.Errorf("%s: fail file: %w", c.name, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET status = ?, last_error_code = ?, last_error_message = ?, usage_bytes = 0, chunk_count = 0 WHERE store_id = ? AND file_id = ?`,
			StatusFailed, code, message, storeID, fileID); err != nil {
			return fmt.Errorf("%s: fail file: %w", c.name, err)
		}
		if err := c.d.Changed(ctx, tx, ChangeFileRemoved, storeID, fileID); err != nil {
			return err
		}
		return c.touch(ctx, tx, storeID, now())
	}, func() { c.index.RemoveFile(storeID, fileID) })
}

// PendingFiles implements VectorStores.
func (c *SQLCore[T]) PendingFiles(ctx context.Context) ([]VectorStoreFile, error) {
	if err := c.d.Check(ctx); err != nil {
		return nil, err
	}
	rows, err := c.r.QueryContext(ctx, `SELECT `+vsfCols+` FROM vector_store_files WHERE status = ? ORDER BY seq`, StatusInProgress)
	if err != nil {
		return nil, fmt.Errorf("%s: pending files: %w", c.name, err)
	}
	defer rows.Close()
	var out []VectorStoreFile
	for rows.Next() {
		f, err := scanVSF(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: pending files: %w", c.name, err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// ---- search

// indexed reports the dimensions of a store the index holds, asking the
// driver to load it first when the index does not.
func (c *SQLCore[T]) indexed(ctx context.Context, storeID string) (int, error) {
	dim, ok := c.index.Dimension(storeID)
	if !ok {
		if err := c.d.LoadStore(ctx, storeID); err != nil {
			return 0, err
		}
		dim, ok = c.index.Dimension(storeID)
	}
	if !ok {
		return 0, fmt.Errorf("vector store %q: %w", storeID, ErrNotFound)
	}
	return dim, nil
}

// Search implements VectorStores.
func (c *SQLCore[T]) Search(ctx context.Context, q Query) ([]Hit, error) {
	if err := c.d.Check(ctx); err != nil {
		return nil, err
	}
	if err := CheckQuery(q); err != nil {
		return nil, err
	}
	for _, id := range q.StoreIDs {
		dim, err := c.indexed(ctx, id)
		if err != nil {
			return nil, err
		}
		if dim != len(q.Vector) {
			return nil, fmt.Errorf("the query has %d dimensions, vector store %q has %d: %w", len(q.Vector), id, dim, ErrDimension)
		}
	}
	plan, err := PlanQuery(q)
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
			lex, lexErr = c.d.Lexical(ctx, terms, q.Vector, q.StoreIDs, n, allow)
		}()
	} else {
		close(lexDone)
	}
	res, err := c.index.Search(q.Vector, n, q.StoreIDs, allow)
	<-lexDone
	if err != nil {
		return nil, IndexSearchError(err)
	}
	if len(terms) > 0 {
		if lexErr != nil {
			return nil, lexErr
		}
		res = FuseRRF(res, lex)
	}
	t := now()
	c.amu.Lock()
	for _, id := range q.StoreIDs {
		c.active[id] = t
	}
	c.amu.Unlock()
	res = TrimResults(res, q.K, q.HasMinScore, q.MinScore)
	if len(res) == 0 {
		return []Hit{}, nil
	}
	return c.Hits(ctx, res)
}

// Hits reads the texts and filenames of index results (Search's last
// step); a result whose chunk was deleted since the search is dropped.
func (c *SQLCore[T]) Hits(ctx context.Context, res []vecindex.Result) ([]Hit, error) {
	rowArgs := make([]any, len(res))
	marks := make([]string, len(res))
	for i, r := range res {
		rowArgs[i] = r.Row
		marks[i] = "?"
	}
	rows, err := c.r.QueryContext(ctx, `SELECT c.id, c.text, f.filename FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN (`+strings.Join(marks, ",")+`)`, rowArgs...)
	if err != nil {
		return nil, fmt.Errorf("%s: read search hits: %w", c.name, err)
	}
	defer rows.Close()
	type text struct{ text, filename string }
	texts := make(map[int64]text, len(res))
	for rows.Next() {
		var id int64
		var t text
		if err := rows.Scan(&id, &t.text, &t.filename); err != nil {
			return nil, fmt.Errorf("%s: read search hits: %w", c.name, err)
		}
		texts[id] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: read search hits: %w", c.name, err)
	}
	hits := make([]Hit, 0, len(res))
	for _, r := range res {
		t, ok := texts[r.Row]
		if !ok {
			continue
		}
		hits = append(hits, NewHit(r, t.text, t.filename))
	}
	return hits, nil
}

// ScanChunks implements VectorStores.
func (c *SQLCore[T]) ScanChunks(ctx context.Context, storeIDs []string, fn func(Hit, []float32) error) error {
	if err := c.d.Check(ctx); err != nil {
		return err
	}
	for _, id := range storeIDs {
		if _, err := c.indexed(ctx, id); err != nil {
			return err
		}
	}
	for _, id := range storeIDs {
		if err := c.scanStore(ctx, id, fn); err != nil {
			return err
		}
	}
	return nil
}

// scanBatch is how many chunks ScanChunks reads per query: it holds no
// read transaction (nor connection) while fn runs, so a slow consumer (a
// download streamed to a slow client) neither pins the WAL nor a reader.
const scanBatch = 256

func (c *SQLCore[T]) scanStore(ctx context.Context, storeID string, fn func(Hit, []float32) error) error {
	type row struct {
		hit Hit
		raw string
		vec []float32
	}
	var lastFile, lastRaw string
	var lastAttrs map[string]any
	afterFile, afterIdx := "", -1
	for {
		rows, err := c.r.QueryContext(ctx, `SELECT c.file_id, f.filename, v.attributes, c.idx, c.text, cv.vector
			FROM chunks c JOIN chunk_vectors cv ON cv.chunk_id = c.id JOIN files f ON f.id = c.file_id
			JOIN vector_store_files v ON v.store_id = c.store_id AND v.file_id = c.file_id
			WHERE c.store_id = ? AND (c.file_id, c.idx) > (?, ?) ORDER BY c.file_id, c.idx LIMIT ?`, storeID, afterFile, afterIdx, scanBatch)
		if err != nil {
			return fmt.Errorf("%s: scan chunks: %w", c.name, err)
		}
		batch := make([]row, 0, scanBatch)
		for rows.Next() {
			var r row
			var blob []byte
			r.hit.VectorStoreID = storeID
			if err := rows.Scan(&r.hit.FileID, &r.hit.Filename, &r.raw, &r.hit.ChunkIndex, &r.hit.Text, &blob); err != nil {
				rows.Close()
				return fmt.Errorf("%s: scan chunks: %w", c.name, err)
			}
			r.vec = DecodeVector(blob)
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("%s: scan chunks: %w", c.name, err)
		}
		for _, r := range batch {
			if r.hit.FileID != lastFile || r.raw != lastRaw {
				if lastAttrs, err = DecodeAttributes(r.raw); err != nil {
					return fmt.Errorf("%s: scan chunks: %w", c.name, err)
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
