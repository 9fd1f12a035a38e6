//go:build !race

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage/postgres/pgtest"
)

// Two serve processes (two replicas, each with its own data directory) on
// one PostgreSQL schema: a handbook uploaded and ingested through one is
// found by the other's search and retrieved by its rag plugin, and the
// file's bytes are read through either.
func TestServeTwoReplicasOnPostgres(t *testing.T) {
	const env = "JUNCTION_E2E_POSTGRES_DSN"
	t.Setenv(env, pgtest.Schema(t)) // the serve processes inherit it

	up := newUpstream(t)
	replica := func() *storedServer {
		cfg, gw, mg := storageConfig(t, up.URL)
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, []byte("  storage: {backend: postgres, postgres: {dsn_env: "+env+", max_conns: 4}}\n")...)
		if err := os.WriteFile(cfg, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return startServe(t, cfg, filepath.Join(t.TempDir(), "data"), gw, mg)
	}
	a, b := replica(), replica()
	fileID, storeID := a.addHandbook()

	var page searchPage
	deadline := time.Now().Add(5 * time.Second) // the stated bound is 1 s; a loaded machine gets room
	for {
		page = b.search(storeID, question)
		if len(page.Data) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(page.Data) == 0 || !strings.Contains(page.Data[0].Content[0].Text, vacation) {
		t.Fatalf("the other replica's search: %+v\nserve said: %s", page, b.stderr.String())
	}
	b.chat("", question)
	if !strings.Contains(up.last(), vacation) {
		t.Fatalf("the other replica's rag did not retrieve the passage; it sent:\n%s", up.last())
	}
	var f fileObject
	b.call("GET", "/api/v1/storage/files/"+fileID, nil, 200, &f)
	if f.Filename != "handbook.md" {
		t.Fatalf("the other replica's file: %+v", f)
	}
	a.stop()
	b.stop()
}
