// Package storagetest is the conformance suite every storage backend
// passes: Run exercises the whole storage.Store interface (paging,
// conflicts, not-found errors, the life of a vector-store file, search order
// and filters, cascades, memories, and concurrent use) against a fresh store
// per test.
package storagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/junction-router/junction/internal/storage"
)

// Run runs the suite. open returns a new, empty store for each test; the
// suite closes it (one test checks that calls after Close fail).
func Run(t *testing.T, open func(t *testing.T) storage.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"Files", testFiles},
		{"FileLimit", testFileLimit},
		{"Paging", testPaging},
		{"VectorStores", testVectorStores},
		{"AttachLifecycle", testAttachLifecycle},
		{"CompleteErrors", testCompleteErrors},
		{"FailedFileNotSearchable", testFailedFile},
		{"Search", testSearch},
		{"SearchTies", testSearchTies},
		{"SearchFilter", testSearchFilter},
		{"SearchErrors", testSearchErrors},
		{"SearchText", testSearchText},
		{"SearchTextFilterAndStores", testSearchTextFilterAndStores},
		{"SearchTextRemoved", testSearchTextRemoved},
		{"DeleteCascades", testDeleteCascades},
		{"ScanChunks", testScanChunks},
		{"Memories", func(t *testing.T, s storage.Store) { testMemories(t, s) }},
		{"MemoryPaging", func(t *testing.T, s storage.Store) { testMemoryPaging(t, s) }},
		{"Replays", testReplays},
		{"ReplayBounds", testReplayBounds},
		{"Outcomes", testOutcomes},
		{"Concurrency", testConcurrency},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			closed := false
			t.Cleanup(func() {
				if !closed {
					s.Close()
				}
			})
			if tc.name == "Closed" {
				closed = true
			}
			defer func() {
				if r := recover(); r != nil {
					f, ok := r.(mustFail)
					if !ok {
						panic(r)
					}
					t.Fatalf("%s: unexpected error: %v", f.where, f.err)
				}
			}()
			tc.fn(t, s)
		})
	}
}

// ---- helpers

// mustFail carries an unexpected error from must to the test's recover.
type mustFail struct {
	err   error
	where string
}

// must returns v or, on error, fails the running test (through a panic the
// suite recovers in the test's goroutine; use it only there).
func must[T any](v T, err error) T {
	if err != nil {
		_, file, line, _ := runtime.Caller(1)
		panic(mustFail{err, fmt.Sprintf("%s:%d", filepath.Base(file), line)})
	}
	return v
}

func wantErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func upload(t *testing.T, s storage.Store, name, body string) storage.File {
	t.Helper()
	return must(s.CreateFile(context.Background(), storage.NewFile{Filename: name, Purpose: "assistants", MediaType: "text/plain"}, strings.NewReader(body), 0))
}

func newStore(t *testing.T, s storage.Store, name string, dim int) storage.VectorStore {
	t.Helper()
	return must(s.CreateVectorStore(context.Background(), storage.NewVectorStore{Name: name, EmbeddingModel: "test-model", Dimensions: dim}))
}

// unit returns a dim-long vector with 1 at i (mod dim) and small noise
// from seed, so similarity is predictable.
func unit(dim, i int) []float32 {
	v := make([]float32, dim)
	v[i%dim] = 1
	return v
}

// mix returns a*unit(i) + b*unit(j).
func mix(dim, i, j int, a, b float32) []float32 {
	v := make([]float32, dim)
	v[i%dim] += a
	v[j%dim] += b
	return v
}

// ingest attaches a file with attrs and completes it with the given vectors
// (chunk i has text "<name> chunk i").
func ingest(t *testing.T, s storage.Store, storeID, name string, attrs map[string]any, vecs ...[]float32) storage.File {
	t.Helper()
	ctx := context.Background()
	f := upload(t, s, name, "content of "+name)
	must(s.AttachFile(ctx, storeID, f.ID, attrs, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}))
	chunks := make([]storage.Chunk, len(vecs))
	for i, v := range vecs {
		chunks[i] = storage.Chunk{Index: i, Text: fmt.Sprintf("%s chunk %d", name, i), Tokens: 3, Vector: v}
	}
	if err := s.CompleteFile(ctx, storeID, f.ID, chunks); err != nil {
		t.Fatal(err)
	}
	return f
}

func search(t *testing.T, s storage.Store, q storage.Query) []storage.Hit {
	t.Helper()
	return must(s.Search(context.Background(), q))
}

func hitKeys(hits []storage.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s#%d", h.Filename, h.ChunkIndex)
	}
	return out
}

// ---- files

