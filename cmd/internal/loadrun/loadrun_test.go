package loadrun

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

func TestOpenLoopDoesNotWaitForSlowCalls(t *testing.T) {
	// 100 calls a second for 200 ms, each taking 150 ms: a closed loop would
	// manage one or two; the open loop starts all 20 on schedule.
	var started atomic.Int64
	begin := time.Now()
	s := OpenLoop(func() (time.Duration, bool) {
		k := started.Add(1)
		time.Sleep(150 * time.Millisecond)
		return 150 * time.Millisecond, k%2 == 0
	}, 100, 200*time.Millisecond)
	if len(s.Lat) != 20 || started.Load() != 20 {
		t.Fatalf("got %d samples from %d calls, want 20", len(s.Lat), started.Load())
	}
	if el := time.Since(begin); el > time.Second {
		t.Fatalf("the loop took %v: it waited for calls", el)
	}
	if s.Errors != 10 {
		t.Fatalf("errors = %d, want 10", s.Errors)
	}
	if s.P(0.5) != 150_000 {
		t.Fatalf("p50 = %v µs, want 150000", s.P(0.5))
	}
}

func TestQuantilesAndMedian(t *testing.T) {
	s := Sample{Lat: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	if s.P(0) != 1 || s.P(1) != 10 || s.P(0.5) != 5 {
		t.Fatalf("quantiles: %v %v %v", s.P(0), s.P(0.5), s.P(1))
	}
	if (Sample{}).P(0.5) != 0 || Median(nil) != 0 {
		t.Fatal("empty samples must give 0")
	}
	if m := Median([]float64{9, 1, 5}); m != 5 {
		t.Fatalf("median = %v", m)
	}
}

func TestClosedLoopCountsSuccesses(t *testing.T) {
	var n atomic.Int64
	rps := ClosedLoop(func() bool { time.Sleep(time.Millisecond); return n.Add(1)%2 == 0 }, 4, 100*time.Millisecond)
	if rps <= 0 || rps > float64(n.Load())*10 {
		t.Fatalf("rps = %v for %d calls", rps, n.Load())
	}
}

func TestFreePortAndPinned(t *testing.T) {
	p, err := FreePort()
	if err != nil || p <= 0 {
		t.Fatalf("FreePort: %d %v", p, err)
	}
	if c := Pinned(context.Background(), "", "true"); len(c.Args) != 1 {
		t.Fatalf("unpinned: %v", c.Args)
	}
	if c := Pinned(context.Background(), "0", "true", "x"); c.Args[0] != "taskset" || c.Args[2] != "0" || c.Args[4] != "x" {
		t.Fatalf("pinned: %v", c.Args)
	}
}

func TestProcCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	if ProcCPU(os.Getpid()) <= 0 {
		t.Fatal("ProcCPU of a busy process is 0")
	}
	if ProcCPU(0) != 0 {
		t.Fatal("pid 0 must give 0")
	}
}
