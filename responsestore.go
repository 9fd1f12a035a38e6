package junction

import (
	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/memresponses"
	"github.com/junction-router/junction/internal/storage/redisresponses"
	"github.com/junction-router/junction/internal/storage/sqlite"
	"github.com/junction-router/junction/recipes"
)

// responseStore is the Responses API's response store that
// global.services.response_api names: nil when it is not enabled (the
// stored-response routes say so), in memory (store: memory, the default,
// bounded by its ttl, max_entries and max_bytes), the embedded store of
// stored data (store: embedded or sqlite, opened with
// embeddedResponseOptions), which survives a restart, or with
// global.state.backend redis (shared not nil) the Redis every replica
// shares, unless store names memory or embedded. The configuration was
// validated (recipes: store, ttl and bounds; store redis only with
// global.state's Redis); it is read at start, and a change needs a restart
// (the management API refuses it).
func responseStore(cfg recipes.ResponseAPI, embedded storage.Responses, shared *redisstate.Client) storage.Responses {
	switch {
	case !cfg.Enabled:
		return nil
	case recipes.ResponseStoreEmbedded(cfg.Store):
		return embedded
	case shared != nil && (cfg.Store == "" || cfg.Store == recipes.ResponseStoreRedis):
		cfg.Store = recipes.ResponseStoreRedis
		ttl, entries, bytes := cfg.Limits()
		return redisresponses.New(shared, redisresponses.Options{TTL: ttl, MaxEntries: entries, MaxBytes: bytes})
	}
	ttl, entries, bytes := cfg.Limits()
	return memresponses.New(memresponses.Options{TTL: ttl, MaxEntries: entries, MaxBytes: bytes})
}

// embeddedResponseOptions sets the embedded store's response bounds from
// global.services.response_api (its defaults when the memory store is used:
// the table keeps what an earlier run with the embedded store left, pruned
// as usual).
func embeddedResponseOptions(doc *recipes.Document, o sqlite.Options) sqlite.Options {
	var cfg recipes.ResponseAPI
	if doc != nil {
		cfg = doc.Global.Services.ResponseAPI
	}
	if !recipes.ResponseStoreEmbedded(cfg.Store) {
		cfg = recipes.ResponseAPI{Store: "embedded", TTL: cfg.TTL}
	}
	ttl, entries, bytes := cfg.Limits()
	o.ResponseTTL, o.MaxResponses, o.MaxResponseBytes = ttl, entries, bytes
	return o
}
