package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/junction-router/junction/internal/storage"
)

// The Responses API's response store (storage.Responses): one row per
// response holding its own turn (schema version 6: the response object,
// this turn's input items, previous_id), a conversation rebuilt by
// following previous_id (storage.Chain).
//
// Writes are taken off the request path: PutResponse hands the response to
// a writer goroutine and returns; until the row is committed, GetResponse
// and DeleteResponse see it in memory (so a GET right after the create
// finds it), and what is queued when the writer wakes goes in one
// transaction (durable like every write here: WAL, synchronous FULL).
// Flush waits for the queue; Close flushes it. A crash loses what was not
// yet committed (at most the responses of the last few milliseconds; the
// clients had their answers).
//
// A response is forgotten Options.ResponseTTL after it was last used
// (stored, or its conversation continued; see storage.Responses): not found
// from then on, removed at Open and every pruneEvery puts. At most
// Options.MaxResponses rows and Options.MaxResponseBytes bytes are kept,
// the least recently used removed first.

var _ storage.Responses = (*Store)(nil)

// Defaults of Options' response bounds.
const (
	DefaultMaxResponses     = 100000
	DefaultMaxResponseBytes = 1 << 30
)

const (
	// pruneEvery is how many puts pass between removals of the expired
	// responses (Open removes them too).
	pruneEvery = 256
	// pruneBatch is the most rows one removal transaction deletes, so a
	// large prune never holds the writer long.
	pruneBatch = 500
	// writeBatch is the most responses one write transaction commits.
	writeBatch = 256
	// maxQueued bounds the responses waiting for the writer: past it a put
	// waits (its context bounds the wait), so a slow disk slows requests
	// instead of filling memory.
	maxQueued = 4096
)

// responseState is the stored responses' bounds, counts and write queue.
// count, bytes and puts change only under the write mutex (s.wmu).
type responseState struct {
	ttl, renew time.Duration
	max        int
	maxBytes   int64
	now        func() time.Time
	count      int   // rows in responses
	bytes      int64 // their size column summed
	puts       int   // since the last prune

	mu      sync.Mutex
	pending map[string]*storage.StoredResponse // put, not yet committed (queued or being written)
	queue   []*storage.StoredResponse          // not yet taken by the writer, oldest first
	stopped bool                               // Close began: puts are refused
	busy    bool                               // the writer is writing or pruning
	idle    chan struct{}                      // closed (and replaced) each time the writer ends a round
	slots   chan struct{}                      // one per pending response (maxQueued)
	kick    chan struct{}                      // wakes the writer
	stop    chan struct{}                      // closed by Close: drain and end
	done    chan struct{}                      // closed when the writer ended
}

