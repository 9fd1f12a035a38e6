package pluginsys

import "github.com/junction-router/junction/internal/metrics"

// WatchMetrics makes m's response-cache series (router_cache_size,
// router_cache_hit_ratio and the hit, miss and eviction counters) read the
// plugins' response cache at every scrape.
func (p *System) WatchMetrics(m *metrics.Metrics) {
	c := p.cache
	m.WatchCache(func() metrics.CacheCounts {
		k, n := c.Counts()
		return metrics.CacheCounts{Entries: n, ExactHits: k.ExactHits, SemanticHits: k.SemanticHits,
			ExactMisses: k.ExactMisses, SemanticMisses: k.SemanticMisses, Evictions: k.Evictions,
			Expirations: k.Expirations, Invalidated: k.Invalidated, Flushed: k.Flushed}
	})
}
