// Package loadrun is what Junction's load tools (cmd/junction-bench,
// cmd/junction-extproc-bench) share: an open-loop sender that cannot be slowed
// by the server it measures, a closed loop for throughput, latency samples
// with percentiles and medians, and starting the servers under test pinned to
// CPUs. It is developer tooling; the shipped binary does not import it.
package loadrun

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Sample is one round of an open loop.
type Sample struct {
	Lat     []float64 // latencies in µs, sorted
	Errors  int       // calls that reported failure
	LateP99 float64   // µs the sender started a call after its scheduled time, 99th percentile
}

// P is the q-quantile (0 ≤ q ≤ 1) of the latencies, 0 when there are none.
func (s Sample) P(q float64) float64 { return quantile(s.Lat, q) }

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// OpenLoop starts f at a fixed rate for dur, each call on its own goroutine,
// whether or not earlier calls have returned, so a stalled server cannot slow
// the sender or hide its queueing (no coordinated omission). f returns the
// latency to record — measured from when it actually started, because Go's
// timers wake up to a millisecond late and that pacing delay is the tool's,
// not the server's; the delay is reported apart as LateP99.
func OpenLoop(f func() (time.Duration, bool), rate int, dur time.Duration) Sample {
	n := int(float64(rate) * dur.Seconds())
	interval := time.Second / time.Duration(rate)
	lat := make([]float64, n)
	late := make([]float64, n)
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			late[i] = float64(time.Since(due).Microseconds())
			d, ok := f()
			if !ok {
				errs.Add(1)
			}
			lat[i] = float64(d.Nanoseconds()) / 1e3
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	slices.Sort(late)
	return Sample{Lat: lat, Errors: int(errs.Load()), LateP99: quantile(late, 0.99)}
}

// Timed wraps a call so OpenLoop records its wall time.
func Timed(call func() bool) func() (time.Duration, bool) {
	return func() (time.Duration, bool) {
		start := time.Now()
		ok := call()
		return time.Since(start), ok
	}
}

// ClosedLoop runs conc clients that call f back to back for dur and returns
// the successful calls per second.
func ClosedLoop(f func() bool, conc int, dur time.Duration) float64 {
	var done atomic.Int64
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if f() {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / dur.Seconds()
}

// Median is the median of v (the upper one for an even count), 0 for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// FreePort is a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Pinned is the command that runs name with args, on the CPUs of the taskset
// list cpus (e.g. "0,1") when it is not empty. The Go runtime of the started
// process sizes GOMAXPROCS to its affinity mask, so it follows.
func Pinned(ctx context.Context, cpus, name string, args ...string) *exec.Cmd {
	if cpus == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "taskset", append([]string{"-c", cpus, name}, args...)...)
}

// ProcCPU is a process's user+system CPU time so far, read from /proc; 0 where
// /proc cannot tell (another OS, an ended process, pid 0).
func ProcCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces): utime is the
	// 14th field, stime the 15th, in clock ticks (100 per second on Linux).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(string(f[11]), 10, 64)
	st, _ := strconv.ParseInt(string(f[12]), 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}
