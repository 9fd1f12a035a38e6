// Package rediscache is the response cache's shared backend
// (global.state.backend: redis): every replica's entries live in one Redis,
// so an answer cached by one replica is a hit on the next.
//
// Redis has no vector search without a module, so each replica keeps a
// bounded in-process index of the entries (a memstore.Cache with the same
// bounds as the memory backend: keys, values and embeddings), fed from
// Redis: loaded at open, then kept current by a change stream every
// replica appends to and reads (a blocking XREAD). What is in Redis:
//
//   - an entry per key, one string (created, expires, last use, embedding,
//     value: see encodeRow) with a Redis TTL of the entry's time to live,
//     so a store is one SET and a read one GET;
//   - the flush epochs, one hash (scope → epoch) advanced with HINCRBY, so
//     every replica's flush of a scope counts once;
//   - the change stream (trimmed to about streamLen changes): a store
//     names the entry, a flush or invalidation carries its filter, an
//     eviction names the entry.
//
// On a Redis Cluster the entries spread over the shards (their keys carry
// no hash tag); the epochs hash and the stream are single keys. No command
// names keys of more than one entry: reads and deletes of several entries
// are pipelined single-key commands, which the cluster client sends to
// each key's node, and the load and the flushes scan every master.
//
// Consistency. A store is in Redis when Store returns (one pipelined round
// trip; on a cluster two, the entry then its change, so no replica reads
// the change before the entry), so an exact lookup on any replica finds it
// at once: a key missing from the local index is read from Redis before
// the lookup counts a miss.
// Semantic lookups search the local index only, so an entry another
// replica stored answers them once the stream delivered it (the
// replication lag: a round trip after a quiet spell; while changes flow,
// which the follower gathers, at most gather, 5 ms, and a round trip).
// Flushes and invalidations remove the matching entries from Redis before
// they return and reach the other replicas' indexes within the same lag; a
// flush is refused (an error) while Redis does not answer, so none is half
// done quietly. The bounds apply per replica: each index evicts its least
// recently used entries and deletes them from Redis, so with several
// replicas the cache may hold fewer entries than the bound, never more.
//
// The request path. An exact lookup of a key the index lacks is one GET;
// a request whose rate-limit take is held back (redisstate.Deferred, see
// internal/ratelimit/redisstore) sends the take in the same pipeline, so a
// miss costs one round trip for both, and a refused request's lookup is a
// miss that counts nothing.
//
// Redis down: a lookup is answered from the local index (a miss for
// entries it does not hold), a store is kept locally and not shared, both
// counted in junction_state_errors_total{feature="response_cache"} and
// logged at most every few seconds; for a second after a failure Redis is
// not tried again, so a request does not wait on a dead server. No request
// fails because of it.
package rediscache

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/state/redisstate"
)

// Feature is the feature label of this backend's errors in
// junction_state_errors_total.
const Feature = "response_cache"

// Tuning.
const (
	// streamLen is about how many changes the stream keeps: a replica
	// whose reads stall longer than that many changes misses some (it
	// keeps the entries until their TTL; see the package comment).
	streamLen = 100000
	// block is how long one stream read waits for changes: Close waits
	// for it at most this long.
	block = 100 * time.Millisecond
	// opTimeout bounds a lookup's or store's Redis round trip.
	opTimeout = 250 * time.Millisecond
	// pause is how long Redis is not tried after a failure.
	pause = time.Second
	// loadBatch is how many entries one round trip of the load reads.
	loadBatch = 500
	// gather is how long the follower waits after a read that brought
	// changes before it reads again, so that the changes arriving
	// meanwhile come in one read: under load every store wakes every
	// follower, the storing replica's own too (which skips the change),
	// and each wake-up is a reply to parse and a new blocking XREAD on
	// both sides, competing with requests for the CPUs. A change is thus
	// in every index at most gather and a round trip after it was
	// streamed (the first after a quiet spell at once: the blocked read
	// returns with it). A read that brought readCount changes reads again
	// at once: more are waiting.
	gather = 5 * time.Millisecond
	// readCount is the most changes one stream read returns.
	readCount = 256
)

