// Package sqlitecache is the response cache's embedded backend
// (global.services.response_cache.backend: embedded): a SQLite file in the
// data directory that survives a restart, behind respcache.Backend.
package sqlitecache

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/respcache"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// File is the embedded backend's file name in the data directory.
const File = "response-cache.db"

// embedded is the backend that survives a restart: every entry is kept in
// a SQLite file (WAL, synchronous=NORMAL: a process crash loses nothing
// committed, a power cut may lose the last commits, which a cache can
// afford) and, for lookups, in an in-memory memstore.Cache loaded at open
// (embeddings included, so a semantic lookup never reads the file).
//
// Writes are behind: a store changes the memory and appends to an ordered
// log of file changes (inserts, and the deletes of every entry the memory
// removes, by eviction, expiry, invalidation or flush), which one writer
// goroutine commits in batches, one transaction each, so a burst of misses
// does not queue on the disk. Invalidate, Flush and Close wait until the log
// is committed. A failed commit keeps the log and is reported by Stats (the
// management API's health) until a later commit succeeds.
type embedded struct {
	path string
	mem  *memstore.Cache
	db   *sql.DB
	now  func() time.Time

	wmu sync.Mutex // a memory change and its log entries, together

	lmu     sync.Mutex
	log     []change // not yet in the file, in order
	lastErr error    // of the last commit, nil once one succeeds

	dmu       sync.Mutex // one commit at a time
	kick      chan struct{}
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// change is one file change: an entry's row (upsert), a delete (row nil),
// or a flush scope's epoch (isEpoch: the scope in ns).
type change struct {
	ns, key string
	row     *row
	isEpoch bool
	epoch   uint64
}

type row struct {
	value, embedding       []byte
	created, expires, used int64
}

// schema are the migrations of the file, applied in order; PRAGMA
// user_version is the number applied.
var schema = []string{
	`CREATE TABLE entries (
		ns        TEXT NOT NULL,
		key       TEXT NOT NULL,
		value     BLOB NOT NULL,
		embedding BLOB,
		created   INTEGER NOT NULL, -- unix nanoseconds
		expires   INTEGER NOT NULL,
		used      INTEGER NOT NULL, -- when last stored; entries load least recent first
		PRIMARY KEY (ns, key)
	) WITHOUT ROWID;
	CREATE INDEX entries_expires ON entries (expires);
	CREATE TABLE epochs (
		scope TEXT PRIMARY KEY,
		epoch INTEGER NOT NULL
	) WITHOUT ROWID;`,
}

// Open opens (creating it) the embedded backend's file at path and
// loads its live entries and flush epochs; expired entries are deleted, and
// entries beyond o's bounds go, least recently stored first. One process
// may use a file at a time (the data directory's lock says so).
func Open(ctx context.Context, path string, o respcache.Options) (respcache.Backend, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	uriPath := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", "file:"+uriPath+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("response cache file %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	b := &embedded{path: path, mem: o.NewCache(), db: db, now: o.Now, kick: make(chan struct{}, 1), done: make(chan struct{})}
	if b.now == nil {
		b.now = time.Now
	}
	if err := b.open(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("response cache file %s: %w (delete the file to start with an empty cache)", path, err)
	}
	b.wg.Add(1)
	go b.writer()
	return b, nil
}

func (b *embedded) open(ctx context.Context) error {
	var v int
	if err := b.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v > len(schema) {
		return fmt.Errorf("schema version %d is newer than this binary's %d", v, len(schema))
	}
	for ; v < len(schema); v++ {
		tx, err := b.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, schema[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	if _, err := b.db.ExecContext(ctx, `DELETE FROM entries WHERE expires <= ?`, b.now().UnixNano()); err != nil {
		return err
	}
	rows, err := b.db.QueryContext(ctx, `SELECT scope, epoch FROM epochs`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var scope string
		var epoch int64
		if err := rows.Scan(&scope, &epoch); err != nil {
			rows.Close()
			return err
		}
		b.mem.SetEpoch(scope, uint64(epoch))
	}
	rows.Close()
	// Evictions while loading (the bounds shrank) are deleted below.
	b.mem.OnRemove = b.removed
	rows, err = b.db.QueryContext(ctx, `SELECT ns, key, value, embedding, created, expires FROM entries ORDER BY used, ns, key`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var ns, key string
		var value, emb []byte
		var created, expires int64
		if err := rows.Scan(&ns, &key, &value, &emb, &created, &expires); err != nil {
			rows.Close()
			return err
		}
		b.mem.Restore(ns, key, value, decodeVector(emb), time.Unix(0, created), time.Unix(0, expires))
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	rows.Close()
	return b.commit(ctx)
}

// removed is memstore's OnRemove: called with the memory's lock held.
func (b *embedded) removed(ns, key string) { b.append(change{ns: ns, key: key}) }

func (b *embedded) append(c change) {
	b.lmu.Lock()
	b.log = append(b.log, c)
	b.lmu.Unlock()
}

// writer commits the log whenever it grows, until Close.
func (b *embedded) writer() {
	defer b.wg.Done()
	for {
		select {
		case <-b.kick:
			_ = b.commit(context.Background())
		case <-b.done:
			return
		}
	}
}

func (b *embedded) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// commit writes the log to the file in one transaction; on failure the log
// is kept (in order) for the next commit.
func (b *embedded) commit(ctx context.Context) error {
	b.dmu.Lock()
	defer b.dmu.Unlock()
	b.lmu.Lock()
	log := b.log
	b.log = nil
	b.lmu.Unlock()
	if len(log) == 0 {
		return nil
	}
	err := b.apply(ctx, log)
	b.lmu.Lock()
	if err != nil {
		b.log = append(log, b.log...)
		b.lastErr = fmt.Errorf("response cache file %s: %d changes not written: %w", b.path, len(b.log), err)
		err = b.lastErr
	} else {
		b.lastErr = nil
	}
	b.lmu.Unlock()
	return err
}

func (b *embedded) apply(ctx context.Context, log []change) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	del, err := tx.PrepareContext(ctx, `DELETE FROM entries WHERE ns = ? AND key = ?`)
	if err != nil {
		return err
	}
	defer del.Close()
	put, err := tx.PrepareContext(ctx, `INSERT INTO entries (ns, key, value, embedding, created, expires, used) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, embedding = excluded.embedding,
		created = excluded.created, expires = excluded.expires, used = excluded.used`)
	if err != nil {
		return err
	}
	defer put.Close()
	for _, c := range log {
		switch {
		case c.isEpoch:
			_, err = tx.ExecContext(ctx, `INSERT INTO epochs (scope, epoch) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET epoch = excluded.epoch`, c.ns, int64(c.epoch))
		case c.row == nil:
			_, err = del.ExecContext(ctx, c.ns, c.key)
		default:
			r := c.row
			_, err = put.ExecContext(ctx, c.ns, c.key, r.value, r.embedding, r.created, r.expires, r.used)
		}
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Lookup implements hostapi.Cache: from memory only.
func (b *embedded) Lookup(ctx context.Context, ns, key string, embedding []float32, threshold float32) (abi.CacheEntry, bool, error) {
	return b.mem.Lookup(ctx, ns, key, embedding, threshold)
}

// Store implements hostapi.Cache: the entry is in memory when it returns,
// and in the file once the writer committed it (Close waits for that).
func (b *embedded) Store(ctx context.Context, ns, key string, value []byte, ttl time.Duration, embedding []float32) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if err := b.mem.Store(ctx, ns, key, value, ttl, embedding); err != nil {
		return err
	}
	// Evicted at once (larger than the byte bound): its delete is logged.
	if created, expires, ok := b.mem.Times(ns, key); ok {
		b.append(change{ns: ns, key: key, row: &row{value: value, embedding: encodeVector(embedding),
			created: created.UnixNano(), expires: expires.UnixNano(), used: b.now().UnixNano()}})
	}
	b.wake()
	return nil
}

func (b *embedded) Counts() (respcache.Counts, int) { return b.mem.Counts() }

// Flushes is the number of flushes since the backend was opened.
func (b *embedded) Flushes() uint64 { return b.mem.Flushes() }

// Stats are the memory's; the error is the last failed commit's, until one
// succeeds.
func (b *embedded) Stats(topN int) (respcache.Stats, error) {
	b.lmu.Lock()
	err := b.lastErr
	b.lmu.Unlock()
	return b.mem.Stats(topN), err
}

func (b *embedded) Invalidate(f respcache.Filter, dryRun bool) (int, int, error) {
	b.wmu.Lock()
	n, nss := b.mem.Invalidate(f, dryRun)
	b.wmu.Unlock()
	if dryRun {
		return n, nss, nil
	}
	return n, nss, b.commit(context.Background())
}

func (b *embedded) Flush(f respcache.Filter) (uint64, int, error) {
	b.wmu.Lock()
	epoch, n := b.mem.Flush(f)
	b.append(change{ns: f.Scope(), isEpoch: true, epoch: epoch})
	b.wmu.Unlock()
	return epoch, n, b.commit(context.Background())
}

// Retain removes the namespaces keep refuses from memory (their rows are
// deleted by the writer, through OnRemove) and commits.
func (b *embedded) Retain(keep func(string) bool) (int, error) {
	b.wmu.Lock()
	n := b.mem.Retain(keep)
	b.wmu.Unlock()
	return n, b.commit(context.Background())
}

func (b *embedded) Info() respcache.Info {
	info := respcache.Memory(b.mem).Info()
	info.Name, info.Persistent, info.Path = respcache.BackendEmbedded, true, b.path
	return info
}

// Close stops the writer, commits what is left of the log and closes the
// file; calling it again does nothing.
func (b *embedded) Close() error {
	b.closeOnce.Do(func() {
		close(b.done)
		b.wg.Wait()
		err := b.commit(context.Background())
		b.closeErr = errors.Join(err, b.db.Close())
	})
	return b.closeErr
}

func encodeVector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

func decodeVector(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
