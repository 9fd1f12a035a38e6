// Package memstore holds the in-process stores behind the plugin host's
// functions when no external store is configured: a response cache with
// time-to-live and similarity lookup, named vector stores, a text-search
// Retriever over those stores and a Memory of texts per scope (the last two
// back retrieve and memory_* in plugin tests and the plugin commands; serve
// uses the data directory's). All are bounded (entries per namespace, store
// or scope, value size) and safe for concurrent use; they forget everything
// when the process ends.
//
// It must not know about plugins, requests or modes: the host decides who
// may read or write; these only store.
package memstore

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"sync"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

// Cache is an LRU cache per namespace with a time to live per entry. A lookup
// tries the exact key, then (given an embedding) the most similar live entry
// that was stored with one: in a small namespace by scoring every entry, in
// a larger one by scoring the few whose 64-bit SimHash sketch is nearest the
// query's (vecindex.SimHash). Either way the similarity reported, and
// compared with the threshold, is the exact cosine of the entry returned:
// the sketches can miss a near entry, never make a hit of a far one.
type Cache struct {
	MaxEntries int           // per namespace; default 10,000
	MaxValue   int           // bytes; default 1 MiB
	DefaultTTL time.Duration // default 10 minutes
	// MaxTotal and MaxBytes bound the whole cache (every namespace): the
	// least recently used entries go first. Defaults 100,000 entries and
	// 256 MiB (keys, values and embeddings counted).
	MaxTotal int
	MaxBytes int64
	Now      func() time.Time
	// OnRemove, when set, is told of every entry that leaves the cache
	// (evicted, expired, overwritten entries excepted, invalidated,
	// flushed), with the cache's lock held: it must not call the cache. A
	// store kept elsewhere (the embedded backend) deletes its copies.
	OnRemove func(ns, key string)
	// LinearScan bounds the namespaces a semantic lookup scans in full:
	// those of at most this many entries (default 64: scoring them costs
	// about what sketching the query does, 64 dot products). A larger
	// namespace is searched through its entries' sketches (see Lookup).
	// Negative: always through the sketches.
	LinearScan int

	hmu    sync.Mutex                // guards hashes (taken with or without mu, never mu under it)
	hashes map[int]*vecindex.SimHash // per dimension

	mu      sync.Mutex
	nss     map[string]*namespace
	all     list.List // every entry, most recently used first
	bytes   int64     // entrySize of every entry
	counts  CacheCounts
	epochs  map[string]uint64 // flush scope (CacheFilter.Scope, "" global) -> epoch
	flushes uint64            // flushes of any scope
	cands   []uint32          // a sketch search's candidates (mu held)
}

// Defaults of the whole cache's bounds.
const (
	DefaultMaxTotal = 100000
	DefaultMaxBytes = 256 << 20
)

// CacheCounts are a cache's lookup and removal counters since it was made.
// A lookup with an embedding that misses counts as a semantic miss; one
// without, an exact miss.
type CacheCounts struct {
	ExactHits, SemanticHits     uint64
	ExactMisses, SemanticMisses uint64
	Evictions                   uint64 // pushed out by the per-namespace entry bound
	Expirations                 uint64 // past their time to live when met
	Invalidated                 uint64 // removed by Invalidate
	Flushed                     uint64 // removed by Flush
}

// HitRatio is hits/(hits+misses), 0 before any lookup.
func (c CacheCounts) HitRatio() float64 {
	h := c.ExactHits + c.SemanticHits
	t := h + c.ExactMisses + c.SemanticMisses
	if t == 0 {
		return 0
	}
	return float64(h) / float64(t)
}

type namespace struct {
	name string
	lru  *list.List // front = most recent; values are *entry
	keys map[string]*list.Element
	// scan holds every entry once, densely (removal swaps the last one in),
	// so a semantic lookup walks one slice instead of the list's pointers.
	scan []slot
	// hx is parallel to scan: what the sketch search reads of each slot,
	// 16 bytes apiece, so a search does not touch the slots it skips.
	hx   []hslot
	tick uint64 // stamps uses, so equal similarities go to the most recent
	// detached: taken out of nss by a flush, its entries counted as
	// flushed and being swept.
	detached bool
}