// openResponses sets the bounds from o, removes the expired responses and
// those past the bounds, counts the rest and starts the writer.
func (s *Store) openResponses(ctx context.Context, o Options) error {
	s.resp = &responseState{ttl: o.ResponseTTL, max: o.MaxResponses, maxBytes: o.MaxResponseBytes, now: o.Now,
		pending: map[string]*storage.StoredResponse{}, slots: make(chan struct{}, maxQueued),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), idle: make(chan struct{})}
	r := s.resp
	if r.ttl <= 0 {
		r.ttl = storage.DefaultResponseTTL
	}
	r.renew = storage.RenewWithin(r.ttl)
	if r.max <= 0 {
		r.max = DefaultMaxResponses
	}
	if r.maxBytes <= 0 {
		r.maxBytes = DefaultMaxResponseBytes
	}
	if r.now == nil {
		r.now = time.Now
	}
	var n, b int64
	if err := s.w.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(size), 0) FROM responses`).Scan(&n, &b); err != nil {
		return fmt.Errorf("sqlite: count stored responses: %w", err)
	}
	s.wmu.Lock()
	r.count, r.bytes = int(n), b
	s.wmu.Unlock()
	if err := s.pruneResponses(ctx); err != nil {
		return err
	}
	go s.writeResponses()
	return nil
}

// keepFrom is the oldest used_at (Unix milliseconds) not yet expired: a
// response is expired when it was last used before now - TTL.
func (s *Store) keepFrom() int64 {
	return s.resp.now().Add(-s.resp.ttl).UnixMilli()
}

// pruneResponses removes the expired responses, then those past the
// bounds, least recently used first, in transactions of at most
// pruneBatch rows.
func (s *Store) pruneResponses(ctx context.Context) error {
	r := s.resp
	for {
		var n int
		var freed int64
		err := s.tx(ctx, func(tx *sql.Tx) error {
			n, freed = 0, 0
			rows, err := tx.QueryContext(ctx, `DELETE FROM responses WHERE id IN (SELECT id FROM responses WHERE used_at < ? ORDER BY used_at LIMIT ?) RETURNING size`, s.keepFrom(), pruneBatch)
			if err != nil {
				return fmt.Errorf("sqlite: remove expired responses: %w", err)
			}
			for rows.Next() {
				var size int64
				if err := rows.Scan(&size); err != nil {
					rows.Close()
					return fmt.Errorf("sqlite: remove expired responses: %w", err)
				}
				n++
				freed += size
			}
			if err := rows.Close(); err != nil {
				return fmt.Errorf("sqlite: remove expired responses: %w", err)
			}
			if n < pruneBatch {
				c, b, err := s.evict(ctx, tx, r.count-n, r.bytes-freed, pruneBatch-n)
				if err != nil {
					return err
				}
				n, freed = r.count-c, r.bytes-b
			}
			return nil
		}, func() {
			r.count -= n
			r.bytes -= freed
			r.puts = 0
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// evict removes the least recently used rows while count or bytes is past
// the bounds, at most limit rows, and returns the count and bytes left.
func (s *Store) evict(ctx context.Context, tx *sql.Tx, count int, bytes int64, limit int) (int, int64, error) {
	r := s.resp
	for limit > 0 && (count > r.max || bytes > r.maxBytes) {
		rows, err := tx.QueryContext(ctx, `SELECT id, size FROM responses ORDER BY used_at, rowid LIMIT ?`, min(limit, 64))
		if err != nil {
			return 0, 0, fmt.Errorf("sqlite: remove the least recently used responses: %w", err)
		}
		var ids []string
		var sizes []int64
		for rows.Next() {
			var id string
			var size int64
			if err := rows.Scan(&id, &size); err != nil {
				rows.Close()
				return 0, 0, fmt.Errorf("sqlite: remove the least recently used responses: %w", err)
			}
			ids, sizes = append(ids, id), append(sizes, size)
		}
		if err := rows.Close(); err != nil {
			return 0, 0, fmt.Errorf("sqlite: remove the least recently used responses: %w", err)
		}
		if len(ids) == 0 {
			break
		}
		for i, id := range ids {
			if count <= r.max && bytes <= r.maxBytes {
				break
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM responses WHERE id = ?`, id); err != nil {
				return 0, 0, fmt.Errorf("sqlite: remove the least recently used responses: %w", err)
			}
			count--
			bytes -= sizes[i]
			limit--
		}
	}
	return count, bytes, nil
}

