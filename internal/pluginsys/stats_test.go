package pluginsys_test

import (
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/pluginsys"
)

func TestStats(t *testing.T) {
	since := time.Unix(1_800_000_000, 0)
	s := pluginsys.NewStats(since)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Record([]plugin.Report{
				{Type: "context_compression", Status: plugin.StatusApplied, Module: &plugin.ModuleReport{Values: map[string]string{"tokens_before": "100", "tokens_after": "40", "note": "x"}}},
				{Type: "system_prompt", Status: plugin.StatusApplied},
			})
			s.Record([]plugin.Report{{Type: "context_compression", Status: plugin.StatusSkipped, Module: &plugin.ModuleReport{Values: map[string]string{"tokens_before": "10", "tokens_after": "10"}}}})
		}()
	}
	wg.Wait()
	cc, got := s.Type("context_compression")
	if !got.Equal(since) || cc.Runs != 8 || cc.ByStatus[plugin.StatusApplied] != 4 || cc.ByStatus[plugin.StatusSkipped] != 4 {
		t.Fatalf("counts %+v since %v", cc, got)
	}
	if cc.Sums["tokens_before"] != 440 || cc.Sums["tokens_after"] != 200 || len(cc.Sums) != 2 {
		t.Fatalf("sums %v (a value that is not a number is not summed)", cc.Sums)
	}
	cc.ByStatus["applied"] = 0 // a copy
	if again, _ := s.Type("context_compression"); again.ByStatus[plugin.StatusApplied] != 4 {
		t.Fatal("Type returned the live map")
	}
	if none, _ := s.Type("rag"); none.Runs != 0 || none.ByStatus == nil {
		t.Fatalf("a type that never ran: %+v", none)
	}
	var nilStats *pluginsys.Stats
	nilStats.Record([]plugin.Report{{Type: "x"}}) // no statistics kept: nothing to do
}