// Backend is the Redis response cache. Safe for concurrent use.
type Backend struct {
	c    *redisstate.Client
	mem  *memstore.Cache
	now  func() time.Time
	id   string // this replica's, to skip its own changes in the stream
	keys keys
	// streamArg and idArg are keys.stream and id boxed once, for a store's
	// XADD (stored).
	streamArg, idArg any

	wmu        sync.Mutex  // local changes whose removals are shared (collect)
	collecting atomic.Bool // OnRemove records removals (wmu held)
	pmu        sync.Mutex
	pending    []string // members removed while collecting

	downUntil atomic.Int64 // unix ns: Redis is not tried before
	lastErr   atomic.Pointer[error]

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

type keys struct{ entry, epochs, stream string }

var _ respcache.Backend = (*Backend)(nil)

// Open opens the backend on c (which it does not close): it loads the flush
// epochs and the live entries from Redis into the local index (the least
// recently used first, so o's bounds keep the most recent), and follows the
// change stream until Close. A Redis that does not answer is logged and
// counted, not an error: the index starts empty and is loaded once Redis
// answers.
func Open(ctx context.Context, c *redisstate.Client, o respcache.Options) *Backend {
	var rid [8]byte
	_, _ = rand.Read(rid[:])
	b := &Backend{c: c, mem: o.NewCache(), now: o.Now, id: hex.EncodeToString(rid[:]),
		keys: keys{entry: c.Prefix + "cache:e:", epochs: c.Prefix + "cache:epochs", stream: c.Prefix + "cache:log"},
		done: make(chan struct{})}
	if b.now == nil {
		b.now = time.Now
	}
	b.streamArg, b.idArg = b.keys.stream, b.id
	b.mem.OnRemove = b.removed
	from, err := b.load(ctx)
	if err != nil {
		b.failed("load", err)
		from = "$" // follow loads once Redis answers
	}
	rctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go b.follow(rctx, from)
	return b
}

// member is an entry's name in the stream: namespace NUL key.
func member(ns, key string) string { return ns + "\x00" + key }

func splitMember(m string) (ns, key string, ok bool) { return strings.Cut(m, "\x00") }

func (b *Backend) entryKey(m string) string { return b.keys.entry + m }

// removed is memstore's OnRemove (its lock held): while a local change
// collects, the entry's removal is shared.
func (b *Backend) removed(ns, key string) {
	if !b.collecting.Load() {
		return
	}
	b.pmu.Lock()
	b.pending = append(b.pending, member(ns, key))
	b.pmu.Unlock()
}

// local runs f, a change of the index whose removals are shared, and
// returns the members it removed.
func (b *Backend) local(f func()) []string {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.collecting.Store(true)
	f()
	b.collecting.Store(false)
	b.pmu.Lock()
	out := b.pending
	b.pending = nil
	b.pmu.Unlock()
	return out
}

// up reports whether Redis may be tried now.
func (b *Backend) up() bool { return time.Now().UnixNano() >= b.downUntil.Load() }

// failed counts and logs a failure of op and pauses Redis use, unless the
// caller gave up (its context ended), which says nothing of Redis.
func (b *Backend) failed(op string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	b.c.Failed(Feature, op, err)
	b.downUntil.Store(time.Now().Add(pause).UnixNano())
	e := fmt.Errorf("redis at %s (global.state.redis) does not answer: %w; the response cache serves this replica's entries only until it does", b.c.Addr(), err)
	b.lastErr.Store(&e)
}

func (b *Backend) ok() { b.lastErr.Store(nil) }

// row is an entry as Redis keeps it: one string (encode), so a store is
// one SET with its TTL and a read one GET.
type row struct {
	ns, key                string
	value, emb             []byte
	created, expires, used int64
}

// The string's layout: rowVersion, created, expires and last use (unix
// ns, little endian), the embedding's length in floats (uint32), the
// embedding (float32s), the value. created comes first, so a filter of
// age reads 9 bytes (GETRANGE).
const (
	rowVersion = 1
	rowHeader  = 1 + 3*8 + 4
)

func encodeRow(value []byte, emb []float32, created, expires, used int64) []byte {
	out := make([]byte, rowHeader+4*len(emb)+len(value))
	out[0] = rowVersion
	binary.LittleEndian.PutUint64(out[1:], uint64(created))
	binary.LittleEndian.PutUint64(out[9:], uint64(expires))
	binary.LittleEndian.PutUint64(out[17:], uint64(used))
	binary.LittleEndian.PutUint32(out[25:], uint32(len(emb)))
	for i, x := range emb {
		binary.LittleEndian.PutUint32(out[rowHeader+4*i:], math.Float32bits(x))
	}
	copy(out[rowHeader+4*len(emb):], value)
	return out
}

// parseRow decodes the string of member m; ok is false for none (or one of
// another layout, which a later store replaces).
func parseRow(m, s string) (row, bool) {
	ns, key, ok := splitMember(m)
	if !ok || len(s) < rowHeader || s[0] != rowVersion {
		return row{}, false
	}
	b := []byte(s)
	n := int(binary.LittleEndian.Uint32(b[25:]))
	if len(b) < rowHeader+4*n {
		return row{}, false
	}
	return row{ns: ns, key: key, created: int64(binary.LittleEndian.Uint64(b[1:])), expires: int64(binary.LittleEndian.Uint64(b[9:])),
		used: int64(binary.LittleEndian.Uint64(b[17:])), emb: b[rowHeader : rowHeader+4*n], value: b[rowHeader+4*n:]}, true
}

// restore puts r into the index unless it expired by the index's clock.
func (b *Backend) restore(r row) {
	b.mem.Restore(r.ns, r.key, r.value, decodeVector(r.emb), time.Unix(0, r.created), time.Unix(0, r.expires))
}

// load reads the epochs and the entries into the index and returns the
// stream position to follow from (taken first: a change made while loading
// is applied again, which is harmless).
func (b *Backend) load(ctx context.Context) (string, error) {
	from := "0-0"
	last, err := b.c.XRevRangeN(ctx, b.keys.stream, "+", "-", 1).Result()
	if err != nil {
		return "$", err
	}
	if len(last) == 1 {
		from = last[0].ID
	}
	epochs, err := b.c.HGetAll(ctx, b.keys.epochs).Result()
	if err != nil {
		return from, err
	}
	for scope, v := range epochs {
		if e, err := strconv.ParseUint(v, 10, 64); err == nil {
			b.mem.SetEpoch(scope, e)
		}
	}
	var rows []row
	var batch []string
	read := func() error {
		if len(batch) == 0 {
			return nil
		}
		vals, err := b.getMany(ctx, batch)
		if err != nil {
			return err
		}
		for i, v := range vals {
			if r, ok := parseRow(strings.TrimPrefix(batch[i], b.keys.entry), v); ok {
				rows = append(rows, r)
			}
		}
		batch = batch[:0]
		return nil
	}
	err = b.c.ScanKeys(ctx, escapeGlob(b.keys.entry)+"*", 1000, func(keys []string) error {
		for _, k := range keys {
			if batch = append(batch, k); len(batch) == loadBatch {
				if err := read(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return from, err
	}
	if err := read(); err != nil {
		return from, err
	}
	slices.SortFunc(rows, func(x, y row) int {
		return cmp.Or(cmp.Compare(x.used, y.used), strings.Compare(x.ns, y.ns), strings.Compare(x.key, y.key))
	})
	// Entries the bounds push out at load are deleted from Redis: a
	// smaller bound holds for the shared cache too.
	evicted := b.local(func() {
		for _, r := range rows {
			b.restore(r)
		}
	})
	return from, b.share(ctx, evicted)
}

// getMany reads the strings of keys ("" for those missing): one GET a key,
// pipelined (on a cluster, to each key's node), where an MGET would be
// refused across slots.
func (b *Backend) getMany(ctx context.Context, keys []string) ([]string, error) {
	cmds, _ := b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Get(ctx, k)
		}
		return nil
	})
	out := make([]string, len(cmds))
	for i, c := range cmds {
		// Each command's own error: on a cluster one node may fail
		// while another answers (a missing key is redis.Nil, not one).
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		out[i] = c.(*redis.StringCmd).Val()
	}
	return out, nil
}

// delMany deletes keys: one DEL a key, pipelined, as getMany reads.
func (b *Backend) delMany(ctx context.Context, keys []string) error {
	_, err := b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
	return err
}

// share deletes removed members from Redis and tells the other replicas.
func (b *Backend) share(ctx context.Context, removed []string) error {
	if len(removed) == 0 {
		return nil
	}
	return b.write(ctx, func(p redis.Pipeliner) {
		for _, m := range removed {
			p.Del(ctx, b.entryKey(m))
		}
	}, func(p redis.Pipeliner) {
		for _, m := range removed {
			b.publish(ctx, p, "t", "d", "m", m)
		}
	})
}

// write applies entry writes, then appends the changes that announce them
// to the stream, so a replica that reads a change finds the write done.
// With one server that is one pipeline (one connection runs it in order);
// on a cluster the entries and the stream are on different nodes, which a
// pipeline writes in parallel, so the changes go in a second round trip
// once the writes are acknowledged.
func (b *Backend) write(ctx context.Context, writes, changes func(p redis.Pipeliner)) error {
	if !b.c.Cluster() {
		_, err := b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			writes(p)
			changes(p)
			return nil
		})
		return err
	}
	if _, err := b.c.Pipelined(ctx, func(p redis.Pipeliner) error { writes(p); return nil }); err != nil {
		return err
	}
	_, err := b.c.Pipelined(ctx, func(p redis.Pipeliner) error { changes(p); return nil })
	return err
}

