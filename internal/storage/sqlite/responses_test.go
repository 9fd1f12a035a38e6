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
	if err := s.PutResponse(ctx, storage.StoredResponse{ID: "resp_x", Response: []byte(`{"id":"resp_x"}`), Input: []byte(`[]`)}); err != nil {
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
	if err := s.PutResponse(context.Background(), storage.StoredResponse{ID: id, Response: []byte(`{}`), Input: []byte(`[]`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
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
	if n, _ := respTotals(s); n != pruneEvery {
		t.Fatalf("count %d, want %d", n, pruneEvery)
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

// TestMigrateFromVersion5 opens a database of schema version 5, whose rows
// hold their whole conversation: a row becomes a first turn whose input is
// its conversation less its own output, so it lists and continues as
// before.
func TestMigrateFromVersion5(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := openDB(filepath.Join(dir, dbName), 1)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now().Unix()
	for _, q := range append(append([]string{}, schema[:5]...), `PRAGMA user_version = 5`) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.Exec(`INSERT INTO responses (id, created_at, response, input, conversation) VALUES (?, ?, ?, ?, ?)`,
		"resp_2", created, []byte(`{"id":"resp_2","output":[{"id":"msg_o2"}]}`), []byte(`[{"id":"msg_i2"}]`),
		[]byte(`[{"id":"msg_i1"},{"id":"msg_o1"},{"id":"msg_i2"},{"id":"msg_o2"}]`)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := openAt(t, dir)
	defer s.Close()
	r, err := s.GetResponse(context.Background(), "resp_2")
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Input) != `[{"id":"msg_i1"},{"id":"msg_o1"},{"id":"msg_i2"}]` || r.PreviousID != "" || r.CreatedAt.Unix() != created {
		t.Fatalf("migrated row: input %s, previous %q, created %v", r.Input, r.PreviousID, r.CreatedAt)
	}
	if n, b := respTotals(s); n != 1 || b != int64(r.Size()) {
		t.Fatalf("count %d bytes %d, want 1 and %d", n, b, r.Size())
	}
}

// TestResponsesWriteBehind: a put is found at once (before it is written),
// a queued one can be deleted (and is never written), and Close writes the
// queue (found after reopening).
func TestResponsesWriteBehind(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, dir)
	s.wmu.Lock() // hold the writer: everything stays queued
	for _, id := range []string{"resp_a", "resp_b"} {
		if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, Response: []byte(`{"id":"` + id + `"}`), Input: []byte(`[]`)}); err != nil {
			s.wmu.Unlock()
			t.Fatal(err)
		}
	}
	if r, err := s.GetResponse(ctx, "resp_a"); err != nil || string(r.Response) != `{"id":"resp_a"}` {
		s.wmu.Unlock()
		t.Fatalf("get before the write: %+v %v", r, err)
	}
	var rows int
	if err := s.r.QueryRow(`SELECT count(*) FROM responses`).Scan(&rows); err != nil || rows != 0 {
		s.wmu.Unlock()
		t.Fatalf("%d rows while the writer is held (%v), want 0", rows, err)
	}
	s.wmu.Unlock()
	if err := s.DeleteResponse(ctx, "resp_b"); err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := s.GetResponse(ctx, "resp_b"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	if err := s.PutResponse(ctx, storage.StoredResponse{ID: "resp_c", Response: []byte(`{}`), Input: []byte(`[]`)}); err != nil {
		t.Fatal(err)
	}
	s.Close() // writes resp_c
	if err := s.PutResponse(ctx, storage.StoredResponse{ID: "resp_d"}); err == nil {
		t.Fatal("a put after Close was taken")
	}
	s = openAt(t, dir)
	defer s.Close()
	for id, want := range map[string]bool{"resp_a": true, "resp_b": false, "resp_c": true} {
		_, err := s.GetResponse(ctx, id)
		if want && err != nil || !want && !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("%s after reopening: %v (want found: %v)", id, err, want)
		}
	}
	if n, _ := respTotals(s); n != 2 {
		t.Fatalf("count %d after reopening, want 2", n)
	}
}

// TestResponsesMaxBytes: past MaxResponseBytes the least recently used go
// first; one response over the bound alone is refused.
func TestResponsesMaxBytes(t *testing.T) {
	ctx := context.Background()
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	s, err := Open(ctx, t.TempDir(), Options{MaxResponseBytes: 1000, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(id string, n int) error {
		if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, Response: make([]byte, n), Input: []byte(`[]`)}); err != nil {
			return err
		}
		c.add(time.Second)
		return s.Flush(ctx)
	}
	for i := range 4 {
		if err := put("resp_"+strconv.Itoa(i), 292); err != nil { // 300 bytes each with id and input
			t.Fatal(err)
		}
	}
	if _, err := s.GetResponse(ctx, "resp_0"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the oldest past MaxResponseBytes: %v, want ErrNotFound", err)
	}
	if n, b := rowsIn(t, s), respBytes(s); n != 3 || b != 900 {
		t.Fatalf("%d rows, %d bytes; want 3 and 900", n, b)
	}
	if err := put("resp_big", 2000); !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("over MaxResponseBytes alone: %v, want ErrTooLarge", err)
	}
	if err := s.DeleteResponse(ctx, "resp_1"); err != nil {
		t.Fatal(err)
	}
	if b := respBytes(s); b != 600 {
		t.Fatalf("%d bytes after a delete, want 600", b)
	}
}

// TestResponsesConversationRenewed: a turn continuing a conversation keeps
// its earlier turns alive past their own TTL, so the whole conversation
// expires together, a TTL after its newest turn (less the renewal window).
func TestResponsesConversationRenewed(t *testing.T) {
	ctx := context.Background()
	c := &clock{now: time.Unix(1_800_000_000, 0)}
	s, err := Open(ctx, t.TempDir(), Options{ResponseTTL: time.Hour, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	prev := ""
	for i := range 4 {
		id := "resp_" + strconv.Itoa(i)
		if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, PreviousID: prev, Response: []byte(`{}`), Input: []byte(`[]`)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		prev = id
		c.add(40 * time.Minute) // each turn comes after the renewal window
	}
	// resp_0 was stored 160 minutes ago, resp_3 40 minutes ago.
	chain, err := storage.Chain(ctx, s, "resp_3", 0)
	if err != nil || len(chain) != 4 {
		t.Fatalf("conversation 2 h 40 min after its first turn: %d turns, %v", len(chain), err)
	}
	c.add(21 * time.Minute)
	if _, err := s.GetResponse(ctx, "resp_0"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a TTL after the newest turn: %v, want ErrNotFound", err)
	}
}

// BenchmarkPutResponse is a stored-response write as the request path sees
// it (queued for the writer; found by a GET at once): a 2 KiB response
// object and 512 B of input items. Sustained, it runs at the speed of the
// writer's batched commits once the queue is full.
func BenchmarkPutResponse(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := storage.StoredResponse{Response: make([]byte, 2048), Input: make([]byte, 512)}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.ID = "resp_" + strconv.Itoa(i)
		if err := s.PutResponse(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPutResponseDurable is one stored-response write waited for until
// it is durable (WAL, synchronous FULL): the latency the request path had
// when it wrote synchronously.
func BenchmarkPutResponseDurable(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := storage.StoredResponse{Response: make([]byte, 2048), Input: make([]byte, 512)}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.ID = "resp_" + strconv.Itoa(i)
		if err := s.PutResponse(ctx, r); err != nil {
			b.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChain is rebuilding a conversation of 50 stored turns
// (storage.Chain: one read a turn), what previous_response_id costs a
// request on the embedded store.
func BenchmarkChain(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	prev := ""
	for i := range 50 {
		id := "resp_" + strconv.Itoa(i)
		if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, PreviousID: prev, Response: make([]byte, 2048), Input: make([]byte, 512)}); err != nil {
			b.Fatal(err)
		}
		prev = id
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name string
		r    storage.Responses
	}{{"OneQuery", s}, {"ReadPerTurn", onlyResponses{s}}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if chain, err := storage.Chain(ctx, v.r, prev, 0); err != nil || len(chain) != 50 {
					b.Fatal(len(chain), err)
				}
			}
		})
	}
}

// onlyResponses hides the store's ChainReader: storage.Chain reads a turn
// at a time.
type onlyResponses struct{ storage.Responses }

// TestResponseChainOneQuery: the one-query conversation read agrees with
// reading a turn at a time, across turns still queued and turns written.
func TestResponseChainOneQuery(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, t.TempDir())
	defer s.Close()
	prev := ""
	for i := range 6 {
		id := "resp_" + strconv.Itoa(i)
		if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, PreviousID: prev, Response: []byte(`{}`), Input: []byte(`["` + id + `"]`)}); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			s.wmu.Lock() // turns 4 and 5 stay queued
			defer s.wmu.Unlock()
		}
		prev = id
	}
	a, err := storage.Chain(ctx, s, prev, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := storage.Chain(ctx, onlyResponses{s}, prev, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 6 || len(b) != 6 {
		t.Fatalf("%d and %d turns, want 6", len(a), len(b))
	}
	for i := range a {
		if a[i].ID != b[i].ID || string(a[i].Input) != string(b[i].Input) || a[i].PreviousID != b[i].PreviousID {
			t.Fatalf("turn %d: %+v vs %+v", i, a[i], b[i])
		}
	}
	if _, err := storage.Chain(ctx, s, prev, 5); !errors.Is(err, storage.ErrChainTooLong) {
		t.Fatalf("6 turns with a bound of 5: %v", err)
	}
	if _, err := storage.Chain(ctx, s, "resp_3", 3); !errors.Is(err, storage.ErrChainTooLong) {
		t.Fatalf("4 written turns with a bound of 3: %v", err)
	}
}

// respTotals reads the stored responses' count and bytes under the write
// mutex, as every writer (the background batch writer included) updates them.
func respTotals(s *Store) (int, int64) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.resp.count, s.resp.bytes
}

func respBytes(s *Store) int64 {
	_, b := respTotals(s)
	return b
}
