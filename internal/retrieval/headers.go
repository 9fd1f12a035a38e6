package retrieval

import (
	"context"
	"errors"
	"sync"

	"github.com/junction-router/junction/internal/storage"
)

// maxHeaders bounds the header cache; past it the cache starts again empty
// (a router names a handful of stores, so this only guards against a client
// sending endless made-up names).
const maxHeaders = 1024

// headerCache remembers what a store lookup answered (a vector store's
// header, or that no store has that id or name), so a search whose results
// are cached does not go to the store to resolve its source first. Every
// Invalidate drops it whole: store headers change only through the
// management API and ingestion, which call Invalidate, and far less often
// than they are searched. A lookup that raced an Invalidate is not kept.
type headerCache struct {
	mu      sync.Mutex
	gen     uint64
	entries map[headerKey]header
}

type headerKey struct {
	idOnly bool // the lookup was by id alone (GetVectorStore), not id or name
	name   string
}

type header struct {
	vs       storage.VectorStore
	notFound bool
}

func newHeaderCache() *headerCache { return &headerCache{entries: map[headerKey]header{}} }

// lookup answers from the cache or asks find, keeping a found store or a
// not-found answer; any other error is returned and not kept.
func (c *headerCache) lookup(ctx context.Context, key headerKey, find func(context.Context, string) (storage.VectorStore, error)) (storage.VectorStore, error) {
	c.mu.Lock()
	h, ok := c.entries[key]
	gen := c.gen
	c.mu.Unlock()
	if ok {
		if h.notFound {
			return storage.VectorStore{}, storage.ErrNotFound
		}
		return h.vs, nil
	}
	vs, err := find(ctx, key.name)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return vs, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if len(c.entries) >= maxHeaders {
			clear(c.entries)
		}
		c.entries[key] = header{vs: vs, notFound: err != nil}
	}
	c.mu.Unlock()
	return vs, err
}

// invalidate forgets every header.
func (c *headerCache) invalidate() {
	c.mu.Lock()
	c.gen++
	clear(c.entries)
	c.mu.Unlock()
}
