package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/storage"
)

func TestMatchExpr(t *testing.T) {
	for text, want := range map[string]string{
		"Is the library open on Sunday?":  `"library" OR "open" OR "sunday"`,
		`zanzibar" OR NEAR(a b) * -- ^x`:  `"zanzibar" OR "near"`,
		"DVD's DVD dvd":                   `"dvd"`,
		"the of and":                      ``,
		"":                                ``,
		"Ünïcödé 東京":                      `"ünïcödé" OR "東京"`,
		"bike-share 24/7 e-mail":          `"bike" OR "share" OR "24" OR "mail"`,
		strings.Repeat("x", 65) + " word": `"word"`,
	} {
		if got := matchExpr(text); got != want {
			t.Errorf("matchExpr(%q) = %s, want %s", text, got, want)
		}
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("w%d", i)
	}
	if n := strings.Count(matchExpr(strings.Join(many, " ")), " OR "); n != maxQueryTerms-1 {
		t.Fatalf("%d terms, want %d", n+1, maxQueryTerms)
	}
}

// ftsCheck fails unless the full-text index agrees with the chunks table
// (FTS5's integrity check compares them, for an external-content table)
// and holds want rows.
func ftsCheck(t *testing.T, s *Store, want int) {
	t.Helper()
	if _, err := s.w.Exec(`INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Fatalf("full-text index out of step with chunks: %v", err)
	}
	var n int
	if err := s.w.QueryRow(`SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'ocarina OR general'`).Scan(&n); err != nil || n != want {
		t.Fatalf("full-text index has %d matching rows (%v), want %d", n, err, want)
	}
}

// TestFullTextInStep: every way chunks leave (detach, file deletion, store
// deletion) takes their full-text rows in the same transaction.
func TestFullTextInStep(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	v, err := s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "kb", EmbeddingModel: "m", Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "kb2", EmbeddingModel: "m", Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	attach := func(storeID string, f storage.File, texts ...string) storage.File {
		if _, err := s.AttachFile(ctx, storeID, f.ID, nil, storage.Chunking{}); err != nil {
			t.Fatal(err)
		}
		var chunks []storage.Chunk
		for i, text := range texts {
			chunks = append(chunks, storage.Chunk{Index: i, Text: text, Vector: []float32{1, 0}})
		}
		if err := s.CompleteFile(ctx, storeID, f.ID, chunks); err != nil {
			t.Fatal(err)
		}
		return f
	}
	add := func(storeID, name string, texts ...string) storage.File {
		f, err := s.CreateFile(ctx, storage.NewFile{Filename: name, Purpose: "assistants"}, strings.NewReader(name), 0)
		if err != nil {
			t.Fatal(err)
		}
		return attach(storeID, f, texts...)
	}
	a := add(v.ID, "a", "ocarina one", "ocarina two")
	b := add(v.ID, "b", "general ocarina")
	add(w.ID, "c", "general")
	shared := add(w.ID, "d", "ocarina shared")
	attach(v.ID, shared, "ocarina shared")
	ftsCheck(t, s, 6)
	if err := s.DetachFile(ctx, v.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	ftsCheck(t, s, 4)
	if err := s.DeleteFile(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	ftsCheck(t, s, 3)
	if err := s.DeleteVectorStore(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	ftsCheck(t, s, 1)
	hits, err := s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: []float32{0, 1}, K: 5, Text: "ocarina"})
	if err != nil || len(hits) != 1 || hits[0].Text != "ocarina shared" {
		t.Fatalf("search: %+v %v", hits, err)
	}
}

// TestMigrateFromVersion2 builds a database of schema version 2 (no
// full-text index) and opens it: the migration indexes the existing chunks
// and a hybrid search finds them by word.
func TestMigrateFromVersion2(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := openDB(filepath.Join(dir, dbName), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		schema[0],
		schema[1],
		`PRAGMA user_version = 2`,
		`INSERT INTO files (id, filename, purpose, bytes, sha256, media_type, created_at) VALUES ('file-a', 'a.txt', 'assistants', 1, '', 'text/plain', 1)`,
		`INSERT INTO vector_stores (id, name, embedding_model, dimensions, metadata, created_at, last_active_at) VALUES ('vs_a', 'kb', 'm', 2, '{}', 1, 1)`,
		`INSERT INTO vector_store_files (store_id, file_id, status, attributes, max_tokens, overlap_tokens, usage_bytes, chunk_count, created_at) VALUES ('vs_a', 'file-a', 'completed', '{"k":"v"}', 800, 400, 8, 3, 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i, c := range []struct {
		text string
		v    []float32
	}{{"close to the query", []float32{1, 0}}, {"also close", []float32{1, 0.1}}, {"the kayak rental desk", []float32{0, 1}}} {
		res, err := db.Exec(`INSERT INTO chunks (store_id, file_id, idx, text, tokens) VALUES ('vs_a', 'file-a', ?, ?, 1)`, i, c.text)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		if _, err := db.Exec(`INSERT INTO chunk_vectors (chunk_id, store_id, file_id, idx, vector) VALUES (?, 'vs_a', 'file-a', ?, ?)`, id, i, encodeVector(nil, c.v)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "files", "file-a"), []byte("a"), 0o600)
	db.Close()

	s := openAt(t, dir)
	defer s.Close()
	var version int
	if err := s.w.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != len(schema) {
		t.Fatalf("user_version %d (%v), want %d", version, err, len(schema))
	}
	q := storage.Query{StoreIDs: []string{"vs_a"}, Vector: []float32{1, 0}, K: 1}
	if hits, err := s.Search(context.Background(), q); err != nil || len(hits) != 1 || hits[0].ChunkIndex != 0 {
		t.Fatalf("dense after migration: %+v %v", hits, err)
	}
	q.Text = "Where can I rent kayaks?"
	hits, err := s.Search(context.Background(), q)
	if err != nil || len(hits) != 1 || hits[0].Text != "the kayak rental desk" || hits[0].Attributes["k"] != "v" || hits[0].Score != 0 {
		t.Fatalf("hybrid after migration: %+v %v", hits, err)
	}
	if _, err := s.w.Exec(`INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Fatalf("full-text index after migration: %v", err)
	}
	if err := s.DetachFile(context.Background(), "vs_a", "file-a"); err != nil {
		t.Fatal(err)
	}
	var left int
	s.w.QueryRow(`SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'kayak'`).Scan(&left)
	if left != 0 {
		t.Fatalf("%d full-text rows left after detaching the file", left)
	}
}