func testFiles(t *testing.T, s storage.Store) {
	ctx := context.Background()
	body := strings.Repeat("hello world\n", 1000)
	f := must(s.CreateFile(ctx, storage.NewFile{Filename: "dir/sub/notes.md", Purpose: "assistants", MediaType: "text/markdown"}, strings.NewReader(body), int64(len(body))))
	sum := sha256.Sum256([]byte(body))
	if !strings.HasPrefix(f.ID, "file-") || f.Filename != "notes.md" || f.Bytes != int64(len(body)) || f.SHA256 != hex.EncodeToString(sum[:]) ||
		f.MediaType != "text/markdown" || f.Purpose != "assistants" || f.CreatedAt.IsZero() {
		t.Fatalf("created file %+v", f)
	}
	g := must(s.GetFile(ctx, f.ID))
	if g.ID != f.ID || g.SHA256 != f.SHA256 || g.Filename != f.Filename || !g.CreatedAt.Equal(f.CreatedAt) {
		t.Fatalf("got %+v, want %+v", g, f)
	}
	rc, of, err := s.OpenFile(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != body || of.ID != f.ID {
		t.Fatalf("OpenFile read %d bytes (file %s)", len(got), of.ID)
	}
	img := must(s.CreateFile(ctx, storage.NewFile{Filename: "a.png", Purpose: "vision", MediaType: "image/png"}, bytes.NewReader([]byte{0x89, 'P', 'N', 'G'}), 0))
	all := must(s.ListFiles(ctx, "", storage.ListOptions{}))
	if len(all.Data) != 2 || all.HasMore || all.Data[0].ID != img.ID {
		t.Fatalf("list all: %+v", all)
	}
	vision := must(s.ListFiles(ctx, "vision", storage.ListOptions{}))
	if len(vision.Data) != 1 || vision.Data[0].ID != img.ID {
		t.Fatalf("list vision: %+v", vision)
	}
	if err := s.DeleteFile(ctx, f.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetFile(ctx, f.ID)
	wantErr(t, err, storage.ErrNotFound, "GetFile after delete")
	_, _, err = s.OpenFile(ctx, f.ID)
	wantErr(t, err, storage.ErrNotFound, "OpenFile after delete")
	wantErr(t, s.DeleteFile(ctx, f.ID), storage.ErrNotFound, "DeleteFile twice")
	_, err = s.GetFile(ctx, "file-nope")
	wantErr(t, err, storage.ErrNotFound, "GetFile unknown")
	// An empty file is a file.
	e := must(s.CreateFile(ctx, storage.NewFile{Filename: "empty.txt", Purpose: "assistants"}, strings.NewReader(""), 10))
	if e.Bytes != 0 {
		t.Fatalf("empty file has %d bytes", e.Bytes)
	}
}

func testFileLimit(t *testing.T, s storage.Store) {
	ctx := context.Background()
	_, err := s.CreateFile(ctx, storage.NewFile{Filename: "big.txt", Purpose: "assistants"}, strings.NewReader(strings.Repeat("x", 101)), 100)
	wantErr(t, err, storage.ErrTooLarge, "101 bytes over a 100-byte limit")
	exact := must(s.CreateFile(ctx, storage.NewFile{Filename: "ok.txt", Purpose: "assistants"}, strings.NewReader(strings.Repeat("x", 100)), 100))
	if exact.Bytes != 100 {
		t.Fatalf("exact-limit file has %d bytes", exact.Bytes)
	}
	page := must(s.ListFiles(ctx, "", storage.ListOptions{}))
	if len(page.Data) != 1 {
		t.Fatalf("after a refused upload, %d files are listed", len(page.Data))
	}
	// A reader that fails keeps nothing either.
	_, err = s.CreateFile(ctx, storage.NewFile{Filename: "broken.txt", Purpose: "assistants"}, io.MultiReader(strings.NewReader("abc"), errReader{}), 0)
	if err == nil {
		t.Fatal("a failing reader was accepted")
	}
	if page := must(s.ListFiles(ctx, "", storage.ListOptions{})); len(page.Data) != 1 {
		t.Fatalf("after a failed upload, %d files are listed", len(page.Data))
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// ---- paging

func testPaging(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var ids []string // creation order
	for i := 0; i < 25; i++ {
		ids = append(ids, upload(t, s, fmt.Sprintf("f%02d.txt", i), "x").ID)
	}
	rev := make([]string, len(ids))
	for i, id := range ids {
		rev[len(ids)-1-i] = id
	}
	fileIDs := func(p storage.Page[storage.File]) []string {
		out := make([]string, len(p.Data))
		for i, f := range p.Data {
			out[i] = f.ID
		}
		return out
	}
	eq := func(what string, got, want []string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
		}
	}
	p := must(s.ListFiles(ctx, "", storage.ListOptions{}))
	eq("default page (desc, 20)", fileIDs(p), rev[:20])
	if !p.HasMore {
		t.Fatal("default page: has_more false with 25 files")
	}
	p = must(s.ListFiles(ctx, "", storage.ListOptions{After: rev[19]}))
	eq("second page", fileIDs(p), rev[20:])
	if p.HasMore {
		t.Fatal("last page has more")
	}
	p = must(s.ListFiles(ctx, "", storage.ListOptions{Order: "asc", Limit: 10}))
	eq("asc 10", fileIDs(p), ids[:10])
	p = must(s.ListFiles(ctx, "", storage.ListOptions{Order: "asc", Limit: 10, After: ids[9]}))
	eq("asc after 9", fileIDs(p), ids[10:20])
	p = must(s.ListFiles(ctx, "", storage.ListOptions{Order: "asc", Limit: 5, Before: ids[10]}))
	eq("asc before 10", fileIDs(p), ids[5:10])
	if !p.HasMore {
		t.Fatal("asc before 10 limit 5: has_more false though 5 more precede")
	}
	p = must(s.ListFiles(ctx, "", storage.ListOptions{Limit: 3, Before: rev[5]}))
	eq("desc before", fileIDs(p), rev[2:5])
	p = must(s.ListFiles(ctx, "", storage.ListOptions{Order: "asc", After: ids[2], Before: ids[6]}))
	eq("asc between", fileIDs(p), ids[3:6])
	p = must(s.ListFiles(ctx, "", storage.ListOptions{Limit: 100}))
	eq("limit 100", fileIDs(p), rev)
	p = must(s.ListFiles(ctx, "", storage.ListOptions{Order: "asc", After: ids[24]}))
	if len(p.Data) != 0 || p.HasMore || p.Data == nil {
		t.Fatalf("after the last: %+v (want an empty, non-nil page)", p)
	}
	for _, o := range []storage.ListOptions{{Limit: -1}, {Limit: 101}, {Order: "sideways"}, {After: "file-nope"}, {Before: "file-nope"}} {
		_, err := s.ListFiles(ctx, "", o)
		wantErr(t, err, storage.ErrInvalid, fmt.Sprintf("list with %+v", o))
	}
	// Vector stores and their files page the same way.
	var vs []string
	for i := 0; i < 3; i++ {
		vs = append(vs, newStore(t, s, fmt.Sprintf("store-%d", i), 4).ID)
	}
	sp := must(s.ListVectorStores(ctx, storage.ListOptions{Limit: 2}))
	if len(sp.Data) != 2 || !sp.HasMore || sp.Data[0].ID != vs[2] || sp.Data[1].ID != vs[1] {
		t.Fatalf("vector stores page: %+v", sp)
	}
	sp = must(s.ListVectorStores(ctx, storage.ListOptions{Limit: 2, After: vs[1]}))
	if len(sp.Data) != 1 || sp.HasMore || sp.Data[0].ID != vs[0] {
		t.Fatalf("vector stores second page: %+v", sp)
	}
	for _, id := range ids[:5] {
		must(s.AttachFile(ctx, vs[0], id, nil, storage.Chunking{}))
	}
	fp := must(s.ListVectorStoreFiles(ctx, vs[0], "", storage.ListOptions{Order: "asc", Limit: 2, After: ids[1]}))
	if len(fp.Data) != 2 || !fp.HasMore || fp.Data[0].FileID != ids[2] || fp.Data[1].FileID != ids[3] {
		t.Fatalf("vector store files page: %+v", fp)
	}
	_, err := s.ListVectorStoreFiles(ctx, vs[0], "", storage.ListOptions{After: ids[10]})
	wantErr(t, err, storage.ErrInvalid, "a cursor of a file not in the store")
	_, err = s.ListVectorStoreFiles(ctx, vs[0], "bogus", storage.ListOptions{})
	wantErr(t, err, storage.ErrInvalid, "an unknown status")
	_, err = s.ListVectorStoreFiles(ctx, "vs_nope", "", storage.ListOptions{})
	wantErr(t, err, storage.ErrNotFound, "files of an unknown store")
}

// ---- vector stores

func testVectorStores(t *testing.T, s storage.Store) {
	ctx := context.Background()
	v := must(s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "docs", Metadata: map[string]string{"team": "a"}, EmbeddingModel: "m1", Dimensions: 8}))
	if !strings.HasPrefix(v.ID, "vs_") || v.Name != "docs" || v.Metadata["team"] != "a" || v.EmbeddingModel != "m1" || v.Dimensions != 8 ||
		v.CreatedAt.IsZero() || v.LastActiveAt.IsZero() || v.FileCounts != (storage.FileCounts{}) || v.UsageBytes != 0 {
		t.Fatalf("created %+v", v)
	}
	_, err := s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "docs", EmbeddingModel: "m1", Dimensions: 8})
	wantErr(t, err, storage.ErrConflict, "a second store named docs")
	for _, bad := range []storage.NewVectorStore{{Name: "x", EmbeddingModel: "m1"}, {Name: "y", Dimensions: 8}, {Name: "z", EmbeddingModel: "m", Dimensions: -1}} {
		_, err := s.CreateVectorStore(ctx, bad)
		wantErr(t, err, storage.ErrInvalid, fmt.Sprintf("create %+v", bad))
	}
	// Unnamed stores do not collide.
	u1 := must(s.CreateVectorStore(ctx, storage.NewVectorStore{EmbeddingModel: "m1", Dimensions: 8}))
	must(s.CreateVectorStore(ctx, storage.NewVectorStore{EmbeddingModel: "m1", Dimensions: 8}))

	for _, key := range []string{v.ID, "docs"} {
		got := must(s.FindVectorStore(ctx, key))
		if got.ID != v.ID {
			t.Fatalf("FindVectorStore(%q) = %s", key, got.ID)
		}
	}
	_, err = s.FindVectorStore(ctx, "nope")
	wantErr(t, err, storage.ErrNotFound, "find an unknown name")
	_, err = s.FindVectorStore(ctx, "")
	wantErr(t, err, storage.ErrNotFound, "find an empty name")
	_, err = s.GetVectorStore(ctx, "docs")
	wantErr(t, err, storage.ErrNotFound, "GetVectorStore by name")

	other := newStore(t, s, "other", 8)
	name := "docs"
	_, err = s.UpdateVectorStore(ctx, other.ID, storage.VectorStoreUpdate{Name: &name})
	wantErr(t, err, storage.ErrConflict, "rename onto a taken name")
	renamed := "manuals"
	up := must(s.UpdateVectorStore(ctx, v.ID, storage.VectorStoreUpdate{Name: &renamed}))
	if up.Name != "manuals" || up.Metadata["team"] != "a" {
		t.Fatalf("renamed: %+v", up)
	}
	up = must(s.UpdateVectorStore(ctx, v.ID, storage.VectorStoreUpdate{Metadata: map[string]string{"team": "b"}}))
	if up.Name != "manuals" || up.Metadata["team"] != "b" || len(up.Metadata) != 1 {
		t.Fatalf("metadata update: %+v", up)
	}
	if got := must(s.FindVectorStore(ctx, "manuals")); got.ID != v.ID {
		t.Fatal("find by the new name failed")
	}
	if _, err := s.FindVectorStore(ctx, "docs"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the old name still resolves: %v", err)
	}
	// The old name is free again.
	must(s.UpdateVectorStore(ctx, other.ID, storage.VectorStoreUpdate{Name: &name}))
	_, err = s.UpdateVectorStore(ctx, "vs_nope", storage.VectorStoreUpdate{Name: &renamed})
	wantErr(t, err, storage.ErrNotFound, "update an unknown store")

	// Counts and usage.
	f1 := ingest(t, s, v.ID, "a.txt", nil, unit(8, 0), unit(8, 1)) // "a.txt chunk 0" + "a.txt chunk 1" = 26 bytes
	f2 := upload(t, s, "b.txt", "b")
	must(s.AttachFile(ctx, v.ID, f2.ID, nil, storage.Chunking{}))
	f3 := upload(t, s, "c.txt", "c")
	must(s.AttachFile(ctx, v.ID, f3.ID, nil, storage.Chunking{}))
	if err := s.FailFile(ctx, v.ID, f3.ID, "invalid_file", "no text"); err != nil {
		t.Fatal(err)
	}
	got := must(s.GetVectorStore(ctx, v.ID))
	want := storage.FileCounts{InProgress: 1, Completed: 1, Failed: 1, Total: 3}
	if got.FileCounts != want || got.UsageBytes != int64(len("a.txt chunk 0")+len("a.txt chunk 1")) {
		t.Fatalf("counts %+v usage %d", got.FileCounts, got.UsageBytes)
	}
	vf := must(s.GetVectorStoreFile(ctx, v.ID, f1.ID))
	if vf.Chunks != 2 || vf.UsageBytes != got.UsageBytes || vf.Status != storage.StatusCompleted {
		t.Fatalf("vector store file %+v", vf)
	}
	list := must(s.ListVectorStores(ctx, storage.ListOptions{}))
	found := false
	for _, x := range list.Data {
		if x.ID == v.ID {
			found = true
			if x.FileCounts != want || x.UsageBytes != got.UsageBytes {
				t.Fatalf("listed counts %+v usage %d", x.FileCounts, x.UsageBytes)
			}
		}
	}
	if !found || len(list.Data) != 4 {
		t.Fatalf("listed %d stores (found=%v)", len(list.Data), found)
	}
	// Search marks the store active.
	before := got.LastActiveAt
	search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(8, 0), K: 1})
	if after := must(s.GetVectorStore(ctx, v.ID)).LastActiveAt; after.Before(before) {
		t.Fatalf("last_active_at went back: %v -> %v", before, after)
	}

	if err := s.DeleteVectorStore(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetVectorStore(ctx, v.ID)
	wantErr(t, err, storage.ErrNotFound, "get a deleted store")
	wantErr(t, s.DeleteVectorStore(ctx, v.ID), storage.ErrNotFound, "delete twice")
	_, err = s.GetVectorStoreFile(ctx, v.ID, f1.ID)
	wantErr(t, err, storage.ErrNotFound, "a deleted store's file")
	must(s.GetFile(ctx, f1.ID)) // the file stays
	_, err = s.FindVectorStore(ctx, "manuals")
	wantErr(t, err, storage.ErrNotFound, "find a deleted store by name")
	must(s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "manuals", EmbeddingModel: "m1", Dimensions: 8})) // name free
	_ = u1
}

