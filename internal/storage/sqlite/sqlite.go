// Package sqlite is the embedded storage backend: one SQLite database
// (modernc.org/sqlite, pure Go) and a folder of file bytes in a data
// directory, with an in-memory exact vector index (internal/storage/vecindex)
// loaded at Open and kept in step with every commit.
//
// Durability: the database runs in WAL mode with synchronous=FULL, so a
// method that returned nil has its write on disk; an uploaded file's bytes
// are fsynced and renamed into place (and the directory fsynced) before its
// row is inserted, and Open removes bytes that never got a row.
//
// Concurrency: all writes go through one connection (SQLite has one writer)
// and are serialised by a mutex that also covers the index update that
// follows each commit, so the index never disagrees with the database for
// longer than one write; reads use a separate pool of connections, which WAL
// lets run beside the writer.
//
// A vector store's LastActiveAt is set in the database by every change to
// the store and, for searches, kept in memory and written at Close (a crash
// loses only the search-time part of it); searches therefore never write.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sqlite3 "modernc.org/sqlite"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

// Options configure a Store.
type Options struct {
	// Logger receives what Open repaired (orphan files removed); nil
	// discards.
	Logger *slog.Logger
	// ResponseTTL is how long a stored response (responses.go) is kept;
	// zero is storage.DefaultResponseTTL.
	ResponseTTL time.Duration
	// MaxResponses and MaxResponseBytes (the responses' JSON) bound the
	// stored responses, the least recently used removed first; zero is
	// DefaultMaxResponses, DefaultMaxResponseBytes.
	MaxResponses     int
	MaxResponseBytes int64
	// Now is the clock of the responses' time to live (tests); nil is
	// time.Now.
	Now func() time.Time
}

// Store is the SQLite backend; it implements storage.Store.
type Store struct {
	// The memories, vector stores, file rows and replays are the SQL
	// shared with postgres (storage.SQLCore), run through driver.
	*storage.SQLCore[*sql.Tx]
	dir    string
	files  string // dir/files
	w      *sql.DB
	r      *sql.DB
	log    *slog.Logger
	index  *vecindex.Index
	wmu    sync.Mutex // serialises writes and the index updates after them
	lock   *os.File   // the data directory's lock, held until Close
	closed chan struct{}
	once   sync.Once
	// commonDocs is the document count over which a query word is left
	// out of a full-text search of an index of total chunks.
	commonDocs func(total int) int
	// resp is the stored responses' bounds, counts and write queue
	// (responses.go).
	resp *responseState
}

var _ storage.Store = (*Store)(nil)

// dbName is the database file in the data directory.
const dbName = "junction.db"

// Open opens (creating when needed) the store in dir: dir itself (0700),
// dir/junction.db and dir/files. It migrates the schema, removes upload
// leftovers and loads the vector index.
func Open(ctx context.Context, dir string, o Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("sqlite: the data directory is empty; set global.storage.dir or --data-dir")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	files := filepath.Join(dir, "files")
	if err := os.MkdirAll(files, 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create the data directory: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, dbName)
	w, err := openDB(path, 1)
	if err != nil {
		unlock(lock)
		return nil, err
	}
	s := &Store{dir: dir, files: files, w: w, lock: lock, log: log, index: vecindex.New(), closed: make(chan struct{}), commonDocs: defaultCommonDocs}
	if err := s.migrate(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	s.r, err = openDB(path, 4)
	if err != nil {
		s.closeDBs()
		return nil, err
	}
	s.SQLCore = storage.NewSQLCore[*sql.Tx]("sqlite", s.r, s.index, log, driver{s})
	if err := s.removeOrphans(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	if err := s.loadIndex(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	if err := s.openResponses(ctx, o); err != nil {
		s.closeDBs()
		return nil, err
	}
	return s, nil
}

func openDB(path string, conns int) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	// A URI filename: escape what would end or alter the path part.
	uriPath := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", "file:"+uriPath+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return db, nil
}

// Close flushes search-time activity and closes the database; calls after
// it fail.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.closeResponses() // commits the queued responses first
		close(s.closed)
		s.wmu.Lock()
		defer s.wmu.Unlock()
		err = s.FlushActive(context.Background(), s.w)
		if e := s.closeDBs(); e != nil && err == nil {
			err = e
		}
	})
	return err
}

func (s *Store) closeDBs() error {
	var err error
	if s.r != nil {
		err = s.r.Close()
	}
	if e := s.w.Close(); e != nil {
		err = e
	}
	unlock(s.lock)
	return err
}

func unlock(f *os.File) {
	if f != nil {
		f.Close() // closing the descriptor drops the flock
	}
}

var errClosed = errors.New("sqlite: the store is closed")

func (s *Store) check(ctx context.Context) error {
	select {
	case <-s.closed:
		return errClosed
	default:
	}
	return ctx.Err()
}

// ---- schema