// publish appends a change to the stream.
func (b *Backend) publish(ctx context.Context, p redis.Pipeliner, fields ...string) {
	v := append([]string{"o", b.id}, fields...)
	p.XAdd(ctx, &redis.XAddArgs{Stream: b.keys.stream, MaxLen: streamLen, Approx: true, Values: v})
}

// Lookup implements hostapi.Cache: from the local index, after reading a
// key it does not hold from Redis (another replica's store, not yet
// streamed here).
//
// A request whose context holds back a command for Redis
// (redisstate.Deferred: the rate limiter's take) sends it with that read,
// one round trip for both, or alone first when there is nothing to read;
// when its verdict refuses the request the lookup is a miss that touches
// nothing (no count, no entry's use), as if the request never reached the
// cache.
func (b *Backend) Lookup(ctx context.Context, ns, key string, embedding []float32, threshold float32) (abi.CacheEntry, bool, error) {
	d := redisstate.DeferredFrom(ctx)
	if key != "" && b.up() {
		if _, _, held := b.mem.Times(ns, key); !held {
			if !b.fetch(ctx, d, ns, key) {
				return abi.CacheEntry{}, false, nil
			}
		}
	}
	if pass, _ := d.Send(); !pass {
		return abi.CacheEntry{}, false, nil
	}
	return b.mem.Lookup(ctx, ns, key, embedding, threshold)
}

