package sqlite

import (
	"context"
	"database/sql"
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
	if n := strings.Count(matchExpr(strings.Join(many, " ")), " OR "); n != storage.MaxQueryTerms-1 {
		t.Fatalf("%d terms, want %d", n+1, storage.MaxQueryTerms)
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
		if _, err := db.Exec(`INSERT INTO chunk_vectors (chunk_id, store_id, file_id, idx, vector) VALUES (?, 'vs_a', 'file-a', ?, ?)`, id, i, storage.EncodeVector(nil, c.v)); err != nil {
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
	// Version 4: the vocabulary counts the migrated chunks' terms.
	var docs int
	if err := s.w.QueryRow(`SELECT doc FROM chunks_fts_terms WHERE term = ?`, porterStem("rental")).Scan(&docs); err != nil || docs != 1 {
		t.Fatalf("vocabulary after migration: %d chunks hold %q (%v), want 1", docs, porterStem("rental"), err)
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

// TestPorterStemMatchesFTS5: porterStem gives the terms FTS5's porter
// tokenizer indexes (read back from an fts5vocab table).
func TestPorterStemMatchesFTS5(t *testing.T) {
	words := strings.Fields(`caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated
		troubled sized hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational
		valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization predication
		operator feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative
		formalize electriciti electrical hopeful goodness revival allowance inference airliner gyroscopic adjustable
		defensible irritant replacement adjustment dependent adoption homologou communism activate angulariti homologous
		effective bowdlerize probate rate cease controll roll generalizations oscillators running runs library libraries
		opening sunday bikes searched searching searches agreement ability abilities dvds cycling univers universities
		zyx aaa eee yyy ooed being ees`)
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE VIRTUAL TABLE f USING fts5(t, tokenize='porter unicode61')`,
		`CREATE VIRTUAL TABLE v USING fts5vocab(f, row)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range words {
		if _, err := db.Exec(`DELETE FROM f`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO f (t) VALUES (?)`, w); err != nil {
			t.Fatal(err)
		}
		var term string
		if err := db.QueryRow(`SELECT term FROM v`).Scan(&term); err != nil {
			t.Fatal(err)
		}
		if got := porterStem(w); got != term {
			t.Errorf("porterStem(%q) = %q, FTS5 indexes %q", w, got, term)
		}
	}
}

// TestCommonWordsLeftOut: a query word in more chunks than the bound is left
// out of the full-text side (so it neither costs nor ranks), looked up
// under its stem; a rare word still brings its chunk to the top.
func TestCommonWordsLeftOut(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	s.commonDocs = func(int) int { return 5 }
	v, err := s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "kb", EmbeddingModel: "m", Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.CreateFile(ctx, storage.NewFile{Filename: "f", Purpose: "assistants"}, strings.NewReader("f"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AttachFile(ctx, v.ID, f.ID, nil, storage.Chunking{}); err != nil {
		t.Fatal(err)
	}
	// Ten chunks say "searching"; chunk 9 alone says "zeppelin", and its
	// vector is the farthest from the query's.
	var chunks []storage.Chunk
	for i := 0; i < 10; i++ {
		text := fmt.Sprintf("searching text %d", i)
		if i == 9 {
			text += " zeppelin"
		}
		chunks = append(chunks, storage.Chunk{Index: i, Text: text, Vector: []float32{1, float32(i) / 10}})
	}
	if err := s.CompleteFile(ctx, v.ID, f.ID, chunks); err != nil {
		t.Fatal(err)
	}
	got, err := s.rareTerms(ctx, []string{"searches", "zeppelin", "nowhere"})
	if err != nil || strings.Join(got, " ") != "zeppelin nowhere" {
		t.Fatalf("rare terms %q (%v), want zeppelin nowhere", got, err)
	}
	search := func(text string) []storage.Hit {
		hits, err := s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: []float32{1, 0}, K: 3, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	dense := search("")
	if common := search("searches"); fmt.Sprint(common) != fmt.Sprint(dense) {
		t.Fatalf("a common word's search %+v, want the dense one %+v", common, dense)
	}
	if hits := search("searches zeppelin"); hits[0].ChunkIndex != 9 {
		t.Fatalf("the rare word's chunk is not first: %+v", hits)
	}
	// Under a looser bound the common word is kept.
	s.commonDocs = func(int) int { return 10 }
	if got, err := s.rareTerms(ctx, []string{"searches", "zeppelin"}); err != nil || len(got) != 2 {
		t.Fatalf("rare terms under a loose bound %q (%v)", got, err)
	}
}