func testAttachLifecycle(t *testing.T, s storage.Store) {
	ctx := context.Background()
	v := newStore(t, s, "kb", 4)
	f := upload(t, s, "doc.md", "# doc")
	attrs := map[string]any{"lang": "en", "year": 2024.0, "draft": false}
	vf := must(s.AttachFile(ctx, v.ID, f.ID, attrs, storage.Chunking{MaxTokens: 200, OverlapTokens: 50}))
	if vf.Status != storage.StatusInProgress || vf.FileID != f.ID || vf.VectorStoreID != v.ID || vf.Chunking.MaxTokens != 200 || vf.Attributes["lang"] != "en" {
		t.Fatalf("attached %+v", vf)
	}
	_, err := s.AttachFile(ctx, v.ID, f.ID, nil, storage.Chunking{})
	wantErr(t, err, storage.ErrConflict, "attach twice")
	_, err = s.AttachFile(ctx, "vs_nope", f.ID, nil, storage.Chunking{})
	wantErr(t, err, storage.ErrNotFound, "attach to an unknown store")
	_, err = s.AttachFile(ctx, v.ID, "file-nope", nil, storage.Chunking{})
	wantErr(t, err, storage.ErrNotFound, "attach an unknown file")
	_, err = s.AttachFile(ctx, v.ID, upload(t, s, "x", "x").ID, map[string]any{"bad": []int{1}}, storage.Chunking{})
	wantErr(t, err, storage.ErrInvalid, "an attribute that is a list")

	pending := must(s.PendingFiles(ctx))
	if len(pending) != 1 || pending[0].FileID != f.ID || pending[0].VectorStoreID != v.ID || pending[0].Chunking.MaxTokens != 200 {
		t.Fatalf("pending %+v", pending)
	}
	// Nothing is searchable before completion.
	if hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 0), K: 5}); len(hits) != 0 {
		t.Fatalf("in-progress file searchable: %v", hitKeys(hits))
	}
	chunks := []storage.Chunk{
		{Index: 0, Text: "alpha", Tokens: 1, Vector: unit(4, 0)},
		{Index: 1, Text: "beta", Tokens: 1, Vector: unit(4, 1)},
	}
	if err := s.CompleteFile(ctx, v.ID, f.ID, chunks); err != nil {
		t.Fatal(err)
	}
	vf = must(s.GetVectorStoreFile(ctx, v.ID, f.ID))
	if vf.Status != storage.StatusCompleted || vf.Chunks != 2 || vf.UsageBytes != 9 || vf.Attributes["year"] != 2024.0 || vf.Attributes["draft"] != false {
		t.Fatalf("completed %+v", vf)
	}
	if p := must(s.PendingFiles(ctx)); len(p) != 0 {
		t.Fatalf("pending after completion: %+v", p)
	}
	hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 1), K: 5})
	if len(hits) != 2 || hits[0].Text != "beta" || hits[0].ChunkIndex != 1 || hits[0].Filename != "doc.md" || hits[0].FileID != f.ID ||
		hits[0].VectorStoreID != v.ID || math.Abs(float64(hits[0].Score-1)) > 1e-5 || hits[0].Attributes["lang"] != "en" {
		t.Fatalf("hits %+v", hits)
	}
	// A completed file is not completed (or failed) again.
	err = s.CompleteFile(ctx, v.ID, f.ID, chunks)
	if err == nil {
		t.Fatal("completing a completed file succeeded")
	}
	if err := s.FailFile(ctx, v.ID, f.ID, "server_error", "late"); err == nil {
		t.Fatal("failing a completed file succeeded")
	}
	if hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 1), K: 5}); len(hits) != 2 {
		t.Fatalf("a refused late call changed the hits: %v", hitKeys(hits))
	}
	// Detach.
	if err := s.DetachFile(ctx, v.ID, f.ID); err != nil {
		t.Fatal(err)
	}
	if hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 1), K: 5}); len(hits) != 0 {
		t.Fatalf("detached file still searchable: %v", hitKeys(hits))
	}
	wantErr(t, s.DetachFile(ctx, v.ID, f.ID), storage.ErrNotFound, "detach twice")
	_, err = s.GetVectorStoreFile(ctx, v.ID, f.ID)
	wantErr(t, err, storage.ErrNotFound, "get a detached file")
	must(s.GetFile(ctx, f.ID))
	if got := must(s.GetVectorStore(ctx, v.ID)); got.FileCounts.Total != 0 || got.UsageBytes != 0 {
		t.Fatalf("after detach %+v", got)
	}
	// It can be attached again and completed with other chunks.
	must(s.AttachFile(ctx, v.ID, f.ID, nil, storage.Chunking{}))
	if err := s.CompleteFile(ctx, v.ID, f.ID, chunks[:1]); err != nil {
		t.Fatal(err)
	}
	if hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 1), K: 5}); len(hits) != 1 || hits[0].Text != "alpha" {
		t.Fatalf("re-attached hits %v", hitKeys(hits))
	}
	// Status filter on the list.
	g := upload(t, s, "g.txt", "g")
	must(s.AttachFile(ctx, v.ID, g.ID, nil, storage.Chunking{}))
	if p := must(s.ListVectorStoreFiles(ctx, v.ID, storage.StatusInProgress, storage.ListOptions{})); len(p.Data) != 1 || p.Data[0].FileID != g.ID {
		t.Fatalf("in-progress list %+v", p)
	}
	if p := must(s.ListVectorStoreFiles(ctx, v.ID, storage.StatusCompleted, storage.ListOptions{})); len(p.Data) != 1 || p.Data[0].FileID != f.ID {
		t.Fatalf("completed list %+v", p)
	}
	// A completed file with no chunks is fine (an empty document).
	if err := s.CompleteFile(ctx, v.ID, g.ID, nil); err != nil {
		t.Fatal(err)
	}
}