// fetch reads the entry of ns and key from Redis into the index, with d
// (see Lookup; carried, the pipeline runs under d's context and the take's
// deadline, not opTimeout), and returns d's verdict. Its key is built once:
// the member is the key's tail.
func (b *Backend) fetch(ctx context.Context, d *redisstate.Deferred, ns, key string) bool {
	g := &get{key: b.keys.entry + ns + "\x00" + key}
	m := g.key[len(b.keys.entry):]
	g.args = [2]any{"get", &g.key}
	var v string
	var err error
	if d == nil {
		ctx, cancel := redisstate.Bound(ctx, opTimeout)
		g.cmd = *redis.NewStringCmd(ctx, g.args[:]...)
		_ = b.c.Process(ctx, &g.cmd)
		v, err = g.cmd.Result()
		cancel()
	} else {
		g.cmd = *redis.NewStringCmd(ctx, g.args[:]...)
		if pass, _ := d.Pipelined(ctx, b.c, opTimeout, func(p redis.Pipeliner) { _ = p.Process(ctx, &g.cmd) }); !pass {
			return false
		}
		v, err = g.cmd.Result()
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		b.failed("lookup", err)
		return true
	}
	b.ok()
	if r, ok := parseRow(m, v); ok {
		b.restore(r)
	}
	return true
}

// get is a lookup's GET as go-redis's Get writes it, in one allocation:
// the key is a pointer into it (go-redis writes a *string as its value),
// where Get boxed the key and built the arguments and the command apart.
type get struct {
	key  string
	args [2]any
	cmd  redis.StringCmd
}

