package mgmt

import (
	"testing"

	"github.com/junction-router/junction/recipes"
)

// The storage backend and its PostgreSQL connection are opened at start: a
// change to either needs a restart, at its JSON pointer.
func TestRestartReasonsStorageBackend(t *testing.T) {
	embedded := &recipes.Document{}
	pg := &recipes.Document{}
	pg.Global.Storage = &recipes.Storage{Backend: "postgres", Postgres: &recipes.StoragePostgres{DSNEnv: "PG"}}
	morePG := &recipes.Document{}
	morePG.Global.Storage = &recipes.Storage{Backend: "postgres", Postgres: &recipes.StoragePostgres{DSNEnv: "PG", MaxConns: 16}}
	paths := func(cur, next *recipes.Document) map[string]bool {
		m := map[string]bool{}
		for _, r := range restartReasons(cur, next) {
			m[r.Path] = true
		}
		return m
	}
	if p := paths(embedded, pg); !p["/global/storage/backend"] || !p["/global/storage/postgres"] {
		t.Fatalf("embedded to postgres: %v", p)
	}
	if p := paths(pg, morePG); p["/global/storage/backend"] || !p["/global/storage/postgres"] {
		t.Fatalf("a bigger pool: %v", p)
	}
	if p := paths(pg, pg); p["/global/storage/backend"] || p["/global/storage/postgres"] {
		t.Fatalf("no change: %v", p)
	}
}
