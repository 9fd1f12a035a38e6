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
	Bytes      int64            // stored values and embeddings
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
	st := CacheStats{Counts: c.counts, Epochs: make(map[string]uint64, len(c.epochs))}
	for k, v := range c.epochs {
		st.Epochs[k] = v
	}
	for name, n := range c.nss {
		if n.lru.Len() == 0 {
			continue
		}
		st.Namespaces++
		st.Entries += n.lru.Len()
		for el := n.lru.Front(); el != nil; el = el.Next() {
			e := el.Value.(*entry)
			st.Bytes += int64(len(e.key) + len(e.value) + 4*len(e.embedding))
		}
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

// Flush advances the epoch of scope (a namespace prefix; "" is the global
// scope) and removes every entry of the namespaces it covers, so no entry
// stored before the flush answers again. It returns the scope's new epoch
// and how many entries went.
func (c *Cache) Flush(scope string) (epoch uint64, removed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epochs == nil {
		c.epochs = make(map[string]uint64)
	}
	c.epochs[scope]++
	for name, n := range c.nss {
		if strings.HasPrefix(name, scope) {
			removed += n.lru.Len()
			delete(c.nss, name)
		}
	}
	c.counts.Flushed += uint64(removed)
	return c.epochs[scope], removed
}

// Epoch is the number of flushes of scope so far.
func (c *Cache) Epoch(scope string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epochs[scope]
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

func (f CacheFilter) namespace(name string) bool {
	if !strings.HasPrefix(name, f.NamespacePrefix) {
		return false
	}
	for _, s := range f.Segments {
		if !strings.Contains(name+"/", "/"+s+"/") {
			return false
		}
	}
	return true
}

// Invalidate removes the entries f selects, or with dryRun only counts
// them. It returns the entries and namespaces matched.
func (c *Cache) Invalidate(f CacheFilter, dryRun bool) (entries, namespaces int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, n := range c.nss {
		if !f.namespace(name) {
			continue
		}
		hit := 0
		for el := n.lru.Front(); el != nil; {
			next := el.Next()
			e := el.Value.(*entry)
			if strings.HasPrefix(e.key, f.KeyPrefix) && (f.OlderThan.IsZero() || e.created.Before(f.OlderThan)) {
				hit++
				if !dryRun {
					n.remove(el)
				}
			}
			el = next
		}
		if hit > 0 {
			entries += hit
			namespaces++
		}
		if n.lru.Len() == 0 && !dryRun {
			delete(c.nss, name)
		}
	}
	if !dryRun {
		c.counts.Invalidated += uint64(entries)
	}
	return entries, namespaces
}
