// Package postgres is the shared storage backend: files, vector stores and
// memories in one PostgreSQL schema (github.com/jackc/pgx/v5), so that every
// replica of Junction sees the same data. Search uses the same in-process
// exact vector index as the embedded backend (internal/storage/vecindex),
// fed from the rows at Open and kept in step with other replicas' commits
// through a change log (changes.go), so results match sqlite's.
//
// File bytes are kept in the database (file_parts, bytea in 1 MiB parts),
// not in a local directory, so every replica can read every file.
//
// Hybrid search ranks PostgreSQL full-text matches (tsvector, ts_rank) and
// fuses them with the vector candidates by the same reciprocal rank fusion
// as sqlite (storage.FuseRRF).
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

// Options configure a Store.
type Options struct {
	// MaxConns bounds the connection pool (0: 8).
	MaxConns int
	// Logger receives what the change follower did wrong; nil discards.
	Logger *slog.Logger
	// OnChange, when not nil, is called (from the change follower) with the
	// id of a vector store another replica changed, once this Store's index
	// has the change: what caches search results of it drops them.
	OnChange func(storeID string)
	// PollInterval is how often the change log is read when no
	// notification came (0: DefaultPollInterval).
	PollInterval time.Duration
}

// DefaultPollInterval bounds how stale a replica's index can be when
// notifications are lost (LISTEN/NOTIFY usually delivers in milliseconds).
const DefaultPollInterval = time.Second

// Store is the PostgreSQL backend; it implements storage.Store.
type Store struct {
	// The memories, vector stores, file rows and replays are the SQL
	// shared with sqlite (storage.SQLCore), run through driver.
	*storage.SQLCore[*pgTx]
	w, r     *pgDB // one pool; two names keep the code shared with sqlite's shape
	log      *slog.Logger
	index    *vecindex.Index
	wmu      sync.Mutex // serialises this replica's writes and the index updates after them
	closed   chan struct{}
	once     sync.Once
	follow   *follower
	onChange func(storeID string)
	// replica names this Store in the change log, so its follower skips
	// its own changes (already in its index).
	replica string
}

var _ storage.Store = (*Store)(nil)