// Store implements hostapi.Cache: the entry is in the local index, and in
// Redis (with the change streamed) when it returns nil; while Redis does
// not answer it is kept locally only (counted, logged, nil error: a cache
// store is not worth failing a request for).
func (b *Backend) Store(ctx context.Context, ns, key string, value []byte, ttl time.Duration, embedding []float32) error {
	var err error
	evicted := b.local(func() { err = b.mem.Store(ctx, ns, key, value, ttl, embedding) })
	if err != nil {
		return err
	}
	created, expires, ok := b.mem.Times(ns, key)
	if !b.up() || (!ok && len(evicted) == 0) {
		return nil
	}
	ctx, cancel := redisstate.Bound(ctx, opTimeout)
	defer cancel()
	var st *stored
	var m string // the entry's member, which its evictions skip
	if ok {
		// At least a millisecond: Redis takes no shorter TTL, and 0 would be none.
		st = b.newStored(ctx, ns, key, encodeRow(value, embedding, created.UnixNano(), expires.UnixNano(), b.now().UnixNano()), max(expires.Sub(created), time.Millisecond))
		m = st.member
	} else { // evicted at once (larger than the byte bound)
		m = member(ns, key)
	}
	if ok && len(evicted) == 0 && !b.c.Cluster() {
		// The common store: both commands queued at once, so the pipeline's
		// list of commands is one allocation of two, not one of one grown.
		_, err = b.c.Pipelined(ctx, func(p redis.Pipeliner) error { return p.BatchProcess(ctx, st.cmds[:]...) })
		if err != nil {
			b.failed("store", err)
			return nil
		}
		b.ok()
		return nil
	}
	err = b.write(ctx, func(p redis.Pipeliner) {
		if ok {
			_ = p.Process(ctx, &st.setCmd)
		}
		for _, e := range evicted {
			if e != m {
				p.Del(ctx, b.entryKey(e))
			}
		}
	}, func(p redis.Pipeliner) {
		if ok {
			_ = p.Process(ctx, &st.xaddCmd)
		}
		for _, e := range evicted {
			if e != m {
				b.publish(ctx, p, "t", "d", "m", e)
			}
		}
	})
	if err != nil {
		b.failed("store", err)
		return nil
	}
	b.ok()
	return nil
}

// stored is a store's two commands, the entry's SET with its TTL and the
// XADD of its change, as go-redis's Set and XAdd would write them, built in
// one allocation: the key, the member, the row and the TTL are pointers
// into it (go-redis writes a *string and an *int64 as their values, and
// the row as an encoding.BinaryMarshaler), and the stream's name and this
// replica's id are boxed once per backend (Open), where Set and XAdd
// boxed every argument and XAdd's fields were copied twice.
type stored struct {
	key, member string
	row         rowBytes
	ttl         int64
	set         [5]any
	xadd        [12]any
	// The commands themselves, in the same allocation (go-redis's
	// NewStatusCmd and NewStringCmd allocate one each).
	setCmd  redis.StatusCmd
	xaddCmd redis.StringCmd
	cmds    [2]redis.Cmder // both, queued at once: no variadic slice of their own
}

// rowBytes is an entry's row as a command's argument: a pointer to it is
// boxed without copying the slice header.
type rowBytes []byte

func (r *rowBytes) MarshalBinary() ([]byte, error) { return *r, nil }

// argStreamLen is XADD's MAXLEN, boxed once.
var argStreamLen = any(int64(streamLen))

// newStored is the commands that store row as the entry of ns and key for
// ttl (at least a millisecond): PX in milliseconds, or EX in seconds for a
// whole number of them, as go-redis's Set chooses.
func (b *Backend) newStored(ctx context.Context, ns, key string, row []byte, ttl time.Duration) *stored {
	st := &stored{key: b.keys.entry + ns + "\x00" + key, row: row}
	st.member = st.key[len(b.keys.entry):]
	unit := any("px")
	if st.ttl = int64(ttl / time.Millisecond); ttl >= time.Second && ttl%time.Second == 0 {
		unit, st.ttl = "ex", int64(ttl/time.Second)
	}
	st.set = [5]any{"set", &st.key, &st.row, unit, &st.ttl}
	st.xadd = [12]any{"xadd", b.streamArg, "maxlen", "~", argStreamLen, "*", "o", b.idArg, "t", "s", "m", &st.member}
	st.setCmd, st.xaddCmd = *redis.NewStatusCmd(ctx, st.set[:]...), *redis.NewStringCmd(ctx, st.xadd[:]...)
	st.cmds = [2]redis.Cmder{&st.setCmd, &st.xaddCmd}
	return st
}

// Counts are this replica's lookups and removals and its index's entries.
func (b *Backend) Counts() (respcache.Counts, int) { return b.mem.Counts() }

// Flushes is the number of flushes this replica applied (its own and the
// others', as streamed): respcache.Scoped drops the stores of requests
// that looked up before one.
func (b *Backend) Flushes() uint64 { return b.mem.Flushes() }

// Stats are the local index's; the error says Redis does not answer (the
// cache's health is degraded) until a round trip succeeds.
func (b *Backend) Stats(topN int) (respcache.Stats, error) {
	var err error
	if e := b.lastErr.Load(); e != nil {
		err = *e
	}
	return b.mem.Stats(topN), err
}