// PutResponse implements storage.Responses: r is queued for the writer and
// found by GetResponse at once; it is durable once Flush returns (or the
// writer's next commit, a few milliseconds later). A response over
// Options.MaxResponseBytes alone is refused (storage.ErrTooLarge); past
// maxQueued waiting responses a put waits for room until ctx ends.
func (s *Store) PutResponse(ctx context.Context, r storage.StoredResponse) error {
	if r.ID == "" {
		return fmt.Errorf("sqlite: a stored response needs an id: %w", storage.ErrInvalid)
	}
	st := s.resp
	if size := int64(r.Size()); size > st.maxBytes {
		return fmt.Errorf("sqlite: response %s is %d bytes, over the store's %d (global.services.response_api.max_bytes): %w", r.ID, size, st.maxBytes, storage.ErrTooLarge)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = st.now()
	}
	select {
	case st.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("sqlite: the response store's write queue is full (the disk is slow): %w", ctx.Err())
	case <-st.stop:
		return errClosed
	}
	st.mu.Lock()
	if st.stopped {
		st.mu.Unlock()
		<-st.slots
		return errClosed
	}
	if _, ok := st.pending[r.ID]; ok {
		<-st.slots // a replacement of a waiting response takes no second slot
		st.queue = slices.DeleteFunc(st.queue, func(q *storage.StoredResponse) bool { return q.ID == r.ID })
	}
	st.pending[r.ID] = &r
	st.queue = append(st.queue, &r)
	st.mu.Unlock()
	select {
	case st.kick <- struct{}{}:
	default:
	}
	return nil
}

// Flush waits until every response put before it is committed and the
// writer is idle (or ctx ends).
func (s *Store) Flush(ctx context.Context) error {
	st := s.resp
	for {
		st.mu.Lock()
		n, busy, idle := len(st.pending), st.busy, st.idle
		st.mu.Unlock()
		if n == 0 && !busy {
			return nil
		}
		select {
		case st.kick <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sqlite: %d stored responses not yet written: %w", n, ctx.Err())
		case <-st.done:
			return errClosed
		case <-idle:
		}
	}
}

// closeResponses stops taking puts and waits for the writer to commit what
// is queued (Close calls it before closing the database).
func (s *Store) closeResponses() {
	st := s.resp
	if st == nil {
		return
	}
	st.mu.Lock()
	already := st.stopped
	st.stopped = true
	st.mu.Unlock()
	if !already {
		close(st.stop)
	}
	<-st.done
}

// writeResponses is the writer: each wake-up commits everything queued,
// writeBatch responses a transaction. A failed commit is retried (the
// responses stay readable in memory) with a growing pause; at Close one
// last try is made and what still fails is logged as lost.
func (s *Store) writeResponses() {
	st := s.resp
	defer close(st.done)
	pause := 50 * time.Millisecond
	for {
		stopping := false
		select {
		case <-st.kick:
		case <-st.stop:
			stopping = true
		}
		st.mu.Lock()
		st.busy = true
		st.mu.Unlock()
		for {
			n, err := s.writeBatch()
			if err != nil {
				if stopping {
					st.mu.Lock()
					lost := len(st.pending)
					st.mu.Unlock()
					s.log.Error("sqlite: stored responses could not be written before closing; they are lost", "responses", lost, "err", err)
					return
				}
				s.log.Warn("sqlite: writing stored responses failed; retrying (they are served from memory meanwhile)", "err", err)
				select {
				case <-time.After(pause):
				case <-st.stop:
					stopping = true
				}
				pause = min(2*pause, 5*time.Second)
				continue
			}
			pause = 50 * time.Millisecond
			if n == 0 {
				break
			}
		}
		if stopping {
			return
		}
		if st.puts >= pruneEvery {
			// The responses are durable; a failed prune is retried later.
			if err := s.pruneResponses(context.Background()); err != nil {
				s.log.Warn("sqlite: removing expired responses failed; retried later", "err", err)
			}
		}
		st.mu.Lock()
		st.busy = false
		close(st.idle)
		st.idle = make(chan struct{})
		st.mu.Unlock()
	}
}