func testCompleteErrors(t *testing.T, s storage.Store) {
	ctx := context.Background()
	v := newStore(t, s, "kb", 4)
	f := upload(t, s, "a.txt", "a")
	must(s.AttachFile(ctx, v.ID, f.ID, nil, storage.Chunking{}))
	err := s.CompleteFile(ctx, v.ID, f.ID, []storage.Chunk{
		{Index: 0, Text: "ok", Vector: unit(4, 0)},
		{Index: 1, Text: "short", Vector: []float32{1, 2, 3}},
	})
	wantErr(t, err, storage.ErrDimension, "a 3-long vector in a 4-dimension store")
	vf := must(s.GetVectorStoreFile(ctx, v.ID, f.ID))
	if vf.Status != storage.StatusInProgress || vf.Chunks != 0 {
		t.Fatalf("after a refused completion: %+v", vf)
	}
	if hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 0), K: 5}); len(hits) != 0 {
		t.Fatalf("a refused completion left hits: %v", hitKeys(hits))
	}
	err = s.CompleteFile(ctx, v.ID, f.ID, []storage.Chunk{{Index: 0, Text: "a", Vector: []float32{0, float32(math.Inf(1)), 0, 0}}})
	wantErr(t, err, storage.ErrInvalid, "an infinite component")
	err = s.CompleteFile(ctx, v.ID, f.ID, []storage.Chunk{{Index: 0, Text: "a", Vector: unit(4, 0)}, {Index: 0, Text: "b", Vector: unit(4, 1)}})
	if err == nil {
		t.Fatal("a repeated chunk index was accepted")
	}
	if err := s.DetachFile(ctx, v.ID, f.ID); err != nil {
		t.Fatal(err)
	}
	err = s.CompleteFile(ctx, v.ID, f.ID, []storage.Chunk{{Index: 0, Text: "ok", Vector: unit(4, 0)}})
	wantErr(t, err, storage.ErrNotFound, "completing a detached file")
	err = s.FailFile(ctx, v.ID, f.ID, "server_error", "x")
	wantErr(t, err, storage.ErrNotFound, "failing a detached file")
	err = s.CompleteFile(ctx, "vs_nope", f.ID, nil)
	wantErr(t, err, storage.ErrNotFound, "completing in an unknown store")
	if hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 0), K: 5}); len(hits) != 0 {
		t.Fatalf("completing a detached file left hits: %v", hitKeys(hits))
	}
}

func testFailedFile(t *testing.T, s storage.Store) {
	ctx := context.Background()
	v := newStore(t, s, "kb", 4)
	good := ingest(t, s, v.ID, "good.txt", nil, unit(4, 0))
	bad := upload(t, s, "bad.pdf", "%PDF")
	must(s.AttachFile(ctx, v.ID, bad.ID, nil, storage.Chunking{}))
	if err := s.FailFile(ctx, v.ID, bad.ID, "unsupported_file", "scanned PDF without text"); err != nil {
		t.Fatal(err)
	}
	vf := must(s.GetVectorStoreFile(ctx, v.ID, bad.ID))
	if vf.Status != storage.StatusFailed || vf.LastErrorCode != "unsupported_file" || vf.LastErrorMessage != "scanned PDF without text" || vf.Chunks != 0 || vf.UsageBytes != 0 {
		t.Fatalf("failed file %+v", vf)
	}
	hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 0), K: 10})
	if len(hits) != 1 || hits[0].FileID != good.ID {
		t.Fatalf("hits %v", hitKeys(hits))
	}
	err := s.CompleteFile(ctx, v.ID, bad.ID, []storage.Chunk{{Index: 0, Text: "late", Vector: unit(4, 0)}})
	if err == nil {
		t.Fatal("completing a failed file succeeded")
	}
	if hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 0), K: 10}); len(hits) != 1 {
		t.Fatalf("a late completion of a failed file made it searchable: %v", hitKeys(hits))
	}
	if p := must(s.PendingFiles(ctx)); len(p) != 0 {
		t.Fatalf("a failed file is pending: %+v", p)
	}
}

// ---- search

func testSearch(t *testing.T, s storage.Store) {
	const dim = 16
	a := newStore(t, s, "a", dim)
	b := newStore(t, s, "b", dim)
	// Chunk similarity to unit(0) is decreasing by design: mix(0, j, c, s).
	var fa, fb []storage.File
	for i := 0; i < 4; i++ {
		fa = append(fa, ingest(t, s, a.ID, fmt.Sprintf("a%d", i), nil, mix(dim, 0, i+1, float32(10-i), 1), mix(dim, 0, i+1, float32(5-i), 4)))
		fb = append(fb, ingest(t, s, b.ID, fmt.Sprintf("b%d", i), nil, mix(dim, 0, i+5, float32(9.5-float32(i)), 1)))
	}
	hits := search(t, s, storage.Query{StoreIDs: []string{a.ID}, Vector: unit(dim, 0), K: 3})
	if got := strings.Join(hitKeys(hits), " "); got != "a0#0 a1#0 a2#0" {
		t.Fatalf("top 3 of a: %s", got)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Fatalf("not best first: %v", hits)
		}
	}
	all := search(t, s, storage.Query{StoreIDs: []string{a.ID, b.ID}, Vector: unit(dim, 0), K: 1000})
	if len(all) != 12 {
		t.Fatalf("k=1000 over both stores: %d hits, want 12", len(all))
	}
	// Check the order against a brute-force ranking.
	type ranked struct {
		key   string
		score float64
	}
	var want []ranked
	for _, h := range all {
		want = append(want, ranked{fmt.Sprintf("%s#%d", h.Filename, h.ChunkIndex), float64(h.Score)})
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i].score > want[j].score })
	for i := range want {
		if want[i].key != hitKeys(all)[i] {
			t.Fatalf("hits not sorted by score: %v", hitKeys(all))
		}
	}
	// Scores are cosine similarities regardless of vector length.
	h := search(t, s, storage.Query{StoreIDs: []string{b.ID}, Vector: scale(unit(dim, 0), 7), K: 1})
	wantScore := 9.5 / math.Sqrt(9.5*9.5+1)
	if math.Abs(float64(h[0].Score)-wantScore) > 1e-5 {
		t.Fatalf("score %v, want %v", h[0].Score, wantScore)
	}
	// MinScore.
	min := float32(0.99)
	hits = search(t, s, storage.Query{StoreIDs: []string{a.ID, b.ID}, Vector: unit(dim, 0), K: 100, MinScore: min, HasMinScore: true})
	for _, h := range hits {
		if h.Score < min {
			t.Fatalf("hit below min score: %+v", h)
		}
	}
	if len(hits) == 0 || len(hits) == 12 {
		t.Fatalf("min score kept %d of 12", len(hits))
	}
	hits = search(t, s, storage.Query{StoreIDs: []string{a.ID}, Vector: unit(dim, 0), K: 100, HasMinScore: true, MinScore: 1.5})
	if len(hits) != 0 {
		t.Fatalf("min score 1.5 kept %d", len(hits))
	}
	// Negative similarities are returned when asked (no min score).
	hits = search(t, s, storage.Query{StoreIDs: []string{a.ID}, Vector: scale(unit(dim, 0), -1), K: 100})
	if len(hits) != 8 || hits[0].Score >= 0 {
		t.Fatalf("opposite query: %d hits, first %+v", len(hits), hits[0])
	}
	// The same store listed twice is searched once.
	if hits := search(t, s, storage.Query{StoreIDs: []string{a.ID, a.ID}, Vector: unit(dim, 0), K: 100}); len(hits) != 8 {
		t.Fatalf("a store named twice gives %d hits, want 8", len(hits))
	}
	_ = fa
	_ = fb
}

func scale(v []float32, f float32) []float32 {
	for i := range v {
		v[i] *= f
	}
	return v
}

