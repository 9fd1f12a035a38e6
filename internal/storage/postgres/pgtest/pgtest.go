// Package pgtest gives a test a PostgreSQL schema of its own on the real server the tests use: created for the
// test, dropped when it ends. Without a server the test skips, saying how to start one, except under CI (the CI
// environment variable set), where it fails: CI never skips a storage test silently.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// DefaultServer is the PostgreSQL the tests use: the one this project's machines and CI start (trust auth,
// database test). JUNCTION_TEST_POSTGRES overrides it.
const DefaultServer = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Server is the DSN of the server the tests use.
func Server() string {
	if dsn := os.Getenv("JUNCTION_TEST_POSTGRES"); dsn != "" {
		return dsn
	}
	return DefaultServer
}

// Schema creates a fresh schema for t and returns a DSN whose search_path is it. The schema is dropped, with
// everything in it, when t ends.
func Schema(t testing.TB) string {
	t.Helper()
	server := Server()
	admin, err := sql.Open("pgx", server)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = admin.PingContext(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL at %s is unreachable (CI is set, so this fails rather than skips): %v", server, err)
		}
		t.Skipf("PostgreSQL at %s is unreachable; start one (trust auth, database test) or set JUNCTION_TEST_POSTGRES to run this test: %v", server, err)
	}
	var b [8]byte
	rand.Read(b[:])
	schema := "jt_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		admin.Close()
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	sep := "?"
	if strings.Contains(server, "?") {
		sep = "&"
	}
	return server + sep + "search_path=" + schema
}
