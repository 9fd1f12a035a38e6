package junction

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/memresponses"
	"github.com/junction-router/junction/internal/storage/sqlite"
	"github.com/junction-router/junction/recipes"
)

func TestResponseStoreChoice(t *testing.T) {
	if s := responseStore(recipes.ResponseAPI{Store: "memory"}, nil); s != nil {
		t.Fatalf("not enabled: %v", s)
	}
	s := responseStore(recipes.ResponseAPI{Enabled: true, MaxEntries: 2}, nil)
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
	if s := responseStore(recipes.ResponseAPI{Enabled: true, Store: "embedded"}, embedded); s != embedded {
		t.Fatalf("embedded: %v", s)
	}
	if s := responseStore(recipes.ResponseAPI{Enabled: true, Store: "sqlite"}, embedded); s != embedded {
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