// writeBatch commits up to writeBatch queued responses in one transaction
// and returns how many. It takes them from the queue under the write mutex
// (inside the transaction), so a DeleteResponse is ordered before or after
// the whole batch; on failure they go back to the front of the queue.
func (s *Store) writeBatch() (int, error) {
	st := s.resp
	ctx := context.Background()
	var batch []*storage.StoredResponse
	var count int
	var bytes int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		st.mu.Lock()
		k := min(len(st.queue), writeBatch)
		batch = slices.Clone(st.queue[:k])
		st.queue = st.queue[k:]
		st.mu.Unlock()
		count, bytes = st.count, st.bytes
		for _, r := range batch {
			var err error
			if count, bytes, err = s.insertResponse(ctx, tx, r, count, bytes); err != nil {
				return err
			}
		}
		var err error
		count, bytes, err = s.evict(ctx, tx, count, bytes, pruneBatch)
		return err
	}, func() {
		st.count, st.bytes = count, bytes
		st.puts += len(batch)
		st.mu.Lock()
		for _, r := range batch {
			if st.pending[r.ID] == r {
				delete(st.pending, r.ID)
				<-st.slots
			}
		}
		st.mu.Unlock()
	})
	if err != nil {
		st.mu.Lock()
		var back []*storage.StoredResponse
		for _, r := range batch {
			if st.pending[r.ID] == r { // not deleted or replaced meanwhile
				back = append(back, r)
			}
		}
		st.queue = append(back, st.queue...)
		st.mu.Unlock()
		return 0, err
	}
	return len(batch), nil
}

// insertResponse writes one row in tx and returns the count and bytes
// after it. A turn continuing a conversation renews it (see
// storage.Responses): within the renewal window of its previous turn's last
// use it takes that time, else every earlier turn not renewed within the
// window becomes used now.
func (s *Store) insertResponse(ctx context.Context, tx *sql.Tx, r *storage.StoredResponse, count int, bytes int64) (int, int64, error) {
	st := s.resp
	now := st.now()
	used := now.UnixMilli()
	if r.PreviousID != "" {
		var prevUsed int64
		err := tx.QueryRowContext(ctx, `SELECT used_at FROM responses WHERE id = ?`, r.PreviousID).Scan(&prevUsed)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return 0, 0, fmt.Errorf("sqlite: store response: %w", err)
		case prevUsed >= now.Add(-st.renew).UnixMilli():
			used = prevUsed
		default:
			stale := now.Add(-st.renew).UnixMilli()
			if _, err := tx.ExecContext(ctx, `WITH RECURSIVE chain(id, prev, n) AS (
				SELECT id, previous_id, 1 FROM responses WHERE id = ? AND used_at < ?
				UNION ALL
				SELECT r.id, r.previous_id, c.n + 1 FROM responses r JOIN chain c ON r.id = c.prev
				WHERE c.prev != '' AND r.used_at < ? AND c.n < ?)
				UPDATE responses SET used_at = ? WHERE id IN (SELECT id FROM chain)`,
				r.PreviousID, stale, stale, storage.MaxConversationTurns, used); err != nil {
				return 0, 0, fmt.Errorf("sqlite: renew the conversation of %s: %w", r.ID, err)
			}
		}
	}
	var old int64
	err := tx.QueryRowContext(ctx, `SELECT size FROM responses WHERE id = ?`, r.ID).Scan(&old)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		count++
	case err != nil:
		return 0, 0, fmt.Errorf("sqlite: store response: %w", err)
	default:
		bytes -= old
	}
	size := int64(r.Size())
	_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO responses (id, previous_id, created_at, used_at, size, response, input) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.PreviousID, r.CreatedAt.Unix(), used, size, nonNil(r.Response), nonNil(r.Input))
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: store response: %w", err)
	}
	return count, bytes + size, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// GetResponse implements storage.Responses; a response not yet written is
// answered from memory, an expired one is not found.
func (s *Store) GetResponse(ctx context.Context, id string) (storage.StoredResponse, error) {
	if err := s.check(ctx); err != nil {
		return storage.StoredResponse{}, err
	}
	st := s.resp
	st.mu.Lock()
	p := st.pending[id]
	st.mu.Unlock()
	if p != nil {
		return *p, nil
	}
	r := storage.StoredResponse{ID: id}
	var created int64
	err := s.r.QueryRowContext(ctx, `SELECT previous_id, created_at, response, input FROM responses WHERE id = ? AND used_at >= ?`, id, s.keepFrom()).
		Scan(&r.PreviousID, &created, &r.Response, &r.Input)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("response %q: %w", id, storage.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("sqlite: get response: %w", err)
	}
	r.CreatedAt = time.Unix(created, 0)
	return r, nil
}

