package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/storagetest"
)

func TestResponsesConformance(t *testing.T) {
	storagetest.RunResponses(t, func(t *testing.T) storage.Responses {
		s := openAt(t, t.TempDir())
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestMigrateFromVersion4 opens a database of schema version 4 (no
// responses table): the migration adds it, and a stored response survives
// closing and opening again.
func TestMigrateFromVersion4(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := openDB(filepath.Join(dir, dbName), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(append([]string{}, schema[:4]...), `PRAGMA user_version = 4`) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	ctx := context.Background()
	s := openAt(t, dir)
	var version int
	if err := s.w.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != len(schema) || version < 5 {
		t.Fatalf("user_version %d (%v), want %d", version, err, len(schema))
	}
	if err := s.PutResponse(ctx, storage.StoredResponse{ID: "resp_x", Response: []byte(`{"id":"resp_x"}`), Input: []byte(`[]`), Conversation: []byte(`[]`)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, dir)
	defer s.Close()
	if r, err := s.GetResponse(ctx, "resp_x"); err != nil || string(r.Response) != `{"id":"resp_x"}` {
		t.Fatalf("after reopening: %+v %v", r, err)
	}
}
