package junction

import (
	"fmt"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/memresponses"
	"github.com/junction-router/junction/recipes"
)

// responseStore is the Responses API's response store that
// global.services.response_api names: nil when it is not enabled (the
// stored-response routes say so), in memory (store: memory, the default),
// or the embedded store of stored data (store: embedded or sqlite), which
// survives a restart. It is chosen at start; a reload does not change it.
func responseStore(cfg recipes.ResponseAPI, embedded storage.Responses) (storage.Responses, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	switch cfg.Store {
	case "", "memory":
		return memresponses.New(memresponses.Options{}), nil
	case "embedded", "sqlite":
		return embedded, nil
	}
	return nil, fmt.Errorf("global.services.response_api.store %q: use memory (kept in memory, bounded, 24h) or embedded (the stored-data directory, survives restarts)", cfg.Store)
}