func testSearchTies(t *testing.T, s storage.Store) {
	ctx := context.Background()
	a := newStore(t, s, "a", 4)
	b := newStore(t, s, "b", 4)
	same := unit(4, 2)
	var files []storage.File
	for i := 0; i < 5; i++ {
		files = append(files, ingest(t, s, a.ID, fmt.Sprintf("f%d", i), nil, same, same, same))
	}
	// The same file in a second store too.
	must(s.AttachFile(ctx, b.ID, files[0].ID, nil, storage.Chunking{}))
	if err := s.CompleteFile(ctx, b.ID, files[0].ID, []storage.Chunk{{Index: 0, Text: "b0", Vector: same}}); err != nil {
		t.Fatal(err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].ID < files[j].ID })
	hits := search(t, s, storage.Query{StoreIDs: []string{a.ID}, Vector: same, K: 7})
	var want []string
	for _, f := range files {
		for c := 0; c < 3; c++ {
			want = append(want, fmt.Sprintf("%s#%d", f.Filename, c))
		}
	}
	if got := hitKeys(hits); strings.Join(got, " ") != strings.Join(want[:7], " ") {
		t.Fatalf("ties:\n got  %v\n want %v", got, want[:7])
	}
	for trial := 0; trial < 5; trial++ {
		again := search(t, s, storage.Query{StoreIDs: []string{b.ID, a.ID}, Vector: same, K: 16})
		if len(again) != 16 {
			t.Fatalf("%d hits over both stores", len(again))
		}
		for i := 1; i < len(again); i++ {
			p, c := again[i-1], again[i]
			if p.FileID > c.FileID || (p.FileID == c.FileID && p.ChunkIndex > c.ChunkIndex) {
				t.Fatalf("ties out of order at %d: %v", i, hitKeys(again))
			}
		}
	}
}

func testSearchFilter(t *testing.T, s storage.Store) {
	v := newStore(t, s, "kb", 4)
	ingest(t, s, v.ID, "en-2023", map[string]any{"lang": "en", "year": 2023}, unit(4, 0), unit(4, 1))
	ingest(t, s, v.ID, "en-2024", map[string]any{"lang": "en", "year": 2024, "public": true}, unit(4, 0))
	ingest(t, s, v.ID, "de-2024", map[string]any{"lang": "de", "year": 2024}, unit(4, 0))
	ingest(t, s, v.ID, "none", nil, unit(4, 0))
	cases := []struct {
		filter string
		want   []string
	}{
		{`{"type":"eq","key":"lang","value":"en"}`, []string{"en-2023", "en-2024"}},
		{`{"type":"ne","key":"lang","value":"en"}`, []string{"de-2024", "none"}},
		{`{"type":"gte","key":"year","value":2024}`, []string{"de-2024", "en-2024"}},
		{`{"type":"and","filters":[{"type":"eq","key":"lang","value":"en"},{"type":"lt","key":"year","value":2024}]}`, []string{"en-2023"}},
		{`{"type":"or","filters":[{"type":"eq","key":"public","value":true},{"type":"eq","key":"lang","value":"de"}]}`, []string{"de-2024", "en-2024"}},
		{`{"type":"in","key":"lang","value":["de","fr"]}`, []string{"de-2024"}},
		{`{"type":"nin","key":"lang","value":["de","en"]}`, []string{"none"}},
		{`{"type":"eq","key":"lang","value":"xx"}`, nil},
	}
	for _, c := range cases {
		f, err := storage.ParseFilter([]byte(c.filter))
		if err != nil {
			t.Fatal(err)
		}
		hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 0), K: 100, Filter: f})
		seen := map[string]bool{}
		var got []string
		for _, h := range hits {
			if !seen[h.Filename] {
				seen[h.Filename] = true
				got = append(got, h.Filename)
			}
			if h.Filename == "en-2023" && len(hits) > 0 && c.want[0] == "en-2023" && len(c.want) == 1 && len(hits) != 2 {
				t.Fatalf("filter %s: both chunks of en-2023 expected, got %v", c.filter, hitKeys(hits))
			}
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Fatalf("filter %s: got files %v, want %v", c.filter, got, c.want)
		}
	}
	// A filter does not lower k: the best k among the matching files.
	f, _ := storage.ParseFilter([]byte(`{"type":"eq","key":"lang","value":"de"}`))
	hits := search(t, s, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 1), K: 1, Filter: f})
	if len(hits) != 1 || hits[0].Filename != "de-2024" {
		t.Fatalf("filtered k=1: %v", hitKeys(hits))
	}
	if hits[0].Attributes["year"] != 2024.0 {
		t.Fatalf("attributes %#v", hits[0].Attributes)
	}
}

// ingestTexts attaches a file with attrs and completes it with one chunk
// per text, all with vector vec.
func ingestTexts(t *testing.T, s storage.Store, storeID, name string, attrs map[string]any, vec []float32, texts ...string) storage.File {
	t.Helper()
	ctx := context.Background()
	f := upload(t, s, name, strings.Join(texts, "\n"))
	must(s.AttachFile(ctx, storeID, f.ID, attrs, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}))
	chunks := make([]storage.Chunk, len(texts))
	for i, text := range texts {
		chunks[i] = storage.Chunk{Index: i, Text: text, Tokens: len(strings.Fields(text)), Vector: vec}
	}
	if err := s.CompleteFile(ctx, storeID, f.ID, chunks); err != nil {
		t.Fatal(err)
	}
	return f
}

func filenames(hits []storage.Hit) map[string]bool {
	m := map[string]bool{}
	for _, h := range hits {
		m[h.Filename] = true
	}
	return m
}

// testSearchText: with Query.Text, a chunk holding the query's rare word
// ranks in the top k though its vector is far from the query's; scores stay
// cosine similarities and MinScore applies to them; text that looks like
// full-text query syntax is only words.
func testSearchText(t *testing.T, s storage.Store) {
	const dim = 4
	v := newStore(t, s, "kb", dim)
	for i := 0; i < 12; i++ {
		ingestTexts(t, s, v.ID, fmt.Sprintf("near%02d", i), nil, mix(dim, 0, 1, 10, float32(i)),
			fmt.Sprintf("Opening hours of branch %d are posted at the entrance.", i))
	}
	ingestTexts(t, s, v.ID, "far", nil, unit(dim, 3), "Bicycles may be parked in the courtyard; the Zanzibar room is upstairs.")
	q := storage.Query{StoreIDs: []string{v.ID}, Vector: unit(dim, 0), K: 3}
	if filenames(search(t, s, q))["far"] {
		t.Fatal("without text the far chunk is in the top 3")
	}
	q.Text = "Where is the zanzibar room?"
	hits := search(t, s, q)
	if len(hits) != 3 || hits[0].Filename != "far" {
		t.Fatalf("with text %q: %v, want far first", q.Text, hitKeys(hits))
	}
	if math.Abs(float64(hits[0].Score)) > 1e-6 {
		t.Fatalf("the far chunk scores %v, want its cosine 0", hits[0].Score)
	}
	if hits[1].Score < 0.99 || hits[1].Filename != "near00" {
		t.Fatalf("second hit %+v, want near00 with its cosine", hits[1])
	}
	// Inflected forms match (bicycle, bicycles).
	q.Text = "bicycle parking"
	if hits := search(t, s, q); hits[0].Filename != "far" {
		t.Fatalf("with text %q: %v, want far first", q.Text, hitKeys(hits))
	}
	// MinScore applies to the cosine: the far chunk is dropped.
	q.Text, q.HasMinScore, q.MinScore = "zanzibar", true, 0.5
	if hits := search(t, s, q); len(hits) != 3 || filenames(hits)["far"] {
		t.Fatalf("min score 0.5 with text: %v", hitKeys(hits))
	}
	q.HasMinScore, q.MinScore = false, 0
	// FTS-looking text is words, never syntax; stopwords alone search by
	// vector only.
	for _, text := range []string{`zanzibar" OR NEAR(a b) * -- ^x {col}: AND NOT`, `"`, `*`, `(`, "the of and", "ünïcödé 東京 zanzibar's"} {
		q.Text = text
		hits, err := s.Search(context.Background(), q)
		if err != nil || len(hits) != 3 {
			t.Fatalf("text %q: %d hits, %v", text, len(hits), err)
		}
	}
	// K larger than the candidates: every chunk once.
	q.Text, q.K = "zanzibar branch", 100
	if hits := search(t, s, q); len(hits) != 13 || len(filenames(hits)) != 13 {
		t.Fatalf("k=100 with text: %d hits", len(hits))
	}
}

