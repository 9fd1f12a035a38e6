package sqlitecache_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/respcache/cachetest"
	"github.com/junction-router/junction/internal/respcache/sqlitecache"
)

func TestEmbeddedConformance(t *testing.T) {
	dirs := map[*testing.T]string{}
	cachetest.Run(t, func(t *testing.T, o respcache.Options) respcache.Backend {
		dir, ok := dirs[t]
		if !ok {
			dir = t.TempDir()
			dirs[t] = dir
		}
		b, err := sqlitecache.Open(context.Background(), filepath.Join(dir, sqlitecache.File), o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

func TestEmbeddedRefusesANewerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlitecache.File)
	b, err := sqlitecache.Open(context.Background(), path, respcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store(context.Background(), "ns", "k", []byte("v"), time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	b.Close()
	setVersion(t, path, 99)
	_, err = sqlitecache.Open(context.Background(), path, respcache.Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this binary") || !strings.Contains(err.Error(), "delete the file") {
		t.Fatalf("opening a file of schema 99: %v", err)
	}
}

func TestEmbeddedRefusesAFileThatIsNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlitecache.File)
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlitecache.Open(context.Background(), path, respcache.Options{}); err == nil {
		t.Fatal("a file that is not SQLite opened")
	}
}

// setVersion sets the schema version recorded in an embedded file.
func setVersion(t *testing.T, path string, v int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, v)); err != nil {
		t.Fatal(err)
	}
}

// A store reaches the file without waiting for Close: the writer commits
// the log in the background (a crash then loses only what it had not).
func TestEmbeddedWritesBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlitecache.File)
	b, err := sqlitecache.Open(context.Background(), path, respcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 50 {
		if err := b.Store(context.Background(), "ns", fmt.Sprintf("k%d", i), []byte("v"), time.Hour, []float32{1, 0}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n != 50; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 50 stores in the file after 10 s", n)
		}
		time.Sleep(10 * time.Millisecond)
		_ = db.QueryRow(`SELECT count(*) FROM entries`).Scan(&n)
	}
	if _, err := b.Stats(0); err != nil {
		t.Fatalf("stats after good commits: %v", err)
	}
}
