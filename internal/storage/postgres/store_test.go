package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/postgres/pgtest"
	"github.com/junction-router/junction/internal/storage/storagetest"
)

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
		return openTest(t, pgtest.Schema(t))
	})
}

func TestOpenWithoutDSN(t *testing.T) {
	if _, err := Open(context.Background(), "", Options{}); err == nil || !strings.Contains(err.Error(), "dsn_env") {
		t.Fatalf("Open with no DSN: %v, want an error naming dsn_env", err)
	}
}

func TestMigrationsRecorded(t *testing.T) {
	dsn := pgtest.Schema(t)
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