// hslot is a slot's sketch and expiry.
type hslot struct {
	sketch  uint64 // vecindex.SimHash of the embedding (0 without one)
	expires int64  // unix nanoseconds, as the slot's
}

// slot is what a semantic scan reads of an entry.
type slot struct {
	vec     []float32 // the entry's embedding, L2-normalised (a zero one stays zero)
	expires int64     // unix nanoseconds
	used    uint64    // the namespace's tick when last stored or made recent
	el      *list.Element
}

type entry struct {
	ns        *namespace
	all       *list.Element // in Cache.all
	key       string
	value     []byte
	embedding []float32 // L2-normalised at Store
	created   time.Time
	expires   time.Time
	pos       int // index in namespace.scan
}

// size is what an entry counts against MaxBytes.
func (e *entry) size() int64 { return int64(len(e.key) + len(e.value) + 4*len(e.embedding) + 64) }

var _ hostapi.Cache = (*Cache)(nil)

// NewCache returns a cache with the defaults.
func NewCache() *Cache { return &Cache{} }

func (c *Cache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

type peekKey struct{}

// Peeking marks ctx so that the cache's lookups under it are not counted and
// do not make entries recent: what a dry run (the management API's test of
// a request) needs.
func Peeking(ctx context.Context) context.Context { return context.WithValue(ctx, peekKey{}, true) }

// Lookup implements hostapi.Cache.
func (c *Cache) Lookup(ctx context.Context, ns, key string, embedding []float32, threshold float32) (abi.CacheEntry, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := &c.counts
	if ctx.Value(peekKey{}) != nil {
		counts = &CacheCounts{} // a dry run: counted nowhere
	}
	miss := &counts.ExactMisses
	if len(embedding) > 0 {
		miss = &counts.SemanticMisses
	}
	n := c.nss[ns]
	if n == nil {
		*miss++
		return abi.CacheEntry{}, false, nil
	}
	now := c.now()
	if el, ok := n.keys[key]; ok {
		e := el.Value.(*entry)
		if now.Before(e.expires) {
			if counts == &c.counts {
				c.touch(n, el)
			}
			counts.ExactHits++
			return abi.CacheEntry{Similarity: 1, Value: e.value}, true, nil
		}
		c.remove(n, el)
		c.counts.Expirations++
	}
	if len(embedding) == 0 {
		*miss++
		return abi.CacheEntry{}, false, nil
	}
	// Entries hold unit vectors, so the cosine is the dot product divided
	// by the query's norm: compare dot products, scale the best once.
	var qq float64
	for _, x := range embedding {
		qq += float64(x) * float64(x)
	}
	inv := float32(0)
	if qq > 0 {
		inv = float32(1 / math.Sqrt(qq))
	}
	var best *list.Element
	var bestDot float32
	var err error
	if c.linear(n) {
		best, bestDot, err = c.scanAll(ctx, n, embedding, now.UnixNano())
	} else {
		best, bestDot, err = c.scanSketches(ctx, n, embedding, threshold, now.UnixNano())
	}
	if err != nil {
		return abi.CacheEntry{}, false, err
	}
	bestSim := bestDot * inv
	if best == nil || bestSim < threshold {
		*miss++
		return abi.CacheEntry{}, false, nil
	}
	counts.SemanticHits++
	el := best
	if counts == &c.counts {
		c.touch(n, el)
	}
	return abi.CacheEntry{Similarity: bestSim, Value: el.Value.(*entry).value}, true, nil
}

// defaultLinearScan is LinearScan's default.
const defaultLinearScan = vecindex.SketchBits

// linear reports whether a semantic lookup scans all of n (c.mu held).
func (c *Cache) linear(n *namespace) bool {
	lim := c.LinearScan
	if lim == 0 {
		lim = defaultLinearScan
	}
	return lim > 0 && len(n.scan) <= lim
}

// scanAll scores every live slot of n of q's dimension (removing the
// expired ones it meets) and returns the best: the highest dot product,
// the most recently used of equals; -1 when none (c.mu held).
func (c *Cache) scanAll(ctx context.Context, n *namespace, q []float32, nowNS int64) (best *list.Element, bestDot float32, err error) {
	var bestUsed uint64
	for i := 0; i < len(n.scan); {
		s := &n.scan[i]
		if s.expires <= nowNS {
			c.remove(n, s.el) // swaps the last slot into i
			c.counts.Expirations++
			continue
		}
		if len(s.vec) == len(q) {
			d := vecindex.Dot(s.vec, q)
			if best == nil || d > bestDot || (d == bestDot && s.used > bestUsed) {
				best, bestDot, bestUsed = s.el, d, s.used
			}
		}
		i++
		if i&1023 == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
	}
	return best, bestDot, ctx.Err()
}

// candidateFloats bounds the vectors a sketch search scores exactly: 32
// KiB of them (81 candidates of 100 dimensions), at least minCandidates
// (32 of 1,024 dimensions: 128 KiB). Recall on the labelled pairs and the
// gateway benchmark's rewordings was the same from 4,096 to 32,768 floats.
const (
	candidateFloats = 1 << 13
	minCandidates   = 32
)

// scanSketches is scanAll through the slots' SimHash sketches: one pass
// over n.hx (16 bytes a slot: the expired are removed as in scanAll, the
// rest get the Hamming distance of their sketch to q's), then the exact
// dot product for the slots whose sketch is within the threshold's radius
// (vecindex.SketchRadius), the nearest sketches first, at most
// max(minCandidates, candidateFloats/dim) of them. What it returns is
// scored exactly, so a hit is always a hit scanAll would make (if not
// always the same one); it misses when the entry over the threshold is
// not among the candidates: its sketch strays past the radius (about 3 in
// 100,000), or more than the cap of entries have nearer sketches, which
// needs a namespace crowded with entries about as similar as it (c.mu
// held).
func (c *Cache) scanSketches(ctx context.Context, n *namespace, q []float32, threshold float32, nowNS int64) (best *list.Element, bestDot float32, err error) {
	qs := c.simhash(len(q)).Sketch(q)
	radius := vecindex.SketchRadius(threshold)
	// Pass 1: the live slots within the radius, as index<<8 | distance,
	// and how many at each distance; expired slots are removed after.
	var hist [vecindex.SketchBits + 1]int
	limit := max(minCandidates, candidateFloats/max(len(q), 1))
	cands, expired := nearSketches(n.hx, qs, radius, limit, nowNS, &hist, c.cands[:0])
	c.cands = cands
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	// Every candidate within cut is scored, and the first extra at cut+1.
	cut, taken := -1, 0
	for d := 0; d <= radius && taken+hist[d] <= limit; d++ {
		cut, taken = d, taken+hist[d]
	}
	extra := 0
	if cut < radius {
		extra = limit - taken
	}
	bestAt := -1
	var bestUsed uint64
	for _, x := range cands {
		if d := int(x & 0xff); d > cut {
			if d != cut+1 || extra == 0 {
				continue
			}
			extra--
		}
		i := int(x >> 8)
		s := &n.scan[i]
		if len(s.vec) != len(q) {
			continue
		}
		v := vecindex.Dot(s.vec, q)
		if bestAt < 0 || v > bestDot || (v == bestDot && s.used > bestUsed) {
			bestAt, bestDot, bestUsed = i, v, s.used
		}
	}
	if bestAt >= 0 {
		best = n.scan[bestAt].el
	}
	if expired > 0 {
		c.removeExpired(n, nowNS)
	}
	return best, bestDot, nil
}

// nearSketches appends to cands the live slots of hx whose sketch is
// within radius of qs, as index<<8 | distance, counting them by distance in
// hist, and counts the expired slots. Once limit candidates are nearer
// than some distance, farther ones are no longer collected (the radius
// shrinks), so a crowded namespace does not append every slot. It is the
// sketch search's hot loop, kept apart (not inlined) so that it compiles
// to a tight one: inlined, the caller's live variables spilled it to the
// stack.
//
//go:noinline
func nearSketches(hx []hslot, qs uint64, radius, limit int, nowNS int64, hist *[vecindex.SketchBits + 1]int, cands []uint32) (_ []uint32, expired int) {
	within := 0 // candidates at distance radius or less
	for i := range hx {
		h := &hx[i]
		if h.expires <= nowNS {
			expired++
			continue
		}
		d := bits.OnesCount64(h.sketch ^ qs)
		if d > radius {
			continue
		}
		hist[d]++
		within++
		cands = append(cands, uint32(i)<<8|uint32(d))
		for radius > 0 && within-hist[radius] >= limit {
			within -= hist[radius]
			radius--
		}
	}
	return cands, expired
}

// removeExpired removes n's expired entries (c.mu held).
func (c *Cache) removeExpired(n *namespace, nowNS int64) {
	for i := 0; i < len(n.hx); {
		if n.hx[i].expires <= nowNS {
			c.remove(n, n.scan[i].el) // swaps the last slot into i
			c.counts.Expirations++
			continue
		}
		i++
	}
}

// simhash is the SimHash of dim-long vectors, made on first use.
func (c *Cache) simhash(dim int) *vecindex.SimHash {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	h := c.hashes[dim]
	if h == nil {
		if c.hashes == nil {
			c.hashes = make(map[int]*vecindex.SimHash)
		}
		h = vecindex.NewSimHash(dim)
		c.hashes[dim] = h
	}
	return h
}

// prepare is what put keeps of an embedding: a normalised copy and its
// sketch (computed before taking c.mu).
func (c *Cache) prepare(embedding []float32) ([]float32, uint64) {
	if len(embedding) == 0 {
		return nil, 0
	}
	vec := append([]float32(nil), embedding...)
	vecindex.Normalize(vec)
	return vec, c.simhash(len(vec)).Sketch(vec)
}

// Store implements hostapi.Cache.
func (c *Cache) Store(_ context.Context, ns, key string, value []byte, ttl time.Duration, embedding []float32) error {
	maxValue := c.MaxValue
	if maxValue <= 0 {
		maxValue = 1 << 20
	}
	if len(value) > maxValue {
		return fmt.Errorf("cache value of %d bytes is over the limit of %d", len(value), maxValue)
	}
	if ttl <= 0 {
		ttl = c.DefaultTTL
		if ttl <= 0 {
			ttl = 10 * time.Minute
		}
	}
	vec, sketch := c.prepare(embedding)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.put(ns, key, value, vec, sketch, now, now.Add(ttl))
	return nil
}

// Restore puts an entry back as a store kept elsewhere recorded it (its
// creation and expiry), as the least recently used one: an embedded
// backend loads its file, most recently used last. An expired entry is
// ignored.
func (c *Cache) Restore(ns, key string, value []byte, embedding []float32, created, expires time.Time) {
	vec, sketch := c.prepare(embedding)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.now().Before(expires) {
		return
	}
	c.put(ns, key, value, vec, sketch, created, expires)
}

// put stores an entry (c.mu held) and enforces the bounds; vec and sketch
// are prepare's.
func (c *Cache) put(ns, key string, value []byte, vec []float32, sketch uint64, created, expires time.Time) {
	maxEntries := c.MaxEntries
	if maxEntries <= 0 {
		maxEntries = 10000
	}
	if c.nss == nil {
		c.nss = make(map[string]*namespace)
	}
	n := c.nss[ns]
	if n == nil {
		n = &namespace{name: ns, lru: list.New(), keys: make(map[string]*list.Element)}
		c.nss[ns] = n
	}
	e := &entry{ns: n, key: key, value: value, embedding: vec, created: created, expires: expires}
	if el, ok := n.keys[key]; ok {
		old := el.Value.(*entry)
		e.pos, e.all = old.pos, old.all
		e.all.Value = e
		c.bytes += e.size() - old.size()
		el.Value = e
		n.scan[e.pos].vec, n.scan[e.pos].expires = vec, e.expires.UnixNano()
		n.hx[e.pos] = hslot{sketch: sketch, expires: e.expires.UnixNano()}
		c.touch(n, el)
	} else {
		el := n.lru.PushFront(e)
		n.keys[key] = el
		e.pos = len(n.scan)
		e.all = c.all.PushFront(e)
		c.bytes += e.size()
		n.tick++
		n.scan = append(n.scan, slot{vec: vec, expires: e.expires.UnixNano(), used: n.tick, el: el})
		n.hx = append(n.hx, hslot{sketch: sketch, expires: e.expires.UnixNano()})
		for n.lru.Len() > maxEntries {
			c.remove(n, n.lru.Back())
			c.counts.Evictions++
		}
	}
	maxTotal, maxBytes := c.MaxTotal, c.MaxBytes
	if maxTotal <= 0 {
		maxTotal = DefaultMaxTotal
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	for c.all.Len() > 0 && (c.all.Len() > maxTotal || c.bytes > maxBytes) {
		old := c.all.Back().Value.(*entry)
		c.remove(old.ns, old.ns.keys[old.key])
		if !old.ns.detached { // counted as flushed already
			c.counts.Evictions++
		}
	}
}

// Len is the number of entries in a namespace (expired ones included until
// they are met).
func (c *Cache) Len(ns string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nss[ns]; n != nil {
		return n.lru.Len()
	}
	return 0
}

// remove takes an entry out of its namespace and the cache (c.mu held),
// dropping the namespace once empty.
func (c *Cache) remove(n *namespace, el *list.Element) {
	e := el.Value.(*entry)
	delete(n.keys, e.key)
	n.lru.Remove(el)
	c.all.Remove(e.all)
	c.bytes -= e.size()
	last := len(n.scan) - 1
	if e.pos != last {
		n.scan[e.pos] = n.scan[last]
		n.hx[e.pos] = n.hx[last]
		n.scan[e.pos].el.Value.(*entry).pos = e.pos
	}
	n.scan[last] = slot{}
	n.scan = n.scan[:last]
	n.hx = n.hx[:last]
	if n.lru.Len() == 0 && c.nss[n.name] == n {
		delete(c.nss, n.name)
	}
	if c.OnRemove != nil {
		c.OnRemove(n.name, e.key)
	}
}

// touch makes an entry the most recent.
func (c *Cache) touch(n *namespace, el *list.Element) {
	n.lru.MoveToFront(el)
	c.all.MoveToFront(el.Value.(*entry).all)
	n.tick++
	n.scan[el.Value.(*entry).pos].used = n.tick
}

func cosine(a, b []float32) float32 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(na*nb))
}

