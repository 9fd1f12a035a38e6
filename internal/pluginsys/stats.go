package pluginsys

import (
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/plugin"
)

// Stats counts the outcomes of the plugins run on live traffic, by plugin
// type: runs, runs by status, and the sums of the numeric values of their
// reports (a context_compression run reports tokens_before, tokens_after,
// …). The serve-side plugin system records every live request phase into
// one; the management API reads it. It holds counts only, never
// request text. Safe for concurrent use.
type Stats struct {
	since  time.Time
	mu     sync.Mutex
	byType map[string]*mgmt.PluginRunStats
}

// NewStats returns empty statistics that began at now.
func NewStats(now time.Time) *Stats {
	return &Stats{since: now, byType: map[string]*mgmt.PluginRunStats{}}
}

// Record counts reports (one request's or response phase's).
func (s *Stats) Record(reports []plugin.Report) {
	if s == nil || len(reports) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range reports {
		t := s.byType[r.Type]
		if t == nil {
			t = &mgmt.PluginRunStats{ByStatus: map[string]int64{}, Sums: map[string]float64{}}
			s.byType[r.Type] = t
		}
		t.Runs++
		t.ByStatus[r.Status]++
		if r.Module == nil {
			continue
		}
		for k, v := range r.Module.Values {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				t.Sums[k] += f
			}
		}
	}
}

// Type returns a copy of typ's counts (zero when it never ran) and when
// counting began.
func (s *Stats) Type(typ string) (mgmt.PluginRunStats, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.byType[typ]
	if t == nil {
		return mgmt.PluginRunStats{ByStatus: map[string]int64{}, Sums: map[string]float64{}}, s.since
	}
	return mgmt.PluginRunStats{Runs: t.Runs, ByStatus: maps.Clone(t.ByStatus), Sums: maps.Clone(t.Sums)}, s.since
}
