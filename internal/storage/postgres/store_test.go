package postgres

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/storagetest"
)

// testServer is the PostgreSQL the tests use (JUNCTION_TEST_POSTGRES
// overrides it).
func testServer() string {
	if dsn := os.Getenv("JUNCTION_TEST_POSTGRES"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// testSchema creates a schema of its own for t, dropped when t ends, and
// returns a DSN whose search_path is it. Without a server the test skips,
// unless CI is set (CI never skips silently).
func testSchema(t testing.TB) string {
	t.Helper()
	admin, err := sql.Open("pgx", testServer())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = admin.PingContext(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL at %s is unreachable (CI is set, so this fails rather than skips): %v", testServer(), err)
		}
		t.Skipf("PostgreSQL at %s is unreachable; start one (trust auth, database test) to run this test: %v", testServer(), err)
	}
	schema := "jt_" + strings.ToLower(newID(""))
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	sep := "?"
	if strings.Contains(testServer(), "?") {
		sep = "&"
	}
	return testServer() + sep + "search_path=" + schema
}

func openTest(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, Options{PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return openTest(t, testSchema(t))
	})
}

func TestOpenWithoutDSN(t *testing.T) {
	if _, err := Open(context.Background(), "", Options{}); err == nil || !strings.Contains(err.Error(), "dsn_env") {
		t.Fatalf("Open with no DSN: %v, want an error naming dsn_env", err)
	}
}

func TestMigrationsRecorded(t *testing.T) {
	dsn := testSchema(t)
	s := openTest(t, dsn)
	var v int
	if err := s.r.QueryRowContext(context.Background(), `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil || v != len(schema) {
		t.Fatalf("schema_migrations at %d (%v), want %d", v, err, len(schema))
	}
	s.Close()
	// A second Open finds the schema current and migrates nothing.
	s = openTest(t, dsn)
	defer s.Close()
	var n int
	if err := s.r.QueryRowContext(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(schema) {
		t.Fatalf("%d migrations recorded (%v), want %d", n, err, len(schema))
	}
}

func TestRebind(t *testing.T) {
	if got := rebind(`a = ? AND b IN (?, ?)`); got != `a = $1 AND b IN ($2, $3)` {
		t.Fatal(got)
	}
}
