package junction

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/respcache/rediscache"
	"github.com/junction-router/junction/internal/respcache/sqlitecache"
	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/recipes"
)

// responseCache opens the response cache's store that
// global.services.response_cache names: in memory (backend memory, the
// default) or the embedded file in the data directory (backend embedded),
// which keeps entries, their configuration epochs and the flush epochs
// across restarts, or, with global.state.backend redis (shared not nil),
// the Redis every replica shares unless backend names memory or embedded
// (then this replica keeps its own). It is chosen at start; a reload does
// not change it.
func responseCache(ctx context.Context, doc *recipes.Document, dataDir string, shared *redisstate.Client, log *slog.Logger) (respcache.Backend, error) {
	var cfg recipes.ResponseCacheService
	if doc != nil && doc.Global.Services.ResponseCache != nil {
		cfg = *doc.Global.Services.ResponseCache
	}
	o := respcache.Options{MaxEntries: cfg.MaxEntries, MaxBytes: cfg.MaxBytes}
	if shared != nil && cfg.Backend != "" && cfg.Backend != recipes.ResponseCacheRedis {
		log.Info("response cache kept per replica although global.state is redis (global.services.response_cache.backend names " + cfg.Backend + ")")
	}
	switch cfg.Backend {
	case "", recipes.ResponseCacheRedis:
		if shared != nil {
			b := rediscache.Open(ctx, shared, o)
			_, n := b.Counts()
			log.Info("response cache", "backend", "redis", "entries", n)
			return b, nil
		}
		if cfg.Backend == "" {
			return respcache.NewMemory(o), nil
		}
		return nil, fmt.Errorf("global.services.response_cache.backend redis needs global.state.backend: redis with global.state.redis.address")
	case recipes.ResponseCacheMemory:
		return respcache.NewMemory(o), nil
	case recipes.ResponseCacheEmbedded:
		path := filepath.Join(dataDir, sqlitecache.File)
		b, err := sqlitecache.Open(ctx, path, o)
		if err != nil {
			return nil, fmt.Errorf("global.services.response_cache (backend embedded): %w", err)
		}
		_, n := b.Counts()
		log.Info("response cache", "backend", "embedded", "file", path, "entries", n)
		return b, nil
	}
	return nil, fmt.Errorf("global.services.response_cache.backend %q: use memory (the default; forgotten at exit), embedded (a file in the data directory, kept across restarts) or redis (shared by the replicas on global.state's Redis)", cfg.Backend)
}
