package memstore

import (
	"sort"
	"strings"
	"time"
)

// Counts returns the cache's counters and its entry count (all namespaces,
// expired entries included until they are met).
func (c *Cache) Counts() (CacheCounts, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ns := range c.nss {
		n += ns.lru.Len()
	}
	return c.counts, n
}

// CacheStats describe what a cache holds.
type CacheStats struct {
	Counts     CacheCounts
	Entries    int              // across namespaces
	Bytes      int64            // keys, values and embeddings, as MaxBytes counts them
	Namespaces int              // namespaces holding entries
	Top        []NamespaceCount // the largest namespaces, largest first
	Epochs     map[string]uint64
}

// NamespaceCount is the entry count of one namespace.
type NamespaceCount struct {
	Namespace string
	Entries   int
}

// Stats walks the cache (it holds the lock for one pass over the entries)
// and returns its counts with the topN largest namespaces.
func (c *Cache) Stats(topN int) CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := CacheStats{Counts: c.counts, Bytes: c.bytes, Epochs: make(map[string]uint64, len(c.epochs))}
	for k, v := range c.epochs {
		st.Epochs[k] = v
	}
	for name, n := range c.nss {
		if n.lru.Len() == 0 {
			continue
		}
		st.Namespaces++
		st.Entries += n.lru.Len()
		st.Top = append(st.Top, NamespaceCount{Namespace: name, Entries: n.lru.Len()})
	}
	sort.Slice(st.Top, func(i, j int) bool {
		if st.Top[i].Entries != st.Top[j].Entries {
			return st.Top[i].Entries > st.Top[j].Entries
		}
		return st.Top[i].Namespace < st.Top[j].Namespace
	})
	if topN >= 0 && len(st.Top) > topN {
		st.Top = st.Top[:topN]
	}
	return st
}

// Flush advances the epoch of the scope f selects (f.Scope; the zero filter
// is the global scope) and removes every entry f selects, so no entry stored
// before the flush answers again. It returns the scope's new epoch and how
// many entries went. A filter of namespaces only (no key prefix, no age),
// what a flush usually is, takes the namespaces out of reach at once and
// removes their entries in batches (see sweep), so lookups and stores wait
// for one batch at most, not for the whole scope.
func (c *Cache) Flush(f CacheFilter) (epoch uint64, removed int) {
	c.mu.Lock()
	if c.epochs == nil {
		c.epochs = make(map[string]uint64)
	}
	scope := f.Scope()
	c.epochs[scope]++
	c.flushes++
	epoch = c.epochs[scope]
	if f.KeyPrefix != "" || !f.OlderThan.IsZero() {
		removed = c.removeSelected(f)
		c.counts.Flushed += uint64(removed)
		c.mu.Unlock()
		return epoch, removed
	}
	gone, removed := c.detach(f.Namespace)
	c.mu.Unlock()
	c.sweep(gone)
	return epoch, removed
}

// Retain removes the entries of every namespace keep refuses, counted as
// flushed: what a changed configuration leaves behind (entries kept under
// its old epoch, which no request asks for again). Like Flush, it takes the
// namespaces out of reach at once and removes their entries in batches.
// It returns how many entries went.
func (c *Cache) Retain(keep func(ns string) bool) (removed int) {
	c.mu.Lock()
	gone, removed := c.detach(func(ns string) bool { return !keep(ns) })
	c.mu.Unlock()
	c.sweep(gone)
	return removed
}

// detach takes the namespaces drop selects out of c.nss (c.mu held), and
// counts their entries as flushed: they are gone for lookups and stores
// (a store makes a new namespace of the name), while their entries stay
// in the whole-cache list and bytes until sweep removes them.
func (c *Cache) detach(drop func(ns string) bool) (gone []*namespace, entries int) {
	for name, n := range c.nss {
		if drop(name) {
			delete(c.nss, name)
			n.detached = true
			entries += n.lru.Len()
			gone = append(gone, n)
		}
	}
	c.counts.Flushed += uint64(entries)
	return gone, entries
}

// sweepBatch is how many entries sweep removes per hold of the lock: tens
// of microseconds.
const sweepBatch = 256

