package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/junction-router/junction/internal/storage/vecindex"
)

// The SQL backends (sqlite, postgres) keep the same tables and run the same
// statements, written with ? placeholders (postgres rewrites them). What
// does not depend on the dialect or the driver is here, once: SQLCore, which
// a backend embeds, implements memories, vector stores and their search, the
// rows of files and the replays over those tables; the backend keeps its
// connections and transactions, the bytes of files, and gives SQLCore, as a
// SQLDriver, the few statements it writes in its own dialect.

// SQLDriver is what a SQL backend gives the SQLCore it embeds. T is the
// backend's write transaction (a *sql.Tx, or one that rewrites ?
// placeholders into its dialect).
type SQLDriver[T Execer] interface {
	// Check fails once the store is closed, or when ctx is done.
	Check(ctx context.Context) error
	// Write runs fn in a write transaction; after (nil: none) runs after
	// the commit, before any other write's index update (the backend's
	// write lock is held from before the transaction until after returns).
	Write(ctx context.Context, fn func(tx T) error, after func()) error
	// IsUnique reports a unique-constraint violation.
	IsUnique(err error) bool
	// Changed is called in the transaction of every write that changes
	// what a search sees (kind is a Change constant), so that a backend
	// whose index other replicas follow can log it; a backend alone with
	// its data returns nil.
	Changed(ctx context.Context, tx T, kind, storeID, fileID string) error
	// LoadStore is called when a search or scan names a store the index
	// does not hold: a backend that follows other replicas' writes loads
	// it when it exists by now (a store created on another replica); one
	// that does not returns nil (the store does not exist).
	LoadStore(ctx context.Context, storeID string) error
	// InsertChunks inserts a file's chunks (rows of chunks and
	// chunk_vectors; each chunk checked, its vector of dim components) and
	// returns their index entries, in the order of chunks.
	InsertChunks(ctx context.Context, tx T, storeID, fileID string, dim int, chunks []Chunk) ([]vecindex.Chunk, error)
	// Lexical returns the full-text candidates of a hybrid search: up to n
	// chunks of storeIDs matching the query's terms, best first, that the
	// index holds and allow (nil: all) accepts, each scored by cosine
	// against vector.
	Lexical(ctx context.Context, terms []string, vector []float32, storeIDs []string, n int, allow func(storeID, fileID string, attrs map[string]any) bool) ([]vecindex.Result, error)
}

// What a write changed of what a search sees (SQLDriver.Changed). The
// postgres backend keeps these in its change log: never change a value.
const (
	ChangeStoreCreated  = "store_created"
	ChangeStoreDeleted  = "store_deleted"
	ChangeFileCompleted = "file_completed"
	ChangeFileRemoved   = "file_removed" // failed or detached
	ChangeFileDeleted   = "file_deleted" // the file itself, from every store
)

// SQLCore is the dialect-independent part of a SQL backend (see SQLDriver):
// it implements Memories, VectorStores (sqlvectors.go), Replays, and
// Files' GetFile and ListFiles.
type SQLCore[T Execer] struct {
	name  string // the backend's, prefixed to its errors
	r     Querier
	d     SQLDriver[T]
	index *vecindex.Index
	log   *slog.Logger
	amu   sync.Mutex
	// active is the search-time LastActiveAt of vector stores: searches
	// never write; FlushActive does, at Close.
	active map[string]time.Time
}

// NewSQLCore returns the core of the backend name (prefixed to errors):
// reads go to r, writes through d, the vector index is ix (which the
// backend loads at open and may update itself), log receives what cannot
// be returned.
func NewSQLCore[T Execer](name string, r Querier, ix *vecindex.Index, log *slog.Logger, d SQLDriver[T]) *SQLCore[T] {
	return &SQLCore[T]{name: name, r: r, d: d, index: ix, log: log, active: map[string]time.Time{}}
}

// FlushActive writes the search-time LastActiveAt kept in memory through w
// (the backend's writer; at Close, under its write lock).
func (c *SQLCore[T]) FlushActive(ctx context.Context, w interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}) error {
	c.amu.Lock()
	active := c.active
	c.active = map[string]time.Time{}
	c.amu.Unlock()
	var err error
	for id, t := range active {
		if _, e := w.ExecContext(ctx, `UPDATE vector_stores SET last_active_at = ? WHERE id = ? AND last_active_at < ?`, t.UnixNano(), id, t.UnixNano()); e != nil {
			err = fmt.Errorf("%s: flush last_active_at: %w", c.name, e)
		}
	}
	return err
}

// NewID is prefix + 24 random base32 characters (120 bits): the ids of
// everything the SQL backends keep.
func NewID(prefix string) string { return newRandomID(prefix) }