// DeleteResponse implements storage.Responses; a response not yet written
// is dropped from the queue, an expired one is removed all the same and not
// found, like one that is gone.
func (s *Store) DeleteResponse(ctx context.Context, id string) error {
	st := s.resp
	var used int64
	var size int64
	found, queued := false, false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		st.mu.Lock()
		if _, queued = st.pending[id]; queued {
			delete(st.pending, id)
			<-st.slots
			st.queue = slices.DeleteFunc(st.queue, func(q *storage.StoredResponse) bool { return q.ID == id })
		}
		st.mu.Unlock()
		err := tx.QueryRowContext(ctx, `DELETE FROM responses WHERE id = ? RETURNING used_at, size`, id).Scan(&used, &size)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("sqlite: delete response: %w", err)
		default:
			found = true
		}
		return nil
	}, func() {
		if found {
			st.count--
			st.bytes -= size
		}
	})
	switch {
	case err != nil:
		return err
	case queued || (found && used >= s.keepFrom()):
		return nil
	}
	return fmt.Errorf("response %q: %w", id, storage.ErrNotFound)
}

// ResponseChain implements storage.ChainReader: the turns not yet written
// are followed in memory, the rest of the conversation is read in one
// recursive query (a turn costs no round trip of its own).
func (s *Store) ResponseChain(ctx context.Context, id string, maxTurns int) ([]storage.StoredResponse, error) {
	if maxTurns <= 0 {
		maxTurns = storage.MaxConversationTurns
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	tooLong := fmt.Errorf("response %s: %w (more than %d)", id, storage.ErrChainTooLong, maxTurns)
	var chain []storage.StoredResponse // newest first
	next := id
	st := s.resp
	st.mu.Lock()
	for next != "" {
		p := st.pending[next]
		if p == nil {
			break
		}
		if len(chain) == maxTurns {
			st.mu.Unlock()
			return nil, tooLong
		}
		chain = append(chain, *p)
		next = p.PreviousID
	}
	st.mu.Unlock()
	if next != "" {
		keep := s.keepFrom()
		rows, err := s.r.QueryContext(ctx, `WITH RECURSIVE chain(id, previous_id, created_at, response, input, n) AS (
			SELECT id, previous_id, created_at, response, input, 1 FROM responses WHERE id = ? AND used_at >= ?
			UNION ALL
			SELECT r.id, r.previous_id, r.created_at, r.response, r.input, c.n + 1 FROM responses r JOIN chain c ON r.id = c.previous_id
			WHERE c.previous_id != '' AND r.used_at >= ? AND c.n < ?)
			SELECT id, previous_id, created_at, response, input FROM chain ORDER BY n`, next, keep, keep, maxTurns-len(chain)+1)
		if err != nil {
			return nil, fmt.Errorf("sqlite: read the conversation of %s: %w", id, err)
		}
		found := 0
		for rows.Next() {
			var r storage.StoredResponse
			var created int64
			if err := rows.Scan(&r.ID, &r.PreviousID, &created, &r.Response, &r.Input); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: read the conversation of %s: %w", id, err)
			}
			r.CreatedAt = time.Unix(created, 0)
			chain = append(chain, r)
			found++
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("sqlite: read the conversation of %s: %w", id, err)
		}
		switch {
		case found == 0 && next == id:
			return nil, fmt.Errorf("response %q: %w", id, storage.ErrNotFound)
		case found == 0:
			return nil, &storage.ChainBrokenError{ID: id, Missing: next}
		case len(chain) > maxTurns:
			return nil, tooLong
		}
		if last := chain[len(chain)-1]; last.PreviousID != "" {
			return nil, &storage.ChainBrokenError{ID: id, Missing: last.PreviousID}
		}
	}
	slices.Reverse(chain)
	return chain, nil
}
