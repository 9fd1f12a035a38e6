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
// committed, a power cut may lose the last stores, which a cache can
// afford) and, for lookups, in an in-memory memstore.Cache loaded at open
// (embeddings included, so a semantic lookup never reads the file). Writes
// go to both under one mutex; removals the memory makes on its own
// (eviction, expiry met by a lookup) are queued and deleted from the file
// with the next write.
type embedded struct {
	path string
	mem  *memstore.Cache
	db   *sql.DB
	now  func() time.Time

	wmu sync.Mutex // serialises writes (memory and file together)

	pmu     sync.Mutex
	pending []nsKey // removed from memory, still in the file
}

type nsKey struct{ ns, key string }

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
	b := &embedded{path: path, mem: o.NewCache(), db: db, now: o.Now}
	if b.now == nil {
		b.now = time.Now
	}
	if err := b.open(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("response cache file %s: %w (delete the file to start with an empty cache)", path, err)
	}
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
	b.wmu.Lock()
	defer b.wmu.Unlock()
	return b.write(ctx, nil)
}

// removed is memstore's OnRemove: called with the memory's lock held.
func (b *embedded) removed(ns, key string) {
	b.pmu.Lock()
	b.pending = append(b.pending, nsKey{ns, key})
	b.pmu.Unlock()
}

// write deletes the pending removals and runs then (if any) in one
// transaction (b.wmu held).
func (b *embedded) write(ctx context.Context, then func(*sql.Tx) error) error {
	b.pmu.Lock()
	pending := b.pending
	b.pending = nil
	b.pmu.Unlock()
	if len(pending) == 0 && then == nil {
		return nil
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		b.requeue(pending)
		return err
	}
	fail := func(err error) error {
		tx.Rollback()
		b.requeue(pending)
		return err
	}
	if len(pending) > 0 {
		del, err := tx.PrepareContext(ctx, `DELETE FROM entries WHERE ns = ? AND key = ?`)
		if err != nil {
			return fail(err)
		}
		for _, p := range pending {
			if _, err := del.ExecContext(ctx, p.ns, p.key); err != nil {
				del.Close()
				return fail(err)
			}
		}
		del.Close()
	}
	if then != nil {
		if err := then(tx); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.requeue(pending)
		return err
	}
	return nil
}

func (b *embedded) requeue(p []nsKey) {
	b.pmu.Lock()
	b.pending = append(p, b.pending...)
	b.pmu.Unlock()
}

// Lookup implements hostapi.Cache: from memory only.
func (b *embedded) Lookup(ctx context.Context, ns, key string, embedding []float32, threshold float32) (abi.CacheEntry, bool, error) {
	return b.mem.Lookup(ctx, ns, key, embedding, threshold)
}

// Store implements hostapi.Cache: the entry is in the file when it returns.
func (b *embedded) Store(ctx context.Context, ns, key string, value []byte, ttl time.Duration, embedding []float32) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if err := b.mem.Store(ctx, ns, key, value, ttl, embedding); err != nil {
		return err
	}
	created, expires, ok := b.mem.Times(ns, key)
	if !ok { // evicted at once (larger than the byte bound): nothing to keep
		return b.write(ctx, nil)
	}
	err := b.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO entries (ns, key, value, embedding, created, expires, used) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, embedding = excluded.embedding,
			created = excluded.created, expires = excluded.expires, used = excluded.used`,
			ns, key, value, encodeVector(embedding), created.UnixNano(), expires.UnixNano(), b.now().UnixNano())
		return err
	})
	if err != nil {
		// Memory and file must agree: without its row the entry goes.
		b.mem.Delete(ns, key)
		return fmt.Errorf("response cache file %s: %w", b.path, err)
	}
	return nil
}

func (b *embedded) Counts() (respcache.Counts, int) { return b.mem.Counts() }

func (b *embedded) Stats(topN int) (respcache.Stats, error) { return b.mem.Stats(topN), nil }

func (b *embedded) Invalidate(f respcache.Filter, dryRun bool) (int, int, error) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	n, nss := b.mem.Invalidate(f, dryRun)
	if dryRun {
		return n, nss, nil
	}
	return n, nss, b.write(context.Background(), nil)
}

func (b *embedded) Flush(f respcache.Filter) (uint64, int, error) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	epoch, n := b.mem.Flush(f)
	err := b.write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO epochs (scope, epoch) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET epoch = excluded.epoch`, f.Scope(), int64(epoch))
		return err
	})
	return epoch, n, err
}

func (b *embedded) Info() respcache.Info {
	info := respcache.Memory(b.mem).Info()
	info.Name, info.Persistent, info.Path = respcache.BackendEmbedded, true, b.path
	return info
}

// Close deletes what memory removed since the last write and closes the
// file.
func (b *embedded) Close() error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	err := b.write(context.Background(), nil)
	return errors.Join(err, b.db.Close())
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
