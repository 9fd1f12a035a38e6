package pgtest_test

import (
	"database/sql"
	"testing"

	"github.com/junction-router/junction/internal/storage/postgres/pgtest"
)

// TestStartServer: a server of the test's own (initdb in a temporary directory, a free port) answers on its DSN
// and keeps what is written to it.
func TestStartServer(t *testing.T) {
	s := pgtest.StartServer(t)
	db, err := sql.Open("pgx", s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE kept (v text); INSERT INTO kept VALUES ('written')`); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := db.QueryRow(`SELECT v FROM kept`).Scan(&v); err != nil || v != "written" {
		t.Fatalf("read back %q, %v", v, err)
	}
	var ext int
	if err := db.QueryRow(`SELECT count(*) FROM pg_available_extensions WHERE name = 'plpgsql'`).Scan(&ext); err != nil || ext != 1 {
		t.Fatalf("a cluster without plpgsql (%d, %v): not what initdb makes", ext, err)
	}
}