// Open connects to the database at dsn (a PostgreSQL URL or key=value
// string; a search_path in it picks the schema), migrates the schema and
// loads the vector index.
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	if dsn == "" {
		return nil, errors.New("postgres: the DSN is empty; set the environment variable named by global.storage.postgres.dsn_env")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	conns := o.MaxConns
	if conns <= 0 {
		conns = 8
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	p := &pgDB{db}
	s := &Store{w: p, r: p, log: log, index: vecindex.New(), closed: make(chan struct{}), replica: storage.NewID("r_"), onChange: o.OnChange}
	s.SQLCore = storage.NewSQLCore[*pgTx]("postgres", p, s.index, log, driver{s})
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	var last int64
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM changes`).Scan(&last); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: read the change log: %w", err)
	}
	if err := s.loadIndex(ctx); err != nil {
		db.Close()
		return nil, err
	}
	interval := o.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	s.follow = startFollower(s, dsn, last, interval)
	return s, nil
}

// Close flushes search-time activity and closes the pool.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closed)
		s.follow.stop()
		s.wmu.Lock()
		defer s.wmu.Unlock()
		err = s.FlushActive(context.Background(), s.w)
		if e := s.w.DB.Close(); e != nil && err == nil {
			err = e
		}
	})
	return err
}

var errClosed = errors.New("postgres: the store is closed")

func (s *Store) check(ctx context.Context) error {
	select {
	case <-s.closed:
		return errClosed
	default:
	}
	return ctx.Err()
}

// ---- schema

// schema is the list of migrations; version n is schema[:n] applied, each
// recorded in schema_migrations. Append, never edit.
var schema = []string{
	// 1: files (bytes in parts), vector stores, their files and chunks,
	// memories, the change log other replicas follow.
	`CREATE TABLE files (
		seq BIGSERIAL PRIMARY KEY,
		id TEXT COLLATE "C" NOT NULL UNIQUE,
		filename TEXT NOT NULL,
		purpose TEXT NOT NULL,
		bytes BIGINT NOT NULL,
		sha256 TEXT NOT NULL,
		media_type TEXT NOT NULL,
		created_at BIGINT NOT NULL
	);
	CREATE INDEX files_purpose ON files(purpose, seq);
	CREATE TABLE file_parts (
		file_id TEXT COLLATE "C" NOT NULL REFERENCES files(id) ON DELETE CASCADE,
		part INTEGER NOT NULL,
		data BYTEA NOT NULL,
		PRIMARY KEY (file_id, part)
	);
	CREATE TABLE vector_stores (
		seq BIGSERIAL PRIMARY KEY,
		id TEXT COLLATE "C" NOT NULL UNIQUE,
		name TEXT UNIQUE,
		embedding_model TEXT NOT NULL,
		dimensions INTEGER NOT NULL,
		metadata TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		last_active_at BIGINT NOT NULL
	);
	CREATE TABLE vector_store_files (
		seq BIGSERIAL PRIMARY KEY,
		store_id TEXT COLLATE "C" NOT NULL REFERENCES vector_stores(id) ON DELETE CASCADE,
		file_id TEXT COLLATE "C" NOT NULL REFERENCES files(id) ON DELETE CASCADE,
		status TEXT NOT NULL,
		last_error_code TEXT NOT NULL DEFAULT '',
		last_error_message TEXT NOT NULL DEFAULT '',
		attributes TEXT NOT NULL,
		max_tokens INTEGER NOT NULL,
		overlap_tokens INTEGER NOT NULL,
		usage_bytes BIGINT NOT NULL DEFAULT 0,
		chunk_count INTEGER NOT NULL DEFAULT 0,
		created_at BIGINT NOT NULL,
		UNIQUE (store_id, file_id)
	);
	CREATE INDEX vector_store_files_file ON vector_store_files(file_id);
	CREATE INDEX vector_store_files_status ON vector_store_files(status, seq);
	CREATE TABLE chunks (
		id BIGSERIAL PRIMARY KEY,
		store_id TEXT COLLATE "C" NOT NULL,
		file_id TEXT COLLATE "C" NOT NULL,
		idx INTEGER NOT NULL,
		text TEXT NOT NULL,
		tokens INTEGER NOT NULL,
		tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
		UNIQUE (store_id, file_id, idx),
		FOREIGN KEY (store_id, file_id) REFERENCES vector_store_files(store_id, file_id) ON DELETE CASCADE
	);
	CREATE INDEX chunks_tsv ON chunks USING GIN (tsv);
	CREATE TABLE chunk_vectors (
		chunk_id BIGINT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
		store_id TEXT COLLATE "C" NOT NULL,
		file_id TEXT COLLATE "C" NOT NULL,
		idx INTEGER NOT NULL,
		vector BYTEA NOT NULL
	);
	CREATE INDEX chunk_vectors_file ON chunk_vectors(store_id, file_id);
	CREATE TABLE memories (
		seq BIGSERIAL PRIMARY KEY,
		id TEXT COLLATE "C" NOT NULL UNIQUE,
		scope TEXT NOT NULL,
		text TEXT NOT NULL,
		text_hash TEXT NOT NULL,
		embedding_model TEXT NOT NULL,
		dimensions INTEGER NOT NULL,
		vector BYTEA NOT NULL,
		created_at BIGINT NOT NULL,
		UNIQUE (scope, text_hash)
	);
	CREATE INDEX memories_scope ON memories(scope, seq);
	CREATE TABLE changes (
		seq BIGSERIAL PRIMARY KEY,
		origin TEXT NOT NULL,
		kind TEXT NOT NULL,
		store_id TEXT COLLATE "C" NOT NULL DEFAULT '',
		file_id TEXT COLLATE "C" NOT NULL DEFAULT '',
		at BIGINT NOT NULL
	);`,

	// 2: router_replay's decision records and the outcomes submitted on
	// them (storage/replays.go; the sqlite backend's version 7).
	`CREATE TABLE replays (
		seq BIGSERIAL PRIMARY KEY,
		id TEXT COLLATE "C" NOT NULL UNIQUE,
		request_id TEXT NOT NULL,
		recipe TEXT NOT NULL,
		decision TEXT NOT NULL,
		model TEXT NOT NULL,
		status INTEGER NOT NULL,
		created_at BIGINT NOT NULL,
		size BIGINT NOT NULL,
		record BYTEA NOT NULL
	);
	CREATE INDEX replays_scope ON replays(recipe, decision, seq);
	CREATE INDEX replays_model ON replays(model, seq);
	CREATE INDEX replays_created ON replays(created_at);
	CREATE INDEX replays_request ON replays(request_id);
	CREATE TABLE replay_outcomes (
		seq BIGSERIAL PRIMARY KEY,
		id TEXT COLLATE "C" NOT NULL UNIQUE,
		replay_id TEXT NOT NULL,
		target TEXT NOT NULL,
		verdict TEXT NOT NULL,
		score DOUBLE PRECISION,
		source TEXT NOT NULL,
		principal TEXT NOT NULL,
		idempotency_key TEXT NOT NULL,
		category TEXT NOT NULL,
		created_at BIGINT NOT NULL
	);
	CREATE UNIQUE INDEX replay_outcomes_idempotency ON replay_outcomes(principal, idempotency_key) WHERE idempotency_key <> '';
	CREATE INDEX replay_outcomes_target ON replay_outcomes(target, category);`,
}

// migrate brings the schema to the newest version, one transaction per
// version, under an advisory lock so that replicas starting together
// migrate once.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.w.DB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: create schema_migrations (does the user own the schema?): %w", err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext(current_schema() || '.junction_migrate'))`); err != nil {
		return fmt.Errorf("postgres: migrate lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock(hashtext(current_schema() || '.junction_migrate'))`)
	var v int
	if err := conn.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return fmt.Errorf("postgres: read the schema version: %w", err)
	}
	if v > len(schema) {
		return fmt.Errorf("postgres: the schema has version %d, newer than this build knows (%d); run a newer junction", v, len(schema))
	}
	for ; v < len(schema); v++ {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
		if _, err := tx.ExecContext(ctx, schema[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("postgres: migrate to schema version %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v+1); err != nil {
			tx.Rollback()
			return fmt.Errorf("postgres: migrate to schema version %d: %w", v+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("postgres: migrate to schema version %d: %w", v+1, err)
		}
	}
	return nil
}

// ---- helpers

// rebind turns the ? placeholders of the queries (shared in shape with
// the sqlite backend) into PostgreSQL's $n.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pgDB and pgTx rebind every query.
type pgDB struct{ *sql.DB }

func (d *pgDB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return d.DB.ExecContext(ctx, rebind(q), args...)
}
func (d *pgDB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return d.DB.QueryContext(ctx, rebind(q), args...)
}
func (d *pgDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, rebind(q), args...)
}

type pgTx struct{ *sql.Tx }

func (t *pgTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, rebind(q), args...)
}
func (t *pgTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, rebind(q), args...)
}
func (t *pgTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, rebind(q), args...)
}
func (t *pgTx) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return t.Tx.PrepareContext(ctx, rebind(q))
}

