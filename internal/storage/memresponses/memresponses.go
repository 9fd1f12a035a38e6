// Package memresponses is the in-memory response store of the Responses API
// (global.services.response_api.store: memory): bounded in entries and bytes,
// each response forgotten after a time to live, the oldest first when a
// bound is reached. Nothing survives a restart; the embedded store
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

// Store keeps responses in memory. It is safe for concurrent use.
type Store struct {
	o     Options
	mu    sync.Mutex
	byID  map[string]*list.Element // of *storage.StoredResponse
	order list.List                // oldest first
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
	return &Store{o: o, byID: map[string]*list.Element{}}
}

// PutResponse keeps r, evicting the oldest responses past the bounds. A
// response larger than MaxBytes on its own is refused (storage.ErrTooLarge).
func (s *Store) PutResponse(_ context.Context, r storage.StoredResponse) error {
	size := int64(r.Size())
	if size > s.o.MaxBytes {
		return fmt.Errorf("memresponses: response %s is %d bytes, over the store's %d: %w", r.ID, size, s.o.MaxBytes, storage.ErrTooLarge)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.o.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[r.ID]; ok {
		s.remove(e)
	}
	s.byID[r.ID] = s.order.PushBack(&r)
	s.bytes += size
	s.expire()
	for s.order.Len() > s.o.MaxEntries || s.bytes > s.o.MaxBytes {
		s.remove(s.order.Front())
	}
	return nil
}

// GetResponse returns a copy's header; the JSON is shared and must not be
// changed.
func (s *Store) GetResponse(_ context.Context, id string) (storage.StoredResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	e, ok := s.byID[id]
	if !ok {
		return storage.StoredResponse{}, fmt.Errorf("response %s: %w", id, storage.ErrNotFound)
	}
	return *e.Value.(*storage.StoredResponse), nil
}

// DeleteResponse removes a response.
func (s *Store) DeleteResponse(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	e, ok := s.byID[id]
	if !ok {
		return fmt.Errorf("response %s: %w", id, storage.ErrNotFound)
	}
	s.remove(e)
	return nil
}

// Len is the number of responses kept.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	return s.order.Len()
}

// expire drops the responses older than the TTL (the oldest are first).
func (s *Store) expire() {
	cutoff := s.o.Now().Add(-s.o.TTL)
	for e := s.order.Front(); e != nil; e = s.order.Front() {
		if !e.Value.(*storage.StoredResponse).CreatedAt.Before(cutoff) {
			return
		}
		s.remove(e)
	}
}

func (s *Store) remove(e *list.Element) {
	r := s.order.Remove(e).(*storage.StoredResponse)
	delete(s.byID, r.ID)
	s.bytes -= int64(r.Size())
}
