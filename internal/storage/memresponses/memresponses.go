// Package memresponses is the in-memory response store of the Responses API
// (global.services.response_api.store: memory): bounded in entries and bytes,
// each response forgotten a time to live after it was last used (stored, or
// its conversation continued), the least recently used first when a bound
// is reached. Nothing survives a restart; the embedded store
// (internal/storage/sqlite) does.
package memresponses

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/junction-router/junction/internal/storage"
)

// Defaults of Options.
const (
	DefaultMaxEntries = 10000
	DefaultMaxBytes   = 256 << 20
	DefaultTTL        = storage.DefaultResponseTTL
)

// Options bound a Store; zero values take the defaults.
type Options struct {
	MaxEntries int
	MaxBytes   int64
	TTL        time.Duration
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// entry is a stored response and when it was last used: stored, or named
// by a later turn's previous_response_id chain. A conversation's turns
// share one usedAt (see PutResponse), so they expire together.
type entry struct {
	r      storage.StoredResponse
	usedAt time.Time
}

// Store keeps responses in memory. It is safe for concurrent use.
type Store struct {
	o     Options
	renew time.Duration // see storage.RenewWithin
	mu    sync.Mutex
	byID  map[string]*list.Element // of *entry
	order list.List                // least recently used first
	bytes int64
}

var _ storage.Responses = (*Store)(nil)

// New returns an empty store.
func New(o Options) *Store {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{o: o, renew: storage.RenewWithin(o.TTL), byID: map[string]*list.Element{}}
}

// PutResponse keeps r, evicting the least recently used responses past the
// bounds. A response larger than MaxBytes on its own is refused
// (storage.ErrTooLarge). A turn that continues a conversation renews it:
// when its previous response was last used more than the renewal window
// ago, every earlier turn becomes used now; otherwise the new turn takes
// the conversation's time, so the turns of a conversation expire together.
func (s *Store) PutResponse(_ context.Context, r storage.StoredResponse) error {
	size := int64(r.Size())
	if size > s.o.MaxBytes {
		return fmt.Errorf("memresponses: response %s is %d bytes, over the store's %d (global.services.response_api.max_bytes): %w", r.ID, size, s.o.MaxBytes, storage.ErrTooLarge)
	}
	now := s.o.Now()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[r.ID]; ok {
		s.remove(e)
	}
	used := now
	if p, ok := s.byID[r.PreviousID]; ok && r.PreviousID != "" {
		if pe := p.Value.(*entry); !pe.usedAt.Before(now.Add(-s.renew)) {
			used = pe.usedAt
		} else {
			s.renewChain(p, now)
		}
	}
	s.byID[r.ID] = s.order.PushBack(&entry{r: r, usedAt: used})
	s.bytes += size
	s.expire()
	for s.order.Len() > s.o.MaxEntries || s.bytes > s.o.MaxBytes {
		s.remove(s.order.Front())
	}
	return nil
}

// renewChain marks e and the turns before it used at now, stopping at one
// renewed within the window (those before it are at least as recent: a
// turn is never renewed without the turns before it).
func (s *Store) renewChain(e *list.Element, now time.Time) {
	var stale []*list.Element // newest first
	for e != nil && len(stale) < storage.MaxConversationTurns {
		en := e.Value.(*entry)
		if !en.usedAt.Before(now.Add(-s.renew)) {
			break
		}
		stale = append(stale, e)
		if en.r.PreviousID == "" {
			break
		}
		e = s.byID[en.r.PreviousID]
	}
	for i := len(stale) - 1; i >= 0; i-- { // the oldest turn first, as stored
		stale[i].Value.(*entry).usedAt = now
		s.order.MoveToBack(stale[i])
	}
}

// GetResponse returns a copy's header; the JSON is shared and must not be
// changed.
func (s *Store) GetResponse(_ context.Context, id string) (storage.StoredResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(id)
	if !ok {
		return storage.StoredResponse{}, fmt.Errorf("response %s: %w", id, storage.ErrNotFound)
	}
	return e.Value.(*entry).r, nil
}

// DeleteResponse removes a response.
func (s *Store) DeleteResponse(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(id)
	if !ok {
		return fmt.Errorf("response %s: %w", id, storage.ErrNotFound)
	}
	s.remove(e)
	return nil
}

// live is id's element unless it is missing or expired (an expired one is
// removed).
func (s *Store) live(id string) (*list.Element, bool) {
	s.expire()
	e, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	if e.Value.(*entry).usedAt.Before(s.o.Now().Add(-s.o.TTL)) {
		s.remove(e)
		return nil, false
	}
	return e, true
}

// Len is the number of responses kept.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	return s.order.Len()
}

// Bytes is what the responses kept hold (storage.StoredResponse.Size).
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// expire drops the responses unused for longer than the TTL from the
// front (the least recently used; a turn that took its conversation's
// time may sit behind a newer one and is dropped when met, see live).
func (s *Store) expire() {
	cutoff := s.o.Now().Add(-s.o.TTL)
	for e := s.order.Front(); e != nil; e = s.order.Front() {
		if !e.Value.(*entry).usedAt.Before(cutoff) {
			return
		}
		s.remove(e)
	}
}

func (s *Store) remove(e *list.Element) {
	en := s.order.Remove(e).(*entry)
	delete(s.byID, en.r.ID)
	s.bytes -= int64(en.r.Size())
}