// testSearchTextFilterAndStores: lexical matches obey the filter and the
// queried stores.
func testSearchTextFilterAndStores(t *testing.T, s storage.Store) {
	const dim = 4
	a := newStore(t, s, "a", dim)
	b := newStore(t, s, "b", dim)
	for i := 0; i < 6; i++ {
		ingestTexts(t, s, a.ID, fmt.Sprintf("a-near%d", i), map[string]any{"lang": "en"}, unit(dim, 0), "general information")
	}
	ingestTexts(t, s, a.ID, "a-en", map[string]any{"lang": "en"}, unit(dim, 2), "the marimba lesson is on Tuesday")
	ingestTexts(t, s, a.ID, "a-de", map[string]any{"lang": "de"}, unit(dim, 2), "die Marimba Stunde ist am Dienstag")
	ingestTexts(t, s, b.ID, "b-en", map[string]any{"lang": "en"}, unit(dim, 2), "marimba marimba marimba")
	en, err := storage.ParseFilter([]byte(`{"type":"eq","key":"lang","value":"en"}`))
	if err != nil {
		t.Fatal(err)
	}
	q := storage.Query{StoreIDs: []string{a.ID}, Vector: unit(dim, 0), K: 2, Text: "marimba", Filter: en}
	hits := search(t, s, q)
	if len(hits) != 2 || hits[0].Filename != "a-en" {
		t.Fatalf("filtered text search: %v, want a-en first", hitKeys(hits))
	}
	for _, h := range hits {
		if h.Attributes["lang"] != "en" || h.VectorStoreID != a.ID {
			t.Fatalf("hit outside the filter or store: %+v", h)
		}
	}
	q.Filter = nil
	q.K = 3
	got := filenames(search(t, s, q))
	if !got["a-en"] || !got["a-de"] || got["b-en"] {
		t.Fatalf("store a only: %v", got)
	}
	q.StoreIDs = []string{a.ID, b.ID}
	if got := filenames(search(t, s, q)); !got["b-en"] {
		t.Fatalf("both stores: %v", got)
	}
	q.StoreIDs = []string{b.ID}
	if hits := search(t, s, q); len(hits) != 1 || hits[0].Filename != "b-en" {
		t.Fatalf("store b only: %v", hitKeys(hits))
	}
}

// testSearchTextRemoved: detached, deleted and failed files leave the
// lexical results too.
func testSearchTextRemoved(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const dim = 4
	v := newStore(t, s, "kb", dim)
	other := newStore(t, s, "other", dim)
	for i := 0; i < 4; i++ {
		ingestTexts(t, s, v.ID, fmt.Sprintf("near%d", i), nil, unit(dim, 0), "general information")
	}
	detached := ingestTexts(t, s, v.ID, "detached", nil, unit(dim, 3), "the ocarina club meets weekly")
	deleted := ingestTexts(t, s, v.ID, "deleted", nil, unit(dim, 3), "ocarina repairs at the front desk")
	ingestTexts(t, s, other.ID, "other", nil, unit(dim, 3), "ocarina lessons")
	pending := upload(t, s, "pending", "ocarina")
	must(s.AttachFile(ctx, v.ID, pending.ID, nil, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}))
	failed := upload(t, s, "failed", "ocarina")
	must(s.AttachFile(ctx, v.ID, failed.ID, nil, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}))
	if err := s.FailFile(ctx, v.ID, failed.ID, "invalid_file", "bad"); err != nil {
		t.Fatal(err)
	}
	q := storage.Query{StoreIDs: []string{v.ID}, Vector: unit(dim, 0), K: 2, Text: "ocarina"}
	if got := filenames(search(t, s, q)); !got["detached"] || !got["deleted"] {
		t.Fatalf("before removal: %v", got)
	}
	if err := s.DetachFile(ctx, v.ID, detached.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteFile(ctx, deleted.ID); err != nil {
		t.Fatal(err)
	}
	q.K = 10
	hits := search(t, s, q)
	if got := filenames(hits); len(hits) != 4 || got["detached"] || got["deleted"] || got["pending"] || got["failed"] {
		t.Fatalf("after removal: %v", hitKeys(hits))
	}
	// Re-attaching finds the text again; deleting the other store leaves
	// this one's results alone.
	must(s.AttachFile(ctx, v.ID, detached.ID, nil, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}))
	if err := s.CompleteFile(ctx, v.ID, detached.ID, []storage.Chunk{{Index: 0, Text: "ocarina again", Tokens: 2, Vector: unit(dim, 3)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteVectorStore(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	q.K = 1
	if hits := search(t, s, q); len(hits) != 1 || hits[0].Filename != "detached" || hits[0].Text != "ocarina again" {
		t.Fatalf("re-attached: %+v", hits)
	}
}

func testSearchErrors(t *testing.T, s storage.Store) {
	ctx := context.Background()
	v := newStore(t, s, "kb", 4)
	ingest(t, s, v.ID, "a", nil, unit(4, 0))
	_, err := s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: []float32{1, 0, 0}, K: 1})
	wantErr(t, err, storage.ErrDimension, "a 3-long query on a 4-dimension store")
	_, err = s.Search(ctx, storage.Query{StoreIDs: []string{v.ID, "vs_nope"}, Vector: unit(4, 0), K: 1})
	wantErr(t, err, storage.ErrNotFound, "an unknown store")
	for _, k := range []int{0, -1, 1001} {
		_, err = s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 0), K: k})
		wantErr(t, err, storage.ErrInvalid, fmt.Sprintf("k=%d", k))
	}
	_, err = s.Search(ctx, storage.Query{Vector: unit(4, 0), K: 1})
	wantErr(t, err, storage.ErrInvalid, "no store")
	_, err = s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, K: 1})
	wantErr(t, err, storage.ErrInvalid, "no vector")
	_, err = s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: []float32{1, float32(math.NaN()), 0, 0}, K: 1})
	wantErr(t, err, storage.ErrInvalid, "a NaN in the query")
	_, err = s.Search(ctx, storage.Query{StoreIDs: []string{v.ID}, Vector: unit(4, 0), K: 1, Filter: &storage.Filter{Type: "bogus"}})
	wantErr(t, err, storage.ErrInvalid, "a malformed filter")
	// An empty store answers nothing, not an error.
	e := newStore(t, s, "empty", 4)
	if hits := search(t, s, storage.Query{StoreIDs: []string{e.ID}, Vector: unit(4, 0), K: 3}); len(hits) != 0 {
		t.Fatalf("empty store hits: %v", hits)
	}
	_ = ctx
}

