// Package pgtest gives a test a PostgreSQL schema of its own, created for the test and dropped when it ends, on
// the server the tests share (127.0.0.1:5432, or JUNCTION_TEST_POSTGRES). Where that default server is
// unreachable and JUNCTION_TEST_POSTGRES is unset, the test binary starts a server of its own once (initdb and
// postgres on a free port in a temporary directory, as StartServer does) and every test in it uses that one;
// JUNCTION_TEST_POSTGRES=own asks for that path even where the default server answers. A test skips only when
// there is no server and the PostgreSQL binaries to start one are absent, saying how to get them, and under CI
// (the CI environment variable set) it fails instead: CI never skips a storage test silently.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// DefaultServer is the PostgreSQL the tests use: the one this project's machines and CI start (trust auth,
// database test). JUNCTION_TEST_POSTGRES overrides it.
const DefaultServer = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// OwnEnv is the value of JUNCTION_TEST_POSTGRES that makes the test binary start its own server whether or not
// the default one answers.
const OwnEnv = "own"

// Server is the DSN the tests are configured with: JUNCTION_TEST_POSTGRES, or DefaultServer (empty where the
// variable asks for a server of the binary's own).
func Server() string {
	switch dsn := os.Getenv("JUNCTION_TEST_POSTGRES"); dsn {
	case "":
		return DefaultServer
	case OwnEnv:
		return ""
	default:
		return dsn
	}
}

// binaryServer is the server a test binary starts for itself, once, the first time a test needs it; it runs
// until the binary exits (its watchdog stops it and deletes its directory then). Package state because its
// lifetime is the binary's, not a test's.
var binaryServer struct {
	once sync.Once
	s    *OwnServer
	err  error
}

// ownServer is the binary's own server, started on first use.
func ownServer() (string, error) {
	binaryServer.once.Do(func() { binaryServer.s, binaryServer.err = launch() })
	if binaryServer.err != nil {
		return "", binaryServer.err
	}
	return binaryServer.s.DSN(), nil
}

// ping opens dsn and checks that it answers within 3 s.
func ping(dsn string) (*sql.DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// defaultReachable remembers, per binary, whether DefaultServer answered: a binary does not wait out an
// unreachable default server's connect for every test.
var defaultReachable struct {
	once sync.Once
	err  error
}

// server is the DSN of the server a test's schema goes on, and an admin connection to it.
func server(t testing.TB) (string, *sql.DB) {
	t.Helper()
	failOrSkip := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (CI is set, so this fails rather than skips)", msg)
		}
		t.Skip(msg)
	}
	configured := Server()
	if configured != "" && configured != DefaultServer {
		// Named explicitly: that server or nothing.
		db, err := ping(configured)
		if err != nil {
			failOrSkip("PostgreSQL at %s (JUNCTION_TEST_POSTGRES) is unreachable: %v", configured, err)
		}
		return configured, db
	}
	if configured == DefaultServer {
		defaultReachable.once.Do(func() {
			db, err := ping(DefaultServer)
			if err == nil {
				db.Close()
			}
			defaultReachable.err = err
		})
		if defaultReachable.err == nil {
			db, err := ping(DefaultServer)
			if err != nil {
				t.Fatalf("PostgreSQL at %s answered earlier in this run and now does not: %v", DefaultServer, err)
			}
			return DefaultServer, db
		}
	}
	dsn, err := ownServer()
	if errors.Is(err, errNoBinaries) {
		why := "JUNCTION_TEST_POSTGRES=own"
		if configured != "" {
			why = fmt.Sprintf("PostgreSQL at %s is unreachable (%v)", DefaultServer, defaultReachable.err)
		}
		failOrSkip("%s and %v to start a server of the test binary's own: apt-get install postgresql, or start a server (trust auth, database test) or set JUNCTION_TEST_POSTGRES to one", why, err)
	}
	if err != nil {
		t.Fatalf("starting the test binary's own PostgreSQL: %v", err)
	}
	db, err := ping(dsn)
	if err != nil {
		t.Fatalf("the test binary's own PostgreSQL at %s does not answer: %v", dsn, err)
	}
	return dsn, db
}

// Schema creates a fresh schema for t and returns a DSN whose search_path is it. The schema is dropped, with
// everything in it, when t ends.
func Schema(t testing.TB) string {
	t.Helper()
	server, admin := server(t)
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
