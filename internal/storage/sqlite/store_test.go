package sqlite

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
)

func TestOpenLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "junction")
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{dir, filepath.Join(dir, "files")} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Fatalf("%s has mode %v, want 0700", p, st.Mode().Perm())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "junction.db")); err != nil {
		t.Fatal(err)
	}
	var mode string
	var sync, fk, version int
	if err := s.w.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q (%v)", mode, err)
	}
	for _, db := range []*sql.DB{s.w, s.r} {
		if err := db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil || sync != 2 {
			t.Fatalf("synchronous %d (%v), want 2 (FULL)", sync, err)
		}
		if err := db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
			t.Fatalf("foreign_keys %d (%v)", fk, err)
		}
	}
	if err := s.w.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != len(schema) {
		t.Fatalf("user_version %d (%v), want %d", version, err, len(schema))
	}
	if _, err := Open(context.Background(), "", Options{}); err == nil {
		t.Fatal("Open with no directory succeeded")
	}
}

func TestOddDirectoryName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%20d e")
	s := openAt(t, dir)
	if _, err := s.CreateVectorStore(context.Background(), storage.NewVectorStore{Name: "x", EmbeddingModel: "m", Dimensions: 2}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, dbName)); err != nil {
		t.Fatalf("the database is not where it belongs: %v", err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	if _, err := s.w.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, len(schema)+1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(context.Background(), dir, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("opening a newer schema: %v", err)
	}
}

func TestOneProcessPerDirectory(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	if _, err := Open(context.Background(), dir, Options{}); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("a second Open of a directory in use: %v", err)
	}
	s.Close()
	openAt(t, dir).Close()
}

