package junction

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/postgres"
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
	if _, err := openStoredData(ctx, t.TempDir(), doc, nil, nil, log); err == nil || !strings.Contains(err.Error(), env) {
		t.Fatalf("with %s unset: %v, want an error naming it", env, err)
	}

	server := "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	admin, err := sql.Open("pgx", server)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err = admin.PingContext(pctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL at 127.0.0.1:5432 is unreachable (CI is set): %v", err)
		}
		t.Skipf("PostgreSQL at 127.0.0.1:5432 is unreachable; start one to run this test: %v", err)
	}
	schema := "jt_stored_" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_")
	admin.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`)
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); admin.Close() })
	t.Setenv(env, server+"&search_path="+schema)
	sd, err := openStoredData(ctx, t.TempDir(), doc, nil, nil, log)
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
	other, err := postgres.Open(ctx, server+"&search_path="+schema, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.GetFile(ctx, f.ID); err != nil {
		t.Fatalf("the other replica: %v", err)
	}
}
