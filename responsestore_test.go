package junction

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/memresponses"
	"github.com/junction-router/junction/internal/storage/redisresponses"
	"github.com/junction-router/junction/internal/storage/sqlite"
	"github.com/junction-router/junction/recipes"
)

func TestResponseStoreChoice(t *testing.T) {
	if s := responseStore(recipes.ResponseAPI{Store: "memory"}, nil, nil); s != nil {
		t.Fatalf("not enabled: %v", s)
	}
	s := responseStore(recipes.ResponseAPI{Enabled: true, MaxEntries: 2}, nil, nil)
	if _, ok := s.(*memresponses.Store); !ok {
		t.Fatalf("default store %T, want memory", s)
	}
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		if err := s.PutResponse(ctx, storage.StoredResponse{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetResponse(ctx, "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("max_entries 2 kept a third response: %v", err)
	}
	embedded := memresponses.New(memresponses.Options{}) // stands in for the embedded store's identity only
	if s := responseStore(recipes.ResponseAPI{Enabled: true, Store: "embedded"}, embedded, nil); s != embedded {
		t.Fatalf("embedded: %v", s)
	}
	if s := responseStore(recipes.ResponseAPI{Enabled: true, Store: "sqlite"}, embedded, nil); s != embedded {
		t.Fatalf("sqlite (the alias): %v", s)
	}
}

func TestEmbeddedResponseOptions(t *testing.T) {
	doc := func(r recipes.ResponseAPI) *recipes.Document {
		d := &recipes.Document{}
		d.Global.Services.ResponseAPI = r
		return d
	}
	o := embeddedResponseOptions(nil, sqlite.Options{})
	if o.ResponseTTL != 24*time.Hour || o.MaxResponses != 100000 || o.MaxResponseBytes != 1<<30 {
		t.Fatalf("defaults: %+v", o)
	}
	o = embeddedResponseOptions(doc(recipes.ResponseAPI{Enabled: true, Store: "embedded", TTL: recipes.Duration{Duration: time.Hour}, MaxEntries: 5, MaxBytes: 2 << 20}), sqlite.Options{})
	if o.ResponseTTL != time.Hour || o.MaxResponses != 5 || o.MaxResponseBytes != 2<<20 {
		t.Fatalf("configured: %+v", o)
	}
	// The memory store's bounds are not the table's.
	o = embeddedResponseOptions(doc(recipes.ResponseAPI{Enabled: true, MaxEntries: 5}), sqlite.Options{})
	if o.MaxResponses != 100000 {
		t.Fatalf("memory store's max_entries applied to the table: %+v", o)
	}
}

// With global.state redis the store is Redis's unless response_api.store names memory or embedded.
func TestResponseStoreOnRedis(t *testing.T) {
	c := redistest.New(t)
	if s, ok := responseStore(recipes.ResponseAPI{Enabled: true}, nil, c).(*redisresponses.Store); !ok {
		t.Fatalf("global.state redis, no store named: %T, want *redisresponses.Store", s)
	}
	if s, ok := responseStore(recipes.ResponseAPI{Enabled: true, Store: "redis"}, nil, c).(*redisresponses.Store); !ok {
		t.Fatalf("store redis: %T", s)
	}
	if s, ok := responseStore(recipes.ResponseAPI{Enabled: true, Store: "memory"}, nil, c).(*memresponses.Store); !ok {
		t.Fatalf("store memory with global.state redis: %T, want the per-replica memory store", s)
	}
}