func testDeleteCascades(t *testing.T, s storage.Store) {
	ctx := context.Background()
	a := newStore(t, s, "a", 4)
	b := newStore(t, s, "b", 4)
	shared := ingest(t, s, a.ID, "shared", nil, unit(4, 0), unit(4, 0))
	must(s.AttachFile(ctx, b.ID, shared.ID, nil, storage.Chunking{}))
	if err := s.CompleteFile(ctx, b.ID, shared.ID, []storage.Chunk{{Index: 0, Text: "s", Vector: unit(4, 0)}}); err != nil {
		t.Fatal(err)
	}
	other := ingest(t, s, a.ID, "other", nil, unit(4, 1))
	pending := upload(t, s, "pending", "p")
	must(s.AttachFile(ctx, b.ID, pending.ID, nil, storage.Chunking{}))

	if err := s.DeleteFile(ctx, shared.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID, b.ID} {
		for _, h := range search(t, s, storage.Query{StoreIDs: []string{id}, Vector: unit(4, 0), K: 10}) {
			if h.FileID == shared.ID {
				t.Fatalf("a deleted file's chunk is still found in %s", id)
			}
		}
		_, err := s.GetVectorStoreFile(ctx, id, shared.ID)
		wantErr(t, err, storage.ErrNotFound, "a deleted file's attachment")
	}
	ga := must(s.GetVectorStore(ctx, a.ID))
	gb := must(s.GetVectorStore(ctx, b.ID))
	if ga.FileCounts.Total != 1 || ga.UsageBytes != int64(len("other chunk 0")) || gb.FileCounts != (storage.FileCounts{InProgress: 1, Total: 1}) || gb.UsageBytes != 0 {
		t.Fatalf("after deleting a file: a %+v/%d, b %+v/%d", ga.FileCounts, ga.UsageBytes, gb.FileCounts, gb.UsageBytes)
	}
	// Deleting a file while it is being ingested: the completion fails.
	err := s.DeleteFile(ctx, pending.ID)
	if err != nil {
		t.Fatal(err)
	}
	err = s.CompleteFile(ctx, b.ID, pending.ID, []storage.Chunk{{Index: 0, Text: "p", Vector: unit(4, 0)}})
	wantErr(t, err, storage.ErrNotFound, "completing a deleted file")
	if p := must(s.PendingFiles(ctx)); len(p) != 0 {
		t.Fatalf("pending after delete: %+v", p)
	}
	// Deleting a store keeps its files.
	if err := s.DeleteVectorStore(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	must(s.GetFile(ctx, other.ID))
	_, err = s.Search(ctx, storage.Query{StoreIDs: []string{a.ID}, Vector: unit(4, 1), K: 1})
	wantErr(t, err, storage.ErrNotFound, "searching a deleted store")
	// The file can join another store afterwards.
	must(s.AttachFile(ctx, b.ID, other.ID, nil, storage.Chunking{}))
}

func testScanChunks(t *testing.T, s storage.Store) {
	ctx := context.Background()
	a := newStore(t, s, "a", 4)
	b := newStore(t, s, "b", 4)
	f1 := ingest(t, s, a.ID, "one", map[string]any{"k": "v"}, unit(4, 0), unit(4, 1), unit(4, 2))
	f2 := ingest(t, s, a.ID, "two", nil, unit(4, 3))
	ingest(t, s, b.ID, "three", nil, []float32{0.5, 0.25, 0.125, -1})
	var got []string
	var vecs [][]float32
	err := s.ScanChunks(ctx, []string{b.ID, a.ID}, func(h storage.Hit, v []float32) error {
		got = append(got, fmt.Sprintf("%s/%s#%d:%s", h.VectorStoreID, h.Filename, h.ChunkIndex, h.Text))
		vecs = append(vecs, v)
		if h.Filename == "one" && h.Attributes["k"] != "v" {
			t.Errorf("attributes %v", h.Attributes)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	first, second := "one", "two"
	if f2.ID < f1.ID {
		first, second = "two", "one"
	}
	var want []string
	want = append(want, b.ID+"/three#0:three chunk 0")
	for _, name := range []string{first, second} {
		n := 3
		if name == "two" {
			n = 1
		}
		for i := 0; i < n; i++ {
			want = append(want, fmt.Sprintf("%s/%s#%d:%s chunk %d", a.ID, name, i, name, i))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("scan:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if v := vecs[0]; len(v) != 4 || v[0] != 0.5 || v[1] != 0.25 || v[2] != 0.125 || v[3] != -1 {
		t.Fatalf("scanned vector %v (vectors come back as stored)", v)
	}
	stop := errors.New("stop")
	n := 0
	err = s.ScanChunks(ctx, []string{a.ID}, func(storage.Hit, []float32) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("stopping scan: %v after %d", err, n)
	}
	err = s.ScanChunks(ctx, []string{"vs_nope"}, func(storage.Hit, []float32) error { return nil })
	wantErr(t, err, storage.ErrNotFound, "scan an unknown store")

	// A long scan (more chunks than any batch a backend reads at once),
	// with the store used from inside fn.
	c := newStore(t, s, "long", 4)
	for f := 0; f < 3; f++ {
		vecs := make([][]float32, 300)
		for i := range vecs {
			vecs[i] = unit(4, i)
		}
		ingest(t, s, c.ID, fmt.Sprintf("long%d", f), nil, vecs...)
	}
	var prev storage.Hit
	n = 0
	err = s.ScanChunks(ctx, []string{c.ID}, func(h storage.Hit, v []float32) error {
		if n > 0 && (h.FileID < prev.FileID || (h.FileID == prev.FileID && h.ChunkIndex != prev.ChunkIndex+1)) {
			return fmt.Errorf("chunk %s#%d after %s#%d", h.FileID, h.ChunkIndex, prev.FileID, prev.ChunkIndex)
		}
		if h.FileID != prev.FileID && h.ChunkIndex != 0 {
			return fmt.Errorf("file %s starts at chunk %d", h.FileID, h.ChunkIndex)
		}
		if v[h.ChunkIndex%4] != 1 {
			return fmt.Errorf("chunk %d has vector %v", h.ChunkIndex, v)
		}
		if n%100 == 0 {
			if _, err := s.GetFile(ctx, h.FileID); err != nil {
				return err
			}
			if _, _, err := s.Remember(ctx, storage.Memory{Scope: "scan", Text: fmt.Sprint(n), EmbeddingModel: "m", Vector: v}); err != nil {
				return err
			}
		}
		prev = h
		n++
		return nil
	})
	if err != nil || n != 900 {
		t.Fatalf("long scan: %d chunks, %v", n, err)
	}
}

// ---- memories

func testMemories(t *testing.T, s storage.Memories) {
	ctx := context.Background()
	m1, created, err := s.Remember(ctx, storage.Memory{Scope: "alice", Text: "Prefers metric units", EmbeddingModel: "m", Vector: unit(4, 0)})
	if err != nil || !created || !strings.HasPrefix(m1.ID, "mem_") || m1.CreatedAt.IsZero() || m1.Text != "Prefers metric units" {
		t.Fatalf("remember: %+v %v %v", m1, created, err)
	}
	again, created, err := s.Remember(ctx, storage.Memory{Scope: "alice", Text: "  prefers METRIC units ", EmbeddingModel: "m", Vector: unit(4, 1)})
	if err != nil || created || again.ID != m1.ID || again.Text != m1.Text {
		t.Fatalf("dedupe: %+v created=%v err=%v", again, created, err)
	}
	bob, created, err := s.Remember(ctx, storage.Memory{Scope: "bob", Text: "Prefers metric units", EmbeddingModel: "m", Vector: unit(4, 0)})
	if err != nil || !created || bob.ID == m1.ID {
		t.Fatalf("same text in another scope: %+v %v %v", bob, created, err)
	}
	m2 := must3(t, s, storage.Memory{Scope: "alice", Text: "Lives in Oslo", EmbeddingModel: "m", Vector: mix(4, 0, 1, 1, 1)})
	must3(t, s, storage.Memory{Scope: "alice", Text: "Has a cat", EmbeddingModel: "m", Vector: unit(4, 3)})
	must3(t, s, storage.Memory{Scope: "alice", Text: "Other model", EmbeddingModel: "m2", Vector: unit(4, 0)})
	must3(t, s, storage.Memory{Scope: "alice", Text: "Other dimension", EmbeddingModel: "m", Vector: unit(3, 0)})
	for _, bad := range []storage.Memory{{Scope: "", Text: "x", EmbeddingModel: "m", Vector: unit(4, 0)}, {Scope: "a", Text: " ", EmbeddingModel: "m", Vector: unit(4, 0)}, {Scope: "a", Text: "x", EmbeddingModel: "m"}} {
		_, _, err := s.Remember(ctx, bad)
		wantErr(t, err, storage.ErrInvalid, fmt.Sprintf("remember %+v", bad))
	}

	hits, err := s.Recall(ctx, "alice", "m", scale(unit(4, 0), 3), 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, h := range hits {
		texts = append(texts, h.Text)
	}
	if strings.Join(texts, "|") != "Prefers metric units|Lives in Oslo|Has a cat" {
		t.Fatalf("recall: %v", texts)
	}
	if math.Abs(float64(hits[0].Score)-1) > 1e-5 || math.Abs(float64(hits[1].Score)-1/math.Sqrt2) > 1e-5 || hits[2].Score != 0 {
		t.Fatalf("recall scores %v %v %v", hits[0].Score, hits[1].Score, hits[2].Score)
	}
	hits, _ = s.Recall(ctx, "alice", "m", unit(4, 0), 1, 0)
	if len(hits) != 1 || hits[0].ID != m1.ID {
		t.Fatalf("recall k=1: %+v", hits)
	}
	hits, _ = s.Recall(ctx, "alice", "m", unit(4, 0), 10, 0.5)
	if len(hits) != 2 {
		t.Fatalf("recall min 0.5: %d hits", len(hits))
	}
	hits, _ = s.Recall(ctx, "carol", "m", unit(4, 0), 10, 0)
	if len(hits) != 0 {
		t.Fatalf("recall in an empty scope: %+v", hits)
	}
	_, err = s.Recall(ctx, "alice", "m", unit(4, 0), 0, 0)
	wantErr(t, err, storage.ErrInvalid, "recall k=0")

	got := must(s.GetMemory(ctx, m2.ID))
	if got.Text != "Lives in Oslo" || got.Scope != "alice" || got.EmbeddingModel != "m" || len(got.Vector) != 4 {
		t.Fatalf("get memory %+v", got)
	}
	all := must(s.ListMemories(ctx, "", storage.ListOptions{Limit: 100}))
	alice := must(s.ListMemories(ctx, "alice", storage.ListOptions{Limit: 100}))
	if len(all.Data) != 6 || len(alice.Data) != 5 || alice.Data[len(alice.Data)-1].ID != m1.ID {
		t.Fatalf("list: %d all, %d alice", len(all.Data), len(alice.Data))
	}
	if err := s.DeleteMemory(ctx, m2.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetMemory(ctx, m2.ID)
	wantErr(t, err, storage.ErrNotFound, "get a deleted memory")
	wantErr(t, s.DeleteMemory(ctx, m2.ID), storage.ErrNotFound, "delete a memory twice")
	n := must(s.DeleteScope(ctx, "alice"))
	if n != 4 {
		t.Fatalf("DeleteScope deleted %d, want 4", n)
	}
	if n := must(s.DeleteScope(ctx, "alice")); n != 0 {
		t.Fatalf("DeleteScope again deleted %d", n)
	}
	must(s.GetMemory(ctx, bob.ID))
	// A forgotten text can be remembered again.
	if _, created, _ := s.Remember(ctx, storage.Memory{Scope: "alice", Text: "Prefers metric units", EmbeddingModel: "m", Vector: unit(4, 0)}); !created {
		t.Fatal("a deleted memory's text was deduplicated")
	}
}

func must3(t *testing.T, s storage.Memories, m storage.Memory) storage.Memory {
	t.Helper()
	kept, created, err := s.Remember(context.Background(), m)
	if err != nil || !created {
		t.Fatalf("remember %q: created=%v err=%v", m.Text, created, err)
	}
	return kept
}

// RunMemories is the memories part of Run, for a backend that keeps
// memories only (storage.Memories); open returns a new, empty store.
func RunMemories(t *testing.T, open func(t *testing.T) storage.Memories) {
	t.Run("Memories", func(t *testing.T) { testMemories(t, open(t)) })
	t.Run("MemoryPaging", func(t *testing.T) { testMemoryPaging(t, open(t)) })
}

func testMemoryPaging(t *testing.T, s storage.Memories) {
	ctx := context.Background()
	var ids []string
	for i := 0; i < 7; i++ {
		ids = append(ids, must3(t, s, storage.Memory{Scope: "u", Text: fmt.Sprintf("fact %d", i), EmbeddingModel: "m", Vector: unit(4, i)}).ID)
	}
	p := must(s.ListMemories(ctx, "u", storage.ListOptions{Order: "asc", Limit: 3, After: ids[1]}))
	if len(p.Data) != 3 || !p.HasMore || p.Data[0].ID != ids[2] || p.Data[2].ID != ids[4] {
		t.Fatalf("memory page %+v", p)
	}
	_, err := s.ListMemories(ctx, "u", storage.ListOptions{Limit: 500})
	wantErr(t, err, storage.ErrInvalid, "limit 500")
}

// ---- concurrency

// testConcurrency runs uploads, ingestion, deletes, searches and memory
// writes in parallel, then checks that what the store says agrees with
// itself: every hit belongs to a completed attachment of a live file, and
// each store's counts match its listed files.
func testConcurrency(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const dim = 8
	stores := []storage.VectorStore{newStore(t, s, "c0", dim), newStore(t, s, "c1", dim)}
	ids := []string{stores[0].ID, stores[1].ID}
	const writers, perWriter = 4, 12
	var wg sync.WaitGroup
	errc := make(chan error, 1000)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				f, err := s.CreateFile(ctx, storage.NewFile{Filename: name, Purpose: "assistants"}, strings.NewReader(name), 0)
				if err != nil {
					report(err)
					return
				}
				st := ids[(w+i)%2]
				if _, err := s.AttachFile(ctx, st, f.ID, map[string]any{"w": float64(w)}, storage.Chunking{}); err != nil {
					report(err)
					return
				}
				chunks := []storage.Chunk{
					{Index: 0, Text: name + "/0", Vector: unit(dim, w)},
					{Index: 1, Text: name + "/1", Vector: unit(dim, i)},
				}
				switch i % 4 {
				case 0, 1:
					if err := s.CompleteFile(ctx, st, f.ID, chunks); err != nil {
						report(err)
					}
				case 2:
					if err := s.FailFile(ctx, st, f.ID, "server_error", "x"); err != nil {
						report(err)
					}
				case 3:
					// Deleted while in progress, then completion must fail.
					if err := s.DeleteFile(ctx, f.ID); err != nil {
						report(err)
					}
					if err := s.CompleteFile(ctx, st, f.ID, chunks); !errors.Is(err, storage.ErrNotFound) {
						report(fmt.Errorf("completing a deleted file: %v", err))
					}
				}
				if i%5 == 4 {
					if err := s.DeleteFile(ctx, f.ID); err != nil {
						report(err)
					}
				}
				if _, _, err := s.Remember(ctx, storage.Memory{Scope: fmt.Sprintf("s%d", w%2), Text: fmt.Sprintf("fact %d", i), EmbeddingModel: "m", Vector: unit(dim, i)}); err != nil {
					report(err)
				}
			}
		}(w)
	}
	var readers sync.WaitGroup
	for r := 0; r < 3; r++ {
		readers.Add(1)
		go func(r int) {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				hits, err := s.Search(ctx, storage.Query{StoreIDs: ids, Vector: unit(dim, i+r), K: 10})
				if err != nil {
					report(err)
					return
				}
				for _, h := range hits {
					if h.Text == "" || h.Filename == "" {
						report(fmt.Errorf("a hit without text or filename: %+v", h))
					}
				}
				if _, err := s.ListVectorStoreFiles(ctx, ids[r%2], "", storage.ListOptions{Limit: 100}); err != nil {
					report(err)
				}
				if _, err := s.Recall(ctx, "s0", "m", unit(dim, i), 3, 0); err != nil {
					report(err)
				}
			}
		}(r)
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	// Consistency: counts match lists, and search returns exactly the
	// chunks of completed attachments of live files.
	wantChunks := map[string]bool{}
	for _, id := range ids {
		v := must(s.GetVectorStore(ctx, id))
		files := must(s.ListVectorStoreFiles(ctx, id, "", storage.ListOptions{Limit: 100}))
		var counts storage.FileCounts
		var usage int64
		for _, f := range files.Data {
			counts.Total++
			switch f.Status {
			case storage.StatusCompleted:
				counts.Completed++
				usage += f.UsageBytes
				if f.Chunks != 2 {
					t.Errorf("completed file %s has %d chunks", f.FileID, f.Chunks)
				}
				if _, err := s.GetFile(ctx, f.FileID); err != nil {
					t.Errorf("an attached file is gone: %v", err)
				}
				wantChunks[id+"/"+f.FileID+"#0"] = true
				wantChunks[id+"/"+f.FileID+"#1"] = true
			case storage.StatusFailed:
				counts.Failed++
			case storage.StatusInProgress:
				counts.InProgress++
			}
		}
		if counts != v.FileCounts || usage != v.UsageBytes {
			t.Errorf("store %s: counts %+v usage %d, its files say %+v and %d", id, v.FileCounts, v.UsageBytes, counts, usage)
		}
		if counts.InProgress != 0 {
			t.Errorf("store %s has %d files still in progress", id, counts.InProgress)
		}
	}
	hits := search(t, s, storage.Query{StoreIDs: ids, Vector: unit(dim, 0), K: 1000})
	got := map[string]bool{}
	for _, h := range hits {
		got[h.VectorStoreID+"/"+h.FileID+"#"+fmt.Sprint(h.ChunkIndex)] = true
	}
	if len(got) != len(wantChunks) || len(hits) != len(got) {
		t.Errorf("search finds %d chunks (%d hits), the completed files have %d", len(got), len(hits), len(wantChunks))
	}
	for k := range got {
		if !wantChunks[k] {
			t.Errorf("search finds %s, which is not a chunk of a completed file", k)
		}
	}
	n := 0
	if err := s.ScanChunks(ctx, ids, func(storage.Hit, []float32) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != len(wantChunks) {
		t.Errorf("ScanChunks sees %d chunks, want %d", n, len(wantChunks))
	}
	mem := must(s.ListMemories(ctx, "", storage.ListOptions{Limit: 100}))
	if len(mem.Data) != 2*perWriter {
		t.Errorf("%d memories, want %d (two scopes, deduplicated)", len(mem.Data), 2*perWriter)
	}
}

func testClosed(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListFiles(ctx, "", storage.ListOptions{}); err == nil {
		t.Fatal("ListFiles after Close succeeded")
	}
	if _, err := s.CreateVectorStore(ctx, storage.NewVectorStore{Name: "x", EmbeddingModel: "m", Dimensions: 4}); err == nil {
		t.Fatal("CreateVectorStore after Close succeeded")
	}
}
