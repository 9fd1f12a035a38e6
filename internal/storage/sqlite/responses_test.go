package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

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

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func rowsIn(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.w.QueryRow(`SELECT count(*) FROM responses`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func putResp(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := s.PutResponse(context.Background(), storage.StoredResponse{ID: id, Response: []byte(`{}`), Input: []byte(`[]`), Conversation: []byte(`[]`)}); err != nil {
		t.Fatal(err)
	}
}

// TestResponsesExpire: a response past the TTL is not found (get, delete),
// and the expired rows are removed at Open and every pruneEvery puts.
func TestResponsesExpire(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	open := func() *Store {
		s, err := Open(ctx, dir, Options{ResponseTTL: time.Hour, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	for i := range 3 {
		putResp(t, s, "resp_old"+strconv.Itoa(i))
	}
	c.add(time.Hour)
	if _, err := s.GetResponse(ctx, "resp_old0"); err != nil {
		t.Fatalf("exactly at the TTL: %v, want found", err)
	}
	putResp(t, s, "resp_new")
	c.add(time.Second)
	for _, id := range []string{"resp_old0", "resp_old1"} {
		if _, err := s.GetResponse(ctx, id); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("get %s past the TTL: %v, want ErrNotFound", id, err)
		}
	}
	if err := s.DeleteResponse(ctx, "resp_old2"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete past the TTL: %v, want ErrNotFound", err)
	}
	if _, err := s.GetResponse(ctx, "resp_new"); err != nil {
		t.Fatalf("within the TTL: %v", err)
	}
	if n := rowsIn(t, s); n != 3 {
		t.Fatalf("%d rows before any prune, want 3 (resp_old0, resp_old1, resp_new)", n)
	}
	s.Close()

	// At Open: the expired rows go.
	s = open()
	if n := rowsIn(t, s); n != 1 {
		t.Fatalf("%d rows after Open, want 1", n)
	}
	// Every pruneEvery puts: more than one batch of expired rows goes.
	for i := range pruneBatch + 10 {
		putResp(t, s, "resp_a"+strconv.Itoa(i))
	}
	s.Close()
	s = open() // nothing expired yet; the put count starts again
	c.add(2 * time.Hour)
	for i := range pruneEvery - 1 {
		putResp(t, s, "resp_b"+strconv.Itoa(i))
	}
	if n := rowsIn(t, s); n != 1+pruneBatch+10+pruneEvery-1 {
		t.Fatalf("%d rows before the prune, want %d", n, 1+pruneBatch+10+pruneEvery-1)
	}
	putResp(t, s, "resp_last")
	if n := rowsIn(t, s); n != pruneEvery {
		t.Fatalf("%d rows after the prune, want the %d put since", n, pruneEvery)
	}
	if s.resp.count != pruneEvery {
		t.Fatalf("count %d, want %d", s.resp.count, pruneEvery)
	}
	s.Close()
}

// TestResponsesMaxCount: past MaxResponses the oldest go first, on put and
// at Open with a smaller bound; a replaced response is not counted twice.
func TestResponsesMaxCount(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	s, err := Open(ctx, dir, Options{MaxResponses: 3, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		putResp(t, s, "resp_"+strconv.Itoa(i))
		c.add(time.Second)
	}
	putResp(t, s, "resp_1") // replaced: still 3
	if _, err := s.GetResponse(ctx, "resp_0"); err != nil {
		t.Fatalf("replacing one removed another: %v", err)
	}
	putResp(t, s, "resp_3")
	if _, err := s.GetResponse(ctx, "resp_0"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("oldest past MaxResponses: %v, want ErrNotFound", err)
	}
	for _, id := range []string{"resp_1", "resp_2", "resp_3"} {
		if _, err := s.GetResponse(ctx, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if err := s.DeleteResponse(ctx, "resp_2"); err != nil {
		t.Fatal(err)
	}
	putResp(t, s, "resp_4")
	if _, err := s.GetResponse(ctx, "resp_1"); err != nil {
		t.Fatalf("a delete freed no room: %v", err)
	}
	s.Close()
	s, err = Open(ctx, dir, Options{MaxResponses: 1, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := rowsIn(t, s); n != 1 {
		t.Fatalf("%d rows after Open with MaxResponses 1, want 1", n)
	}
	if _, err := s.GetResponse(ctx, "resp_4"); err != nil {
		t.Fatalf("the newest after Open: %v", err)
	}
}

// BenchmarkPutResponse is one durable stored-response write (WAL,
// synchronous FULL): a 2 KiB response object, 512 B of input items, a 4 KiB
// conversation.
func BenchmarkPutResponse(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := storage.StoredResponse{Response: make([]byte, 2048), Input: make([]byte, 512), Conversation: make([]byte, 4096)}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.ID = "resp_" + strconv.Itoa(i)
		if err := s.PutResponse(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}
