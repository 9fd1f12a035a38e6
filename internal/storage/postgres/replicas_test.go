package postgres

import (
	"context"
	"github.com/junction-router/junction/internal/storage/postgres/pgtest"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
)

// TestReplicasSeeEachOther: two Stores on one schema (two replicas); what
// one ingests, the other finds by search within the stated bound, and
// what one detaches, the other stops finding.
func TestReplicasSeeEachOther(t *testing.T) {
	dsn := pgtest.Schema(t)
	a, b := openTest(t, dsn), openTest(t, dsn)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	vs, err := a.CreateVectorStore(ctx, storage.NewVectorStore{Name: "docs", EmbeddingModel: "m", Dimensions: 3})
	if err != nil {
		t.Fatal(err)
	}
	f, err := a.CreateFile(ctx, storage.NewFile{Filename: "a.txt", Purpose: "assistants"}, strings.NewReader("hello replicas"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AttachFile(ctx, vs.ID, f.ID, map[string]any{"lang": "en"}, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}); err != nil {
		t.Fatal(err)
	}
	// b knows the store before the file is complete: its search is empty.
	q := storage.Query{StoreIDs: []string{vs.ID}, Vector: []float32{1, 0, 0}, K: 5, Text: "replicas"}
	if hits, err := b.Search(ctx, q); err != nil || len(hits) != 0 {
		t.Fatalf("search on b before completion: %v, %v", hits, err)
	}
	if err := a.CompleteFile(ctx, vs.ID, f.ID, []storage.Chunk{{Index: 0, Text: "hello replicas", Tokens: 2, Vector: []float32{1, 0, 0}}}); err != nil {
		t.Fatal(err)
	}
	committed := time.Now()
	// The bound: the poll interval (200 ms here) plus a read; NOTIFY
	// usually makes it milliseconds. 2 s leaves room for a loaded machine.
	waitHits(t, b, q, 1, 2*time.Second)
	t.Logf("b found a's commit after %v", time.Since(committed).Round(time.Millisecond))
	// b reads the bytes a stored (no replica-local directory).
	rc, _, err := b.OpenFile(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || string(got) != "hello replicas" {
		t.Fatalf("b read %q (%v)", got, err)
	}
	rc.Close()
	if err := a.DetachFile(ctx, vs.ID, f.ID); err != nil {
		t.Fatal(err)
	}
	waitHits(t, b, q, 0, 2*time.Second)
}

// TestReplicaPollFallback: a replica whose notifications never come (no
// LISTEN connection) still follows by polling.
func TestReplicaPollFallback(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := openTest(t, dsn)
	defer a.Close()
	b := openTest(t, dsn)
	defer b.Close()
	b.follow.stop()
	b.follow = startFollower(b, "postgres://127.0.0.1:1/none?connect_timeout=1", lastSeq(t, b), 200*time.Millisecond)
	ctx := context.Background()
	vs, err := a.CreateVectorStore(ctx, storage.NewVectorStore{EmbeddingModel: "m", Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	q := storage.Query{StoreIDs: []string{vs.ID}, Vector: []float32{0, 1}, K: 5}
	if _, err := b.Search(ctx, q); err != nil { // b loads the store on demand
		t.Fatal(err)
	}
	f, err := a.CreateFile(ctx, storage.NewFile{Filename: "b.txt", Purpose: "assistants"}, strings.NewReader("x"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AttachFile(ctx, vs.ID, f.ID, nil, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}); err != nil {
		t.Fatal(err)
	}
	if err := a.CompleteFile(ctx, vs.ID, f.ID, []storage.Chunk{{Index: 0, Text: "x", Tokens: 1, Vector: []float32{0, 1}}}); err != nil {
		t.Fatal(err)
	}
	waitHits(t, b, q, 1, 3*time.Second)
	if err := a.DeleteVectorStore(ctx, vs.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, ok := b.index.Dimension(vs.ID); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b still holds a store a deleted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lastSeq(t *testing.T, s *Store) int64 {
	var n int64
	if err := s.r.QueryRowContext(context.Background(), `SELECT coalesce(max(seq), 0) FROM changes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitHits(t *testing.T, s *Store, q storage.Query, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		hits, err := s.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the other replica finds %d hits, want %d", within, len(hits), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplicaOnChange: a replica is told which store another changed
// (what caches its results drops them), a deleted file included.
func TestReplicaOnChange(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := openTest(t, dsn)
	defer a.Close()
	changed := make(chan string, 16)
	b, err := Open(context.Background(), dsn, Options{PollInterval: 200 * time.Millisecond, OnChange: func(id string) { changed <- id }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	vs, err := a.CreateVectorStore(ctx, storage.NewVectorStore{EmbeddingModel: "m", Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	f, err := a.CreateFile(ctx, storage.NewFile{Filename: "c.txt", Purpose: "assistants"}, strings.NewReader("x"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AttachFile(ctx, vs.ID, f.ID, nil, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}); err != nil {
		t.Fatal(err)
	}
	if err := a.CompleteFile(ctx, vs.ID, f.ID, []storage.Chunk{{Index: 0, Text: "x", Tokens: 1, Vector: []float32{1, 0}}}); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changed, vs.ID) // created
	waitChange(t, changed, vs.ID) // completed
	if err := a.DeleteFile(ctx, f.ID); err != nil {
		t.Fatal(err)
	}
	waitChange(t, changed, vs.ID)
	if hits, err := b.Search(ctx, storage.Query{StoreIDs: []string{vs.ID}, Vector: []float32{1, 0}, K: 5}); err != nil || len(hits) != 0 {
		t.Fatalf("b after a deleted the file: %v, %v", hits, err)
	}
}

func waitChange(t *testing.T, changed chan string, want string) {
	t.Helper()
	select {
	case id := <-changed:
		if id != want {
			t.Fatalf("OnChange(%s), want %s", id, want)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("no OnChange(%s) within 2 s", want)
	}
}
