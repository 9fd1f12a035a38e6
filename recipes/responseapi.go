package recipes

import (
	"time"
)

// Defaults of global.services.response_api (applied by the store at start,
// not written into the document).
const (
	DefaultResponseTTL = 24 * time.Hour
	// DefaultResponseMaxEntries and DefaultResponseMaxBytes bound the
	// memory store; the embedded store's are DefaultEmbeddedResponse*.
	DefaultResponseMaxEntries         = 10000
	DefaultResponseMaxBytes           = 256 << 20
	DefaultEmbeddedResponseMaxEntries = 100000
	DefaultEmbeddedResponseMaxBytes   = 1 << 30
)

// Bounds of global.services.response_api's fields.
const (
	MinResponseTTL      = time.Minute
	MaxResponseTTL      = 365 * 24 * time.Hour
	MinResponseMaxBytes = 1 << 20
)

// ResponseStoreEmbedded reports whether store names the embedded store
// (embedded, or its alias sqlite); "" and memory are the memory store.
func ResponseStoreEmbedded(store string) bool { return store == "embedded" || store == "sqlite" }

// ResponseStoreRedis is the store of global.state's Redis, shared by the
// replicas (the default when global.state.backend is redis).
const ResponseStoreRedis = "redis"

// Limits are the response store's bounds with the defaults of its store
// filled in (redis, shared by the replicas, takes the embedded store's).
func (r ResponseAPI) Limits() (ttl time.Duration, maxEntries int, maxBytes int64) {
	ttl, maxEntries, maxBytes = r.TTL.Duration, r.MaxEntries, r.MaxBytes
	if ttl == 0 {
		ttl = DefaultResponseTTL
	}
	embedded := ResponseStoreEmbedded(r.Store) || r.Store == ResponseStoreRedis
	if maxEntries == 0 {
		maxEntries = DefaultResponseMaxEntries
		if embedded {
			maxEntries = DefaultEmbeddedResponseMaxEntries
		}
	}
	if maxBytes == 0 {
		maxBytes = DefaultResponseMaxBytes
		if embedded {
			maxBytes = DefaultEmbeddedResponseMaxBytes
		}
	}
	return ttl, maxEntries, maxBytes
}

// responseAPI checks global.services.response_api.
func (c *checker) responseAPI() {
	r := c.doc.Global.Services.ResponseAPI
	const p = "/global/services/response_api"
	switch r.Store {
	case "", "memory", "embedded", "sqlite", ResponseStoreRedis:
	default:
		c.add(p+"/store", CodeInvalidValue, "must be memory (kept in memory, lost at restart), embedded (the stored-data directory, survives restarts) or redis (global.state's Redis, shared by the replicas); got %q", r.Store)
	}
	if d := r.TTL.Duration; d != 0 && (d < MinResponseTTL || d > MaxResponseTTL) {
		c.add(p+"/ttl", CodeInvalidValue, "must be from %s to %s (got %s); leave it out for %s", MinResponseTTL, MaxResponseTTL, d, DefaultResponseTTL)
	}
	if r.MaxEntries < 0 {
		c.add(p+"/max_entries", CodeInvalidValue, "must be at least 1 (got %d); leave it out for the store's default", r.MaxEntries)
	}
	if r.MaxBytes != 0 && r.MaxBytes < MinResponseMaxBytes {
		c.add(p+"/max_bytes", CodeInvalidValue, "must be at least %d (1 MiB; got %d); leave it out for the store's default", MinResponseMaxBytes, r.MaxBytes)
	}
}