// schema is the list of migrations; schema version n is schema[:n] applied.
// Append, never edit.
var schema = []string{
	// 1: files, vector stores, their files and chunks, memories.
	`CREATE TABLE files (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		id TEXT NOT NULL UNIQUE,
		filename TEXT NOT NULL,
		purpose TEXT NOT NULL,
		bytes INTEGER NOT NULL,
		sha256 TEXT NOT NULL,
		media_type TEXT NOT NULL,
		created_at INTEGER NOT NULL
	);
	CREATE INDEX files_purpose ON files(purpose, seq);
	CREATE TABLE vector_stores (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		id TEXT NOT NULL UNIQUE,
		name TEXT UNIQUE,
		embedding_model TEXT NOT NULL,
		dimensions INTEGER NOT NULL,
		metadata TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		last_active_at INTEGER NOT NULL
	);
	CREATE TABLE vector_store_files (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		store_id TEXT NOT NULL REFERENCES vector_stores(id) ON DELETE CASCADE,
		file_id TEXT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
		status TEXT NOT NULL,
		last_error_code TEXT NOT NULL DEFAULT '',
		last_error_message TEXT NOT NULL DEFAULT '',
		attributes TEXT NOT NULL,
		max_tokens INTEGER NOT NULL,
		overlap_tokens INTEGER NOT NULL,
		usage_bytes INTEGER NOT NULL DEFAULT 0,
		chunk_count INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL,
		UNIQUE (store_id, file_id)
	);
	CREATE INDEX vector_store_files_file ON vector_store_files(file_id);
	CREATE INDEX vector_store_files_status ON vector_store_files(status, seq);
	CREATE TABLE chunks (
		id INTEGER PRIMARY KEY,
		store_id TEXT NOT NULL,
		file_id TEXT NOT NULL,
		idx INTEGER NOT NULL,
		text TEXT NOT NULL,
		tokens INTEGER NOT NULL,
		vector BLOB NOT NULL,
		UNIQUE (store_id, file_id, idx),
		FOREIGN KEY (store_id, file_id) REFERENCES vector_store_files(store_id, file_id) ON DELETE CASCADE
	);
	CREATE TABLE memories (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		id TEXT NOT NULL UNIQUE,
		scope TEXT NOT NULL,
		text TEXT NOT NULL,
		text_hash TEXT NOT NULL,
		embedding_model TEXT NOT NULL,
		dimensions INTEGER NOT NULL,
		vector BLOB NOT NULL,
		created_at INTEGER NOT NULL,
		UNIQUE (scope, text_hash)
	);
	CREATE INDEX memories_scope ON memories(scope, seq);`,

	// 2: vectors apart from texts, so loading the index at Open reads
	// vectors only (and reading a hit's text skips its vector). chunk_id is
	// the chunk's id; store_id, file_id and idx repeat the chunk's so the
	// load needs no join. A file's chunks have consecutive ids (one
	// transaction inserts them all).
	`CREATE TABLE chunk_vectors (
		chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
		store_id TEXT NOT NULL,
		file_id TEXT NOT NULL,
		idx INTEGER NOT NULL,
		vector BLOB NOT NULL
	);
	INSERT INTO chunk_vectors (chunk_id, store_id, file_id, idx, vector) SELECT id, store_id, file_id, idx, vector FROM chunks ORDER BY id;
	ALTER TABLE chunks DROP COLUMN vector;`,

	// 3: a full-text index of chunk texts for hybrid search (Query.Text):
	// FTS5 over chunks (external content, so the text is stored once),
	// kept in step by triggers in the transactions that insert and delete
	// chunks (foreign-key cascades included), and filled from the chunks
	// there are.
	`CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id', tokenize='porter unicode61');
	CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
		INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
	END;
	CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
		INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
	END;
	CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text ON chunks BEGIN
		INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
		INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
	END;
	INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild');`,

	// 4: the full-text index's vocabulary (a view FTS5 computes, no data):
	// how many chunks hold each term, read by hybrid search to leave out
	// query words so common that ranking their matches would cost more
	// than their small BM25 weight is worth.
	`CREATE VIRTUAL TABLE chunks_fts_terms USING fts5vocab(chunks_fts, row);`,

	// 5: the Responses API's stored responses (responses.go): the response
	// object, its input items and the conversation up to it, as JSON.
	`CREATE TABLE responses (
		id TEXT PRIMARY KEY,
		created_at INTEGER NOT NULL,
		response BLOB NOT NULL,
		input BLOB NOT NULL,
		conversation BLOB NOT NULL
	);
	CREATE INDEX responses_created ON responses(created_at);`,

	// 6: stored responses keep their own turn only (responses.go): the
	// conversation column goes, previous_id links a turn to the one it
	// continued, used_at (Unix milliseconds) is the last use the time to
	// live and the bounds count from, size is the row's bytes (the byte
	// bound). A row of version 5 keeps its whole conversation: its earlier
	// turns (the conversation less its own output items) become its input.
	`CREATE TABLE responses_v6 (
		id TEXT PRIMARY KEY,
		previous_id TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		used_at INTEGER NOT NULL,
		size INTEGER NOT NULL,
		response BLOB NOT NULL,
		input BLOB NOT NULL
	);
	INSERT INTO responses_v6 (id, previous_id, created_at, used_at, size, response, input)
	SELECT id, '', created_at, created_at * 1000, 0, response,
		CAST(coalesce((SELECT json_group_array(json(c.value) ORDER BY c.key) FROM json_each(CAST(r.conversation AS TEXT)) c
			WHERE c.key < json_array_length(CAST(r.conversation AS TEXT)) - coalesce(json_array_length(CAST(r.response AS TEXT), '$.output'), 0)), '[]') AS BLOB)
	FROM responses r;
	UPDATE responses_v6 SET size = length(CAST(id AS BLOB)) + length(response) + length(input);
	DROP TABLE responses;
	ALTER TABLE responses_v6 RENAME TO responses;
	CREATE INDEX responses_used ON responses(used_at);`,

	// 7: router_replay's decision records (size: the record's bytes, the
	// byte bound) and the outcomes submitted on them (storage/replays.go;
	// the same tables as the postgres backend's version 2).
	`CREATE TABLE replays (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		id TEXT NOT NULL UNIQUE,
		request_id TEXT NOT NULL,
		recipe TEXT NOT NULL,
		decision TEXT NOT NULL,
		model TEXT NOT NULL,
		status INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		size INTEGER NOT NULL,
		record BLOB NOT NULL
	);
	CREATE INDEX replays_scope ON replays(recipe, decision, seq);
	CREATE INDEX replays_model ON replays(model, seq);
	CREATE INDEX replays_created ON replays(created_at);
	CREATE INDEX replays_request ON replays(request_id);
	CREATE TABLE replay_outcomes (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		id TEXT NOT NULL UNIQUE,
		replay_id TEXT NOT NULL,
		target TEXT NOT NULL,
		verdict TEXT NOT NULL,
		score REAL,
		source TEXT NOT NULL,
		principal TEXT NOT NULL,
		idempotency_key TEXT NOT NULL,
		category TEXT NOT NULL,
		created_at INTEGER NOT NULL
	);
	CREATE UNIQUE INDEX replay_outcomes_idempotency ON replay_outcomes(principal, idempotency_key) WHERE idempotency_key <> '';
	CREATE INDEX replay_outcomes_target ON replay_outcomes(target, category);`,
}