func now() time.Time { return time.Now().UTC() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// ---- files (their rows; the bytes are the backend's)

// NewFileRow checks a new file (CheckNewFile) and returns its row as
// created now, under a new id; the backend fills Bytes and SHA256.
func NewFileRow(nf NewFile) (File, error) {
	name, err := CheckNewFile(nf)
	if err != nil {
		return File{}, err
	}
	return File{
		ID:        NewID("file-"),
		Filename:  name,
		Purpose:   nf.Purpose,
		MediaType: nf.MediaType,
		CreatedAt: now(),
	}, nil
}

const fileCols = `seq, id, filename, purpose, bytes, sha256, media_type, created_at`

func scanFile(row interface{ Scan(...any) error }) (File, error) {
	var f File
	var seq, created int64
	err := row.Scan(&seq, &f.ID, &f.Filename, &f.Purpose, &f.Bytes, &f.SHA256, &f.MediaType, &created)
	f.CreatedAt = fromNanos(created)
	return f, err
}

// GetFile implements Files.
func (c *SQLCore[T]) GetFile(ctx context.Context, id string) (File, error) {
	if err := c.d.Check(ctx); err != nil {
		return File{}, err
	}
	f, err := scanFile(c.r.QueryRowContext(ctx, `SELECT `+fileCols+` FROM files WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("file %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("%s: get file: %w", c.name, err)
	}
	return f, nil
}

// ListFiles implements Files.
func (c *SQLCore[T]) ListFiles(ctx context.Context, purpose string, o ListOptions) (Page[File], error) {
	if err := c.d.Check(ctx); err != nil {
		return Page[File]{}, err
	}
	p := PageQuery[File]{
		Select: `SELECT ` + fileCols + ` FROM files`,
		Cursor: `SELECT seq FROM files WHERE id = ?`,
		Scan:   func(r *sql.Rows) (File, error) { return scanFile(r) },
	}
	if purpose != "" {
		p.Where, p.Args = `purpose = ?`, []any{purpose}
	}
	return List(ctx, c.r, c.name, p, o)
}

// DeleteFileRows is DeleteFile's part in the tables (tx is the delete's
// transaction; backend names it in errors): the file's row, detached from
// every store first (the cascade from files would do it too, but the
// stores it leaves must be marked active). ErrNotFound when there is none.
func DeleteFileRows(ctx context.Context, tx Execer, backend, id string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE vector_stores SET last_active_at = ? WHERE id IN (SELECT store_id FROM vector_store_files WHERE file_id = ?)`, now().UnixNano(), id); err != nil {
		return fmt.Errorf("%s: delete file: %w", backend, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM vector_store_files WHERE file_id = ?`, id); err != nil {
		return fmt.Errorf("%s: delete file: %w", backend, err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM files WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("%s: delete file: %w", backend, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("file %q: %w", id, ErrNotFound)
	}
	return nil
}

// ---- memories

const memCols = `seq, id, scope, text, embedding_model, vector, created_at`

func scanMemory(row interface{ Scan(...any) error }) (Memory, error) {
	var m Memory
	var seq, created int64
	var blob []byte
	if err := row.Scan(&seq, &m.ID, &m.Scope, &m.Text, &m.EmbeddingModel, &blob, &created); err != nil {
		return m, err
	}
	m.Vector = DecodeVector(blob)
	m.CreatedAt = fromNanos(created)
	return m, nil
}

// Remember implements Memories.
func (c *SQLCore[T]) Remember(ctx context.Context, m Memory) (Memory, bool, error) {
	if err := CheckMemory(m); err != nil {
		return Memory{}, false, err
	}
	kept := Memory{
		ID:             NewID("mem_"),
		Scope:          m.Scope,
		Text:           strings.TrimSpace(m.Text),
		CreatedAt:      now(),
		EmbeddingModel: m.EmbeddingModel,
		Vector:         append([]float32(nil), m.Vector...),
	}
	created := false
	err := c.d.Write(ctx, func(tx T) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO memories (id, scope, text, text_hash, embedding_model, dimensions, vector, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (scope, text_hash) DO NOTHING`,
			kept.ID, kept.Scope, kept.Text, MemoryHash(kept.Text), kept.EmbeddingModel, len(kept.Vector), EncodeVector(nil, kept.Vector), kept.CreatedAt.UnixNano())
		if err != nil {
			return fmt.Errorf("%s: remember: %w", c.name, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			created = true
			return nil
		}
		kept, err = scanMemory(tx.QueryRowContext(ctx, `SELECT `+memCols+` FROM memories WHERE scope = ? AND text_hash = ?`, kept.Scope, MemoryHash(kept.Text)))
		if err != nil {
			return fmt.Errorf("%s: remember: %w", c.name, err)
		}
		return nil
	}, nil)
	if err != nil {
		return Memory{}, false, err
	}
	return kept, created, nil
}

// Recall implements Memories: an exact cosine scan over the scope's
// memories made with the same model and dimension.
func (c *SQLCore[T]) Recall(ctx context.Context, scope, model string, vector []float32, k int, minScore float32) ([]MemoryHit, error) {
	if err := c.d.Check(ctx); err != nil {
		return nil, err
	}
	if err := CheckRecall(vector, k); err != nil {
		return nil, err
	}
	q := append([]float32(nil), vector...)
	vecindex.Normalize(q)
	rows, err := c.r.QueryContext(ctx, `SELECT `+memCols+` FROM memories WHERE scope = ? AND embedding_model = ? AND dimensions = ?`, scope, model, len(vector))
	if err != nil {
		return nil, fmt.Errorf("%s: recall: %w", c.name, err)
	}
	defer rows.Close()
	var hits []MemoryHit
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: recall: %w", c.name, err)
		}
		v := append([]float32(nil), m.Vector...)
		vecindex.Normalize(v)
		score := vecindex.Dot(q, v)
		if score < minScore {
			continue
		}
		hits = append(hits, MemoryHit{Memory: m, Score: score})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: recall: %w", c.name, err)
	}
	return RankMemoryHits(hits, k), nil
}