func openAt(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func filesOnDisk(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestTooLargeLeavesNothingOnDisk(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	defer s.Close()
	ctx := context.Background()
	_, err := s.CreateFile(ctx, storage.NewFile{Filename: "big.bin", Purpose: "assistants"}, io.LimitReader(zeros{}, 10<<20), 1<<20)
	if !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("10 MiB over a 1 MiB limit: %v", err)
	}
	if names := filesOnDisk(t, dir); len(names) != 0 {
		t.Fatalf("left on disk: %v", names)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.CreateFile(cctx, storage.NewFile{Filename: "c.bin", Purpose: "assistants"}, strings.NewReader("x"), 0); err == nil {
		t.Fatal("an upload with a cancelled context succeeded")
	}
	if names := filesOnDisk(t, dir); len(names) != 0 {
		t.Fatalf("left on disk after a cancelled upload: %v", names)
	}
	f, err := s.CreateFile(ctx, storage.NewFile{Filename: "ok.bin", Purpose: "assistants"}, io.LimitReader(zeros{}, 1<<20), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if names := filesOnDisk(t, dir); len(names) != 1 || names[0] != f.ID {
		t.Fatalf("on disk: %v, want [%s]", names, f.ID)
	}
	if err := s.DeleteFile(ctx, f.ID); err != nil {
		t.Fatal(err)
	}
	if names := filesOnDisk(t, dir); len(names) != 0 {
		t.Fatalf("a deleted file's bytes stay: %v", names)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestOrphansRemovedAtOpen(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	f, err := s.CreateFile(context.Background(), storage.NewFile{Filename: "keep.txt", Purpose: "assistants"}, strings.NewReader("keep"), 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, name := range []string{tmpPrefix + "123", "file-norow"} {
		if err := os.WriteFile(filepath.Join(dir, "files", name), []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s = openAt(t, dir)
	defer s.Close()
	if names := filesOnDisk(t, dir); len(names) != 1 || names[0] != f.ID {
		t.Fatalf("after Open: %v, want [%s]", names, f.ID)
	}
}

// TestReopen closes a store with data of every kind and opens it again:
// everything is there and the index is rebuilt.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openAt(t, dir)
	v, err := s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "kb", EmbeddingModel: "m", Dimensions: 3, Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.CreateFile(ctx, storage.NewFile{Filename: "a.md", Purpose: "assistants", MediaType: "text/markdown"}, strings.NewReader("# A"), 0)
	g, _ := s.CreateFile(ctx, storage.NewFile{Filename: "b.md", Purpose: "assistants"}, strings.NewReader("# B"), 0)
	h, _ := s.CreateFile(ctx, storage.NewFile{Filename: "c.md", Purpose: "assistants"}, strings.NewReader("# C"), 0)
	for _, id := range []string{f.ID, g.ID, h.ID} {
		if _, err := s.AttachFile(ctx, v.ID, id, map[string]any{"n": id == f.ID}, storage.Chunking{MaxTokens: 100, OverlapTokens: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CompleteFile(ctx, v.ID, f.ID, []storage.Chunk{{Index: 0, Text: "one", Tokens: 1, Vector: []float32{1, 0, 0}}, {Index: 1, Text: "two", Tokens: 1, Vector: []float32{0, 1, 0}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FailFile(ctx, v.ID, h.ID, "invalid_file", "empty"); err != nil {
		t.Fatal(err)
	}
	m, _, err := s.Remember(ctx, storage.Memory{Scope: "u", Text: "likes tea", EmbeddingModel: "m", Vector: []float32{0, 0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: []float32{0, 1, 0}, K: 10})
	searched, _ := s.GetVectorStore(ctx, v.ID)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}

	s = openAt(t, dir)
	defer s.Close()
	got, err := s.GetVectorStore(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: []float32{0, 1, 0}, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(before) != fmt.Sprint(after) || len(after) != 2 || after[0].Text != "two" || after[0].Attributes["n"] != true {
		t.Fatalf("search before %+v\nafter %+v", before, after)
	}
	if got.Name != "kb" || got.Metadata["k"] != "v" || got.FileCounts != (storage.FileCounts{Completed: 1, InProgress: 1, Failed: 1, Total: 3}) ||
		got.UsageBytes != 6 || !got.LastActiveAt.Equal(searched.LastActiveAt) || !got.CreatedAt.Equal(v.CreatedAt) {
		t.Fatalf("store after reopen %+v (searched at %v)", got, searched.LastActiveAt)
	}
	pending, _ := s.PendingFiles(ctx)
	if len(pending) != 1 || pending[0].FileID != g.ID || pending[0].Chunking.MaxTokens != 100 {
		t.Fatalf("pending after reopen %+v", pending)
	}
	vf, _ := s.GetVectorStoreFile(ctx, v.ID, h.ID)
	if vf.Status != storage.StatusFailed || vf.LastErrorMessage != "empty" {
		t.Fatalf("failed file after reopen %+v", vf)
	}
	rc, _, err := s.OpenFile(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "# A" {
		t.Fatalf("bytes after reopen %q", b)
	}
	hits, err := s.Recall(ctx, "u", "m", []float32{0, 0, 1}, 1, 0)
	if err != nil || len(hits) != 1 || hits[0].ID != m.ID {
		t.Fatalf("recall after reopen %+v %v", hits, err)
	}
	if n := s.index.Len(v.ID); n != 2 {
		t.Fatalf("index has %d vectors after reopen, want 2", n)
	}
}

// The crash test: a child process writes and acknowledges each write on
// stdout once the call returned; the parent kills it with SIGKILL mid-way
// and checks, after reopening, that every acknowledged write is there.

const crashEnv = "JUNCTION_SQLITE_CRASH_CHILD"

func TestCrashSafety(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashSafety$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []string
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(60 * time.Second)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ack ") {
			acks = append(acks, strings.TrimPrefix(line, "ack "))
		}
		if len(acks) >= 60 || time.Now().After(deadline) {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, out)
	cmd.Wait()
	if len(acks) < 10 {
		t.Fatalf("the child acknowledged only %d writes", len(acks))
	}

	s := openAt(t, dir)
	defer s.Close()
	ctx := context.Background()
	for _, a := range acks {
		f := strings.Fields(a)
		switch f[0] {
		case "store":
			if _, err := s.GetVectorStore(ctx, f[1]); err != nil {
				t.Errorf("acknowledged store %s: %v", f[1], err)
			}
		case "file": // id sha256
			rc, file, err := s.OpenFile(ctx, f[1])
			if err != nil {
				t.Errorf("acknowledged file %s: %v", f[1], err)
				continue
			}
			h := sha256.New()
			io.Copy(h, rc)
			rc.Close()
			if hex.EncodeToString(h.Sum(nil)) != f[2] || file.SHA256 != f[2] {
				t.Errorf("file %s: content differs from the acknowledged upload", f[1])
			}
		case "complete": // store file
			vf, err := s.GetVectorStoreFile(ctx, f[1], f[2])
			if err != nil || vf.Status != storage.StatusCompleted || vf.Chunks != 4 {
				t.Errorf("acknowledged completion of %s: %+v %v", f[2], vf, err)
			}
			hits, err := s.Search(ctx, storage.Query{StoreIDs: []string{f[1]}, Vector: crashVector(f[2]), K: 1000,
				Filter: &storage.Filter{Type: "eq", Key: "id", Value: f[2]}})
			if err != nil || len(hits) != 4 {
				t.Errorf("acknowledged completion of %s: %d hits (%v)", f[2], len(hits), err)
			}
		case "memory":
			if _, err := s.GetMemory(ctx, f[1]); err != nil {
				t.Errorf("acknowledged memory %s: %v", f[1], err)
			}
		}
	}
	// Nothing half-written: every completed file has all its chunks.
	page, err := s.ListVectorStores(ctx, storage.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range page.Data {
		n := 0
		if err := s.ScanChunks(ctx, []string{v.ID}, func(storage.Hit, []float32) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != 4*v.FileCounts.Completed {
			t.Errorf("store %s: %d chunks for %d completed files", v.ID, n, v.FileCounts.Completed)
		}
	}
	t.Logf("%d acknowledged writes survived SIGKILL", len(acks))
}

func crashVector(id string) []float32 {
	h := sha256.Sum256([]byte(id))
	v := make([]float32, 8)
	for i := range v {
		v[i] = float32(h[i]) - 128
	}
	return v
}

// crashChild writes until killed, printing "ack ..." after each write.
func crashChild(dir string) {
	ctx := context.Background()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	v, err := s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "crash", EmbeddingModel: "m", Dimensions: 8})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("ack store %s\n", v.ID)
	for i := 0; ; i++ {
		body := strings.Repeat(fmt.Sprintf("line %d\n", i), 100+i)
		f, err := s.CreateFile(ctx, storage.NewFile{Filename: fmt.Sprintf("f%d.txt", i), Purpose: "assistants"}, strings.NewReader(body), 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		sum := sha256.Sum256([]byte(body))
		fmt.Printf("ack file %s %s\n", f.ID, hex.EncodeToString(sum[:]))
		if _, err := s.AttachFile(ctx, v.ID, f.ID, map[string]any{"id": f.ID}, storage.Chunking{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		chunks := make([]storage.Chunk, 4)
		for c := range chunks {
			chunks[c] = storage.Chunk{Index: c, Text: fmt.Sprintf("chunk %d of %d", c, i), Vector: crashVector(f.ID)}
		}
		if err := s.CompleteFile(ctx, v.ID, f.ID, chunks); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("ack complete %s %s\n", v.ID, f.ID)
		m, _, err := s.Remember(ctx, storage.Memory{Scope: "crash", Text: fmt.Sprintf("fact %d", i), EmbeddingModel: "m", Vector: crashVector(f.ID)})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("ack memory %s\n", m.ID)
	}
}

// TestReopenSplitFile: a file whose chunks do not have consecutive ids
// (which CompleteFile never writes) still loads whole.
func TestReopenSplitFile(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openAt(t, dir)
	v, _ := s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "kb", EmbeddingModel: "m", Dimensions: 2})
	var first int64
	for i, name := range []string{"a", "b"} {
		f, _ := s.CreateFile(ctx, storage.NewFile{Filename: name, Purpose: "assistants"}, strings.NewReader(name), 0)
		if _, err := s.AttachFile(ctx, v.ID, f.ID, nil, storage.Chunking{}); err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteFile(ctx, v.ID, f.ID, []storage.Chunk{{Index: 0, Text: name + "0", Vector: []float32{1, 0}}, {Index: 1, Text: name + "1", Vector: []float32{0, 1}}}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := s.w.QueryRow(`SELECT min(id) FROM chunks`).Scan(&first); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{`PRAGMA foreign_keys = OFF`, `UPDATE chunks SET id = 1000 WHERE id = ?`, `UPDATE chunk_vectors SET chunk_id = 1000 WHERE chunk_id = ?`, `PRAGMA foreign_keys = ON`} {
		var args []any
		if strings.Contains(q, "?") {
			args = append(args, first)
		}
		if _, err := s.w.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = openAt(t, dir)
	defer s.Close()
	hits, err := s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: []float32{1, 1}, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, h := range hits {
		texts = append(texts, h.Text)
	}
	sort.Strings(texts)
	if strings.Join(texts, ",") != "a0,a1,b0,b1" {
		t.Fatalf("after reopen: %v", texts)
	}
}

// TestMigrateFromVersion1 builds a database of schema version 1 (vectors
// inside chunks) and opens it: the migration moves the vectors and search
// finds them.
func TestMigrateFromVersion1(t *testing.T) {
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
		`PRAGMA user_version = 1`,
		`INSERT INTO files (id, filename, purpose, bytes, sha256, media_type, created_at) VALUES ('file-a', 'a.txt', 'assistants', 1, '', 'text/plain', 1)`,
		`INSERT INTO vector_stores (id, name, embedding_model, dimensions, metadata, created_at, last_active_at) VALUES ('vs_a', 'kb', 'm', 2, '{}', 1, 1)`,
		`INSERT INTO vector_store_files (store_id, file_id, status, attributes, max_tokens, overlap_tokens, usage_bytes, chunk_count, created_at) VALUES ('vs_a', 'file-a', 'completed', '{"k":"v"}', 800, 400, 8, 2, 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i, v := range [][]float32{{1, 0}, {0, 1}} {
		if _, err := db.Exec(`INSERT INTO chunks (store_id, file_id, idx, text, tokens, vector) VALUES ('vs_a', 'file-a', ?, ?, 1, ?)`, i, fmt.Sprintf("text%d", i), storage.EncodeVector(nil, v)); err != nil {
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
	hits, err := s.Search(context.Background(), storage.Query{StoreIDs: []string{"vs_a"}, Vector: []float32{0, 1}, K: 5})
	if err != nil || len(hits) != 2 || hits[0].Text != "text1" || hits[0].Attributes["k"] != "v" || hits[0].Filename != "a.txt" {
		t.Fatalf("after migration: %+v %v", hits, err)
	}
	n := 0
	if err := s.ScanChunks(context.Background(), []string{"vs_a"}, func(_ storage.Hit, v []float32) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("scan after migration: %d chunks, %v", n, err)
	}
	if err := s.DetachFile(context.Background(), "vs_a", "file-a"); err != nil {
		t.Fatal(err)
	}
	var left int
	s.w.QueryRow(`SELECT count(*) FROM chunk_vectors`).Scan(&left)
	if left != 0 {
		t.Fatalf("%d vectors left after detaching the file", left)
	}
}