// redisOp runs f against Redis, failing at once while Redis is paused.
func (b *Backend) redisOp(op string, f func(ctx context.Context) error) error {
	if !b.up() {
		if e := b.lastErr.Load(); e != nil {
			return *e
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f(ctx); err != nil {
		b.failed(op, err)
		return fmt.Errorf("response cache %s on redis at %s: %w (retry once Redis answers)", op, b.c.Addr(), err)
	}
	b.ok()
	return nil
}

// Invalidate removes the entries f selects from Redis and every replica's
// index; the counts are this replica's index's (a dry run counts only).
func (b *Backend) Invalidate(f respcache.Filter, dryRun bool) (int, int, error) {
	if dryRun {
		n, nss := b.mem.Invalidate(f, true)
		return n, nss, nil
	}
	fj, _ := json.Marshal(f)
	err := b.redisOp("invalidate", func(ctx context.Context) error {
		if err := b.deleteSelected(ctx, f); err != nil {
			return err
		}
		_, err := b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			b.publish(ctx, p, "t", "i", "f", string(fj))
			return nil
		})
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	n, nss := b.mem.Invalidate(f, false)
	return n, nss, nil
}

// Flush advances the scope's epoch in Redis (once, whichever replica
// flushes), removes the entries f selects from Redis and this index, and
// streams the flush to the other replicas.
func (b *Backend) Flush(f respcache.Filter) (uint64, int, error) {
	scope := f.Scope()
	fj, _ := json.Marshal(f)
	var epoch int64
	err := b.redisOp("flush", func(ctx context.Context) error {
		var err error
		if epoch, err = b.c.HIncrBy(ctx, b.keys.epochs, scope, 1).Result(); err != nil {
			return err
		}
		if err := b.deleteSelected(ctx, f); err != nil {
			return err
		}
		_, err = b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			b.publish(ctx, p, "t", "f", "f", string(fj), "s", scope, "e", strconv.FormatInt(epoch, 10))
			return nil
		})
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	_, n := b.mem.Flush(f)
	b.mem.SetEpoch(scope, uint64(epoch))
	return uint64(epoch), n, nil
}

// deleteSelected deletes the entries f selects from Redis, also those this
// replica's index does not hold.
func (b *Backend) deleteSelected(ctx context.Context, f respcache.Filter) error {
	var batch []string
	del := func() error {
		if len(batch) == 0 {
			return nil
		}
		var created []string // with OlderThan: each entry's header, "" when gone
		if !f.OlderThan.IsZero() {
			cmds, err := b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range batch {
					p.GetRange(ctx, k, 0, rowHeader-1)
				}
				return nil
			})
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			for _, c := range cmds {
				created = append(created, c.(*redis.StringCmd).Val())
			}
		}
		var gone []string
		for i, k := range batch {
			ns, key, _ := splitMember(strings.TrimPrefix(k, b.keys.entry))
			at := time.Time{}
			if created != nil {
				h := created[i]
				if len(h) < 9 || h[0] != rowVersion {
					continue // gone meanwhile
				}
				at = time.Unix(0, int64(binary.LittleEndian.Uint64([]byte(h[1:9]))))
			}
			if f.Selects(ns, key, at) {
				gone = append(gone, k)
			}
		}
		batch = batch[:0]
		if len(gone) == 0 {
			return nil
		}
		return b.delMany(ctx, gone)
	}
	err := b.c.ScanKeys(ctx, escapeGlob(b.keys.entry+f.NamespacePrefix)+"*", 1000, func(keys []string) error {
		for _, k := range keys {
			if batch = append(batch, k); len(batch) == loadBatch {
				if err := del(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return del()
}

// Retain removes the namespaces keep refuses from this index and deletes
// the entries removed from Redis, without telling the other replicas: a
// replica still serving the replaced configuration (a rolling update)
// keeps answering from its own index, and each replica's sweeper retains
// what its own configuration serves.
func (b *Backend) Retain(keep func(string) bool) (int, error) {
	var n int
	removed := b.local(func() { n = b.mem.Retain(keep) })
	if len(removed) == 0 {
		return n, nil
	}
	err := b.redisOp("retain", func(ctx context.Context) error {
		for chunk := range slices.Chunk(removed, loadBatch) {
			ks := make([]string, len(chunk))
			for i, m := range chunk {
				ks[i] = b.entryKey(m)
			}
			if err := b.delMany(ctx, ks); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// Info says what the backend is: redis, persistent (the entries outlive a
// replica's restart), with the index's bounds.
func (b *Backend) Info() respcache.Info {
	info := respcache.Memory(b.mem).Info()
	info.Name, info.Persistent = respcache.BackendRedis, true
	return info
}

// Close stops following the stream (within one read's wait); the client
// is the caller's.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.cancel()
		<-b.done
	})
	return nil
}

// follow applies the other replicas' changes from the stream, from the
// position after from ("$": the load at open failed, so it loads first),
// until ctx ends, reading at most every gather while changes flow. After
// a failure it checks the stream still holds the position it reads from:
// when Redis restarted, or the stream was trimmed past it, changes may be
// lost, so it loads again (what Redis holds now joins the index; entries
// the index holds and Redis lost stay until their TTL).
func (b *Backend) follow(ctx context.Context, from string) {
	defer close(b.done)
	load, check := from == "$", false
	for ctx.Err() == nil {
		switch {
		case load:
			f, err := b.load(ctx)
			if err != nil {
				b.failed("follow", err)
				sleep(ctx, pause)
				continue
			}
			from, load, check = f, false, false
		case check:
			first, err := b.c.XRangeN(ctx, b.keys.stream, "-", "+", 1).Result()
			if err != nil {
				b.failed("follow", err)
				sleep(ctx, pause)
				continue
			}
			check = false
			if len(first) == 1 && idLess(from, first[0].ID) {
				load = true
				continue
			}
		}
		res, err := b.c.XRead(ctx, &redis.XReadArgs{Streams: []string{b.keys.stream, from}, Count: readCount, Block: block}).Result()
		if errors.Is(err, redis.Nil) { // nothing new: Redis answers
			b.ok()
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				b.failed("follow", err)
				check = true
				sleep(ctx, pause)
			}
			continue
		}
		read, n := time.Now(), 0
		for _, s := range res {
			if len(s.Messages) > 0 {
				b.apply(ctx, s.Messages)
				from = s.Messages[len(s.Messages)-1].ID
				n += len(s.Messages)
			}
		}
		if n > 0 && n < readCount {
			sleep(ctx, gather-time.Since(read))
		}
	}
}

// idLess reports whether stream id a is before b (ids are ms-seq).
func idLess(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || (am == bm && as < bs)
}

func splitID(id string) (ms, seq uint64) {
	l, r, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(l, 10, 64)
	seq, _ = strconv.ParseUint(r, 10, 64)
	return ms, seq
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// apply applies a batch of changes in order; the stores' entries are read
// in one round trip first.
func (b *Backend) apply(ctx context.Context, msgs []redis.XMessage) {
	var stores []string
	for _, msg := range msgs {
		if field(msg, "o") != b.id && field(msg, "t") == "s" {
			stores = append(stores, field(msg, "m"))
		}
	}
	rows := map[string]string{}
	if len(stores) > 0 {
		ks := make([]string, len(stores))
		for i, m := range stores {
			ks[i] = b.entryKey(m)
		}
		vals, err := b.getMany(ctx, ks)
		if err != nil {
			b.failed("follow", err)
		}
		for i, v := range vals {
			rows[stores[i]] = v
		}
	}
	for _, msg := range msgs {
		if field(msg, "o") == b.id {
			continue
		}
		switch field(msg, "t") {
		case "s":
			m := field(msg, "m")
			if r, ok := parseRow(m, rows[m]); ok {
				b.restore(r)
			}
		case "d":
			if ns, key, ok := splitMember(field(msg, "m")); ok {
				b.mem.Delete(ns, key)
			}
		case "i", "f":
			var f respcache.Filter
			if err := json.Unmarshal([]byte(field(msg, "f")), &f); err != nil {
				continue
			}
			if field(msg, "t") == "i" {
				b.mem.Invalidate(f, false)
				continue
			}
			b.mem.Flush(f)
			if e, err := strconv.ParseUint(field(msg, "e"), 10, 64); err == nil {
				b.mem.SetEpoch(field(msg, "s"), e)
			}
		}
	}
}

func field(msg redis.XMessage, name string) string { return str(msg.Values[name]) }

func str(v any) string {
	s, _ := v.(string)
	return s
}

// escapeGlob quotes the characters SCAN's MATCH pattern treats specially.
func escapeGlob(s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
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