// sweep removes the entries of detached namespaces, sweepBatch at a time
// (OnRemove is told of each, so an embedded backend deletes its rows).
func (c *Cache) sweep(gone []*namespace) {
	for _, n := range gone {
		for done := false; !done; {
			c.mu.Lock()
			for i := 0; i < sweepBatch && n.lru.Len() > 0; i++ {
				c.remove(n, n.lru.Back())
			}
			done = n.lru.Len() == 0
			c.mu.Unlock()
		}
	}
}

// Flushes is the number of flushes of any scope since the cache was made.
func (c *Cache) Flushes() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushes
}

// Epoch is the number of flushes of scope (a CacheFilter.Scope) so far.
func (c *Cache) Epoch(scope string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epochs[scope]
}

// SetEpoch sets a flush scope's epoch: an embedded backend restores the
// epochs it recorded.
func (c *Cache) SetEpoch(scope string, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epochs == nil {
		c.epochs = make(map[string]uint64)
	}
	c.epochs[scope] = epoch
}

// CacheFilter selects entries; the zero filter selects every entry.
type CacheFilter struct {
	NamespacePrefix string
	// Segments must each appear in the namespace as a path segment
	// ("model=m1" matches ".../model=m1/..." or ".../model=m1").
	Segments  []string
	KeyPrefix string
	// OlderThan, when not zero, selects entries stored before it.
	OlderThan time.Time
}

// Namespace reports whether the filter's namespace conditions hold for ns.
func (f CacheFilter) Namespace(ns string) bool {
	if !strings.HasPrefix(ns, f.NamespacePrefix) {
		return false
	}
	for _, s := range f.Segments {
		if !strings.Contains(ns+"/", "/"+s+"/") {
			return false
		}
	}
	return true
}

// Selects reports whether the filter selects an entry of namespace ns under
// key, created at created.
func (f CacheFilter) Selects(ns, key string, created time.Time) bool {
	return f.Namespace(ns) && strings.HasPrefix(key, f.KeyPrefix) && (f.OlderThan.IsZero() || created.Before(f.OlderThan))
}

// Scope names the flush scope of a filter's namespace conditions: the
// namespace prefix, then the segments sorted ("" is the global scope).
func (f CacheFilter) Scope() string {
	segs := append([]string(nil), f.Segments...)
	sort.Strings(segs)
	s := f.NamespacePrefix
	for _, g := range segs {
		s += "[" + g + "]"
	}
	return s
}

// Invalidate removes the entries f selects, or with dryRun only counts
// them. It returns the entries and namespaces matched.
func (c *Cache) Invalidate(f CacheFilter, dryRun bool) (entries, namespaces int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, n := range c.nss {
		if !f.Namespace(name) {
			continue
		}
		hit := 0
		for el := n.lru.Front(); el != nil; el = el.Next() {
			e := el.Value.(*entry)
			if f.Selects(name, e.key, e.created) {
				hit++
			}
		}
		if hit > 0 {
			entries += hit
			namespaces++
		}
	}
	if !dryRun {
		c.removeSelected(f)
		c.counts.Invalidated += uint64(entries)
	}
	return entries, namespaces
}

// removeSelected removes the entries f selects (c.mu held).
func (c *Cache) removeSelected(f CacheFilter) (removed int) {
	for name, n := range c.nss {
		if !f.Namespace(name) {
			continue
		}
		for el := n.lru.Front(); el != nil; {
			next := el.Next()
			e := el.Value.(*entry)
			if f.Selects(name, e.key, e.created) {
				c.remove(n, el)
				removed++
			}
			el = next
		}
	}
	return removed
}

// Times are when the entry under key in ns was stored and when it expires;
// ok is false when there is none.
func (c *Cache) Times(ns, key string) (created, expires time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nss[ns]; n != nil {
		if el, found := n.keys[key]; found {
			e := el.Value.(*entry)
			return e.created, e.expires, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// Delete removes the entry under key in ns, if any (counted nowhere).
func (c *Cache) Delete(ns, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nss[ns]; n != nil {
		if el, found := n.keys[key]; found {
			c.remove(n, el)
		}
	}
}
