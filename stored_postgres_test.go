package junction

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/postgres"
	"github.com/junction-router/junction/internal/storage/postgres/pgtest"
	"github.com/junction-router/junction/recipes"
)

// With global.storage.backend: postgres, stored data opens the PostgreSQL
// the environment variable dsn_env names; unset, it says which variable.
func TestStoredDataPostgresBackend(t *testing.T) {
	const env = "JUNCTION_TEST_STORED_PG_DSN"
	doc, err := recipes.Parse([]byte(`{version: v1, global: {storage: {backend: postgres, postgres: {dsn_env: ` + env + `, max_conns: 2}}},
		providers: {defaults: {default_model: m}, models: [{name: m, backend_refs: [{provider: demo}]}]}, recipes: [{name: default}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	t.Setenv(env, "")
	if _, err := openStoredData(ctx, t.TempDir(), doc, nil, nil, nil, log); err == nil || !strings.Contains(err.Error(), env) {
		t.Fatalf("with %s unset: %v, want an error naming it", env, err)
	}

	dsn := pgtest.Schema(t)
	t.Setenv(env, dsn)
	sd, err := openStoredData(ctx, t.TempDir(), doc, nil, nil, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sd.store.(*postgres.Store); !ok {
		t.Fatalf("the store is %T, want *postgres.Store", sd.store)
	}
	f, err := sd.store.CreateFile(ctx, storage.NewFile{Filename: "a.txt", Purpose: "assistants"}, strings.NewReader("shared"), 0)
	sd.close(log)
	if err != nil {
		t.Fatal(err)
	}
	// Another replica (a second store on the schema) sees the file.
	other, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.GetFile(ctx, f.ID); err != nil {
		t.Fatalf("the other replica: %v", err)
	}
}
