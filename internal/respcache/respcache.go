// Package respcache is the response cache as junction serve runs it: the
// narrow Backend interface its stores implement (Memory, internal/memstore's
// bounded LRU; sqlitecache, a SQLite file in the data directory that
// survives a restart; a shared one can implement the same interface and pass the same
// conformance suite, respcache/cachetest), and the scope every entry is kept
// under besides the plugin's own namespace: the recipe and the configuration
// epoch, a hash of the configuration that shapes an answer (Epochs). The data
// plane puts that scope in the request's context (WithScope) and Scoped adds
// it to the namespaces the plugins' cache_lookup and cache_store name, so a
// changed system prompt, model or reasoning mode never serves an answer made
// under the old configuration, while an unrelated change keeps the cache.
//
// It must not know about HTTP, run plugins or do I/O (sqlitecache does): the
// plugin decides what to look up and store, the host who may, the backend
// where it is kept.
package respcache

import (
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/memstore"
)

// The cache's counts, statistics and filters are memstore's: the in-memory
// store is also the index of the embedded one.
type (
	Counts         = memstore.CacheCounts
	Stats          = memstore.CacheStats
	Filter         = memstore.CacheFilter
	NamespaceCount = memstore.NamespaceCount
)

// Backend is a response cache store: the host functions' Lookup and Store,
// and what the management API and the metrics need. Every method is safe
// for concurrent use.
type Backend interface {
	hostapi.Cache
	// Counts are the lookup and removal counters since the backend was
	// opened and the number of entries held.
	Counts() (Counts, int)
	// Stats are the counts, bytes, namespaces (the topN largest) and flush
	// epochs.
	Stats(topN int) (Stats, error)
	// Invalidate removes the entries f selects (or with dryRun counts
	// them): how many, in how many namespaces.
	Invalidate(f Filter, dryRun bool) (entries, namespaces int, err error)
	// Flush advances the epoch of f's scope (f.Scope(); the zero filter is
	// the global scope) and removes the entries f selects.
	Flush(f Filter) (epoch uint64, removed int, err error)
	// Retain removes the entries of every namespace keep refuses (counted
	// as flushed): a Sweeper's, for the configuration epochs no longer
	// served. An entry of a refused namespace answers no more once it
	// returns.
	Retain(keep func(namespace string) bool) (removed int, err error)
	// Info says what the backend is.
	Info() Info
	// Close releases the backend; an embedded one writes what is pending.
	Close() error
}

// Info describes a backend.
type Info struct {
	// Name is memory, embedded or redis.
	Name string
	// Persistent: entries survive a restart.
	Persistent bool
	// Path is the embedded backend's file.
	Path string
	// MaxEntries and MaxBytes bound the whole cache.
	MaxEntries int
	MaxBytes   int64
}

// Backend names (global.services.response_cache.backend).
const (
	BackendMemory   = "memory"
	BackendEmbedded = "embedded"
	// BackendRedis is the shared backend of global.state.backend: redis
	// (internal/respcache/rediscache).
	BackendRedis = "redis"
)

// Options configure a backend; zero values take memstore's defaults.
type Options struct {
	MaxEntries int   // the whole cache
	MaxBytes   int64 // keys, values and embeddings
	// Now is the clock of the entries' time to live (tests); nil is
	// time.Now.
	Now func() time.Time
}

// NewCache is an empty memstore.Cache with o's bounds and clock (the
// memory backend's store, and the embedded one's index).
func (o Options) NewCache() *memstore.Cache {
	return &memstore.Cache{MaxTotal: o.MaxEntries, MaxBytes: o.MaxBytes, Now: o.Now}
}

// Memory is the in-memory backend over c (bounds set on c apply); it
// forgets everything when the process ends.
func Memory(c *memstore.Cache) Backend { return memory{c} }

// NewMemory is an empty in-memory backend.
func NewMemory(o Options) Backend { return memory{o.NewCache()} }

type memory struct{ *memstore.Cache }

func (m memory) Stats(topN int) (Stats, error) { return m.Cache.Stats(topN), nil }

func (m memory) Invalidate(f Filter, dryRun bool) (int, int, error) {
	n, nss := m.Cache.Invalidate(f, dryRun)
	return n, nss, nil
}

func (m memory) Flush(f Filter) (uint64, int, error) {
	e, n := m.Cache.Flush(f)
	return e, n, nil
}

func (m memory) Retain(keep func(string) bool) (int, error) { return m.Cache.Retain(keep), nil }

func (m memory) Info() Info {
	return Info{Name: BackendMemory, MaxEntries: orInt(m.MaxTotal, memstore.DefaultMaxTotal), MaxBytes: orInt64(m.MaxBytes, memstore.DefaultMaxBytes)}
}

func (m memory) Close() error { return nil }

func orInt(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

func orInt64(v, d int64) int64 {
	if v > 0 {
		return v
	}
	return d
}