// ListMemories implements Memories.
func (c *SQLCore[T]) ListMemories(ctx context.Context, scope string, o ListOptions) (Page[Memory], error) {
	if err := c.d.Check(ctx); err != nil {
		return Page[Memory]{}, err
	}
	p := PageQuery[Memory]{
		Select: `SELECT ` + memCols + ` FROM memories`,
		Cursor: `SELECT seq FROM memories WHERE id = ?`,
		Scan:   func(r *sql.Rows) (Memory, error) { return scanMemory(r) },
	}
	if scope != "" {
		p.Where, p.Args = `scope = ?`, []any{scope}
	}
	return List(ctx, c.r, c.name, p, o)
}

// GetMemory implements Memories.
func (c *SQLCore[T]) GetMemory(ctx context.Context, id string) (Memory, error) {
	if err := c.d.Check(ctx); err != nil {
		return Memory{}, err
	}
	m, err := scanMemory(c.r.QueryRowContext(ctx, `SELECT `+memCols+` FROM memories WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("memory %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return m, fmt.Errorf("%s: get memory: %w", c.name, err)
	}
	return m, nil
}

// DeleteMemory implements Memories.
func (c *SQLCore[T]) DeleteMemory(ctx context.Context, id string) error {
	return c.d.Write(ctx, func(tx T) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("%s: delete memory: %w", c.name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("memory %q: %w", id, ErrNotFound)
		}
		return nil
	}, nil)
}

// DeleteScope implements Memories.
func (c *SQLCore[T]) DeleteScope(ctx context.Context, scope string) (int, error) {
	var n int64
	err := c.d.Write(ctx, func(tx T) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE scope = ?`, scope)
		if err != nil {
			return fmt.Errorf("%s: delete scope: %w", c.name, err)
		}
		n, _ = res.RowsAffected()
		return nil
	}, nil)
	return int(n), err
}

// ---- replays (the shared SQL of replays.go, in the backend's transactions)

// PutReplays implements Replays.
func (c *SQLCore[T]) PutReplays(ctx context.Context, rs []Replay, bounds map[string]ReplayBounds) error {
	if len(rs) == 0 {
		return c.d.Check(ctx)
	}
	return c.d.Write(ctx, func(tx T) error { return InsertReplays(ctx, tx, c.name, rs, bounds, now()) }, nil)
}

// GetReplay implements Replays.
func (c *SQLCore[T]) GetReplay(ctx context.Context, id string) (Replay, error) {
	if err := c.d.Check(ctx); err != nil {
		return Replay{}, err
	}
	return GetReplayFrom(ctx, c.r, c.name, id)
}

// ListReplays implements Replays.
func (c *SQLCore[T]) ListReplays(ctx context.Context, q ReplayQuery, o ListOptions) (Page[Replay], error) {
	if err := c.d.Check(ctx); err != nil {
		return Page[Replay]{}, err
	}
	return ListReplaysFrom(ctx, c.r, c.name, q, o)
}

// ScanReplays implements Replays.
func (c *SQLCore[T]) ScanReplays(ctx context.Context, q ReplayQuery, max int, fn func(Replay) error) error {
	if err := c.d.Check(ctx); err != nil {
		return err
	}
	return ScanReplaysFrom(ctx, c.r, c.name, q, max, fn)
}

// UpdateReplay implements Replays.
func (c *SQLCore[T]) UpdateReplay(ctx context.Context, id string, record []byte) error {
	return c.d.Write(ctx, func(tx T) error { return UpdateReplayIn(ctx, tx, c.name, id, record) }, nil)
}

// AddOutcome implements Replays. Two submissions with the same idempotency
// key racing each other (two replicas, say) both find none and insert; the
// unique index refuses the second, which is then answered as the retry it
// is. (A backend whose writes one lock serialises never races so.)
func (c *SQLCore[T]) AddOutcome(ctx context.Context, o Outcome) (Outcome, bool, error) {
	var kept Outcome
	var created bool
	add := func() error {
		return c.d.Write(ctx, func(tx T) error {
			var err error
			kept, created, err = AddOutcomeIn(ctx, tx, c.name, o, now())
			return err
		}, nil)
	}
	err := add()
	if err != nil && o.IdempotencyKey != "" && c.d.IsUnique(err) {
		err = add()
	}
	return kept, created, err
}

// TallyOutcomes implements Replays.
func (c *SQLCore[T]) TallyOutcomes(ctx context.Context, target string, correct []string) ([]OutcomeTally, error) {
	if err := c.d.Check(ctx); err != nil {
		return nil, err
	}
	return TallyOutcomesFrom(ctx, c.r, c.name, target, correct)
}