// Vectors are named in-memory vector stores searched by exact cosine
// similarity (a linear scan, fine for the thousands of items it bounds).
type Vectors struct {
	MaxItems int // per store; default 50,000

	mu     sync.RWMutex
	stores map[string]map[string]item
}

type item struct {
	vec     []float32
	payload []byte
}

var _ hostapi.VectorStores = (*Vectors)(nil)

// NewVectors returns empty stores.
func NewVectors() *Vectors { return &Vectors{} }

// Create makes an empty store (no error when it exists).
func (v *Vectors) Create(store string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stores == nil {
		v.stores = make(map[string]map[string]item)
	}
	if v.stores[store] == nil {
		v.stores[store] = make(map[string]item)
	}
}

// Upsert puts an item into a store, creating the store.
func (v *Vectors) Upsert(store, id string, vec []float32, payload []byte) error {
	if len(vec) == 0 {
		return errors.New("an item needs a vector")
	}
	v.Create(store)
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.stores[store]
	max := v.MaxItems
	if max <= 0 {
		max = 50000
	}
	if _, ok := s[id]; !ok && len(s) >= max {
		return fmt.Errorf("vector store %s is full (%d items)", store, max)
	}
	s[id] = item{vec: append([]float32(nil), vec...), payload: append([]byte(nil), payload...)}
	return nil
}

// Search implements hostapi.VectorStores.
func (v *Vectors) Search(ctx context.Context, store string, query []float32, k int) ([]abi.VectorHit, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	s, ok := v.stores[store]
	if !ok {
		return nil, fmt.Errorf("%w: %s", hostapi.ErrNoSuchStore, store)
	}
	hits := make([]abi.VectorHit, 0, len(s))
	for id, it := range s {
		if len(it.vec) != len(query) {
			continue
		}
		hits = append(hits, abi.VectorHit{ID: id, Score: cosine(it.vec, query), Payload: it.payload})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}
