package retrieval

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/junction-router/junction/internal/storage"
)

// resultCache keeps recent search results for a while. Each vector store
// has a generation that Invalidate bumps; an entry remembers the
// generations of its stores when its search began and is stale once one
// has moved, so a search that raced an invalidation is never served.
type resultCache struct {
	ttl     time.Duration
	entries *lru.Cache[[sha256.Size]byte, *cached]

	mu   sync.Mutex
	gens map[string]uint64 // store id → generation (absent: 0)
}

type cached struct {
	stores  []string
	gens    []uint64
	hits    []storage.Hit
	expires time.Time
}

func newResultCache(n int, ttl time.Duration) *resultCache {
	entries, _ := lru.New[[sha256.Size]byte, *cached](n) // n > 0
	return &resultCache{ttl: ttl, entries: entries, gens: map[string]uint64{}}
}

// generations returns the current generation of each store.
func (c *resultCache) generations(stores []string) []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]uint64, len(stores))
	for i, s := range stores {
		out[i] = c.gens[s]
	}
	return out
}

// get returns a copy of the hits cached under key when they are neither
// expired nor stale.
func (c *resultCache) get(key [sha256.Size]byte, stores []string, now time.Time) ([]storage.Hit, bool) {
	e, ok := c.entries.Get(key)
	if !ok {
		return nil, false
	}
	if now.After(e.expires) || !slices.Equal(e.gens, c.generations(stores)) {
		c.entries.Remove(key)
		return nil, false
	}
	return slices.Clone(e.hits), true
}

// put caches hits of a search that began at generations gens.
func (c *resultCache) put(key [sha256.Size]byte, stores []string, gens []uint64, hits []storage.Hit, now time.Time) {
	c.entries.Add(key, &cached{stores: slices.Clone(stores), gens: gens, hits: hits, expires: now.Add(c.ttl)})
}

// invalidate makes every entry that searched store stale, and frees them.
func (c *resultCache) invalidate(store string) {
	c.mu.Lock()
	c.gens[store]++
	c.mu.Unlock()
	for _, k := range c.entries.Keys() {
		if e, ok := c.entries.Peek(k); ok && slices.Contains(e.stores, store) {
			c.entries.Remove(k)
		}
	}
}

// cacheKey identifies a search: its stores (in any order), text, k, minimum
// score and filter (as canonical JSON).
func cacheKey(stores []string, text string, k int, minScore *float32, filter *storage.Filter) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	sorted := slices.Clone(stores)
	slices.Sort(sorted)
	for _, s := range sorted {
		field([]byte(s))
	}
	field(nil)
	field([]byte(text))
	binary.BigEndian.PutUint64(n[:], uint64(k))
	h.Write(n[:])
	if minScore != nil {
		binary.BigEndian.PutUint64(n[:], uint64(math.Float32bits(*minScore))|1<<32)
	} else {
		binary.BigEndian.PutUint64(n[:], 0)
	}
	h.Write(n[:])
	if filter != nil {
		b, _ := json.Marshal(filter) // a validated filter holds strings, numbers, booleans and arrays of them
		field(b)
	} else {
		field(nil)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
