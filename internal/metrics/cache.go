package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// CacheCounts are what the response cache reports at each scrape.
type CacheCounts struct {
	Entries                     int
	ExactHits, SemanticHits     uint64
	ExactMisses, SemanticMisses uint64
	// Removals by reason: capacity (the entry bound), expired, invalidated,
	// flushed.
	Evictions, Expirations, Invalidated, Flushed uint64
}

// cacheCollector emits the response-cache series from the source WatchCache
// set, read at scrape time; without a source, router_cache_size and
// router_cache_hit_ratio show what SetCache last set and the counters are
// absent.
type cacheCollector struct {
	size, ratio, hits, misses, evictions *prometheus.Desc

	mu       sync.Mutex
	read     func() CacheCounts
	entries  float64
	hitRatio float64
}

func newCacheCollector() *cacheCollector {
	return &cacheCollector{
		size:      prometheus.NewDesc("router_cache_size", "Entries held by the response cache.", nil, nil),
		ratio:     prometheus.NewDesc("router_cache_hit_ratio", "Share of response-cache lookups that hit, between 0 and 1.", nil, nil),
		hits:      prometheus.NewDesc("router_cache_hits_total", "Response-cache lookups that hit, by kind: exact (the same key) or semantic (a similar request).", []string{"kind"}, nil),
		misses:    prometheus.NewDesc("router_cache_misses_total", "Response-cache lookups that missed, by kind: exact (a lookup without an embedding) or semantic (with one).", []string{"kind"}, nil),
		evictions: prometheus.NewDesc("router_cache_evictions_total", "Response-cache entries removed, by reason: capacity (the entry bound), expired (time to live), invalidated (management invalidate), flushed (management flush).", []string{"reason"}, nil),
	}
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.size
	ch <- c.ratio
	ch <- c.hits
	ch <- c.misses
	ch <- c.evictions
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	read, entries, ratio := c.read, c.entries, c.hitRatio
	c.mu.Unlock()
	if read == nil {
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, entries)
		ch <- prometheus.MustNewConstMetric(c.ratio, prometheus.GaugeValue, ratio)
		return
	}
	k := read()
	ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(k.Entries))
	hits := k.ExactHits + k.SemanticHits
	if total := hits + k.ExactMisses + k.SemanticMisses; total > 0 {
		ratio = float64(hits) / float64(total)
	} else {
		ratio = 0
	}
	ch <- prometheus.MustNewConstMetric(c.ratio, prometheus.GaugeValue, ratio)
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(k.ExactHits), "exact")
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(k.SemanticHits), "semantic")
	ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(k.ExactMisses), "exact")
	ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(k.SemanticMisses), "semantic")
	for _, r := range []struct {
		reason string
		n      uint64
	}{{"capacity", k.Evictions}, {"expired", k.Expirations}, {"invalidated", k.Invalidated}, {"flushed", k.Flushed}} {
		ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(r.n), r.reason)
	}
}

// WatchCache makes the response-cache series read read at every scrape
// (router_cache_size, router_cache_hit_ratio, router_cache_hits_total,
// router_cache_misses_total, router_cache_evictions_total). read must be
// cheap and safe for concurrent use.
func (m *Metrics) WatchCache(read func() CacheCounts) {
	if m == nil {
		return
	}
	m.cache.mu.Lock()
	m.cache.read = read
	m.cache.mu.Unlock()
}