func now() time.Time { return time.Now().UTC() }

// isUnique reports a unique_violation.
func isUnique(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == "23505"
}

// logChange records a change other replicas apply to their index, and
// wakes them (NOTIFY is delivered at commit).
func logChange(ctx context.Context, tx *pgTx, origin, kind, storeID, fileID string) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO changes (origin, kind, store_id, file_id, at) VALUES (?, ?, ?, ?, ?)`, origin, kind, storeID, fileID, now().UnixNano()); err != nil {
		return fmt.Errorf("postgres: log the change: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify(current_schema() || '_junction_changes', '')`); err != nil {
		return fmt.Errorf("postgres: notify the change: %w", err)
	}
	return nil
}

// tx runs fn in a transaction; after (may be nil) runs after a successful
// commit, under the write mutex taken before the transaction.
func (s *Store) tx(ctx context.Context, fn func(*pgTx) error, after func()) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	// Only a write the index follows needs the mutex (its index update
	// must not interleave with another's); PostgreSQL orders the rest.
	if after != nil {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	tx, err := s.w.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	if err := fn(&pgTx{tx}); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	if after != nil {
		after()
	}
	return nil
}

// driver is what the shared SQL (storage.SQLCore) asks of this backend.
type driver struct{ s *Store }

func (d driver) Check(ctx context.Context) error { return d.s.check(ctx) }
func (d driver) Write(ctx context.Context, fn func(*pgTx) error, after func()) error {
	return d.s.tx(ctx, fn, after)
}
func (d driver) IsUnique(err error) bool { return isUnique(err) }

// Changed logs the change for the other replicas' followers.
func (d driver) Changed(ctx context.Context, tx *pgTx, kind, storeID, fileID string) error {
	return logChange(ctx, tx, d.s.replica, kind, storeID, fileID)
}

// LoadStore loads a store created on another replica and not yet
// followed.
func (d driver) LoadStore(ctx context.Context, storeID string) error {
	return d.s.applyStore(ctx, storeID)
}
func (d driver) InsertChunks(ctx context.Context, tx *pgTx, storeID, fileID string, _ int, chunks []storage.Chunk) ([]vecindex.Chunk, error) {
	return insertChunks(ctx, tx, storeID, fileID, chunks)
}
func (d driver) Lexical(ctx context.Context, terms []string, vector []float32, storeIDs []string, n int, allow func(string, string, map[string]any) bool) ([]vecindex.Result, error) {
	return d.s.lexical(ctx, terms, vector, storeIDs, n, allow)
}