// migrate brings the schema to the newest version, one transaction per
// version, recorded in PRAGMA user_version.
func (s *Store) migrate(ctx context.Context) error {
	var v int
	if err := s.w.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("sqlite: read the schema version: %w", err)
	}
	if v > len(schema) {
		return fmt.Errorf("sqlite: %s has schema version %d, newer than this build knows (%d); run a newer junction", dbName, v, len(schema))
	}
	for ; v < len(schema); v++ {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("sqlite: migrate: %w", err)
		}
		if _, err := tx.ExecContext(ctx, schema[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlite: migrate to schema version %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlite: migrate to schema version %d: %w", v+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlite: migrate to schema version %d: %w", v+1, err)
		}
	}
	return nil
}

// ---- helpers

func now() time.Time { return time.Now().UTC() }

// isUnique reports a UNIQUE or PRIMARY KEY constraint failure.
func isUnique(err error) bool {
	var e *sqlite3.Error
	if errors.As(err, &e) {
		return e.Code() == 2067 || e.Code() == 1555 // SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY
	}
	return false
}

// tx runs fn in a write transaction under the write mutex; after (may be
// nil) runs after a successful commit, still under the mutex.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error, after func()) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	if after != nil {
		after()
	}
	return nil
}

// driver is what the shared SQL (storage.SQLCore) asks of this backend:
// one process owns the data, so there is no change to log and no store to
// load that the index does not hold.
type driver struct{ s *Store }

func (d driver) Check(ctx context.Context) error { return d.s.check(ctx) }
func (d driver) Write(ctx context.Context, fn func(*sql.Tx) error, after func()) error {
	return d.s.tx(ctx, fn, after)
}
func (d driver) IsUnique(err error) bool                                        { return isUnique(err) }
func (d driver) Changed(context.Context, *sql.Tx, string, string, string) error { return nil }
func (d driver) LoadStore(context.Context, string) error                        { return nil }
func (d driver) InsertChunks(ctx context.Context, tx *sql.Tx, storeID, fileID string, dim int, chunks []storage.Chunk) ([]vecindex.Chunk, error) {
	return insertChunks(ctx, tx, storeID, fileID, dim, chunks)
}
func (d driver) Lexical(ctx context.Context, terms []string, vector []float32, storeIDs []string, n int, allow func(string, string, map[string]any) bool) ([]vecindex.Result, error) {
	return d.s.lexical(ctx, terms, vector, storeIDs, n, allow)
}
