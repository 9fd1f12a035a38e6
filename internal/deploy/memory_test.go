package deploy

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

// cpuMS is the CPU time this process used so far (user and system, all
// threads), in milliseconds.
func cpuMS() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// rssMB is this process's resident set (VmRSS) in MB.
func rssMB(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkLoaderMemory is the attribution table of docs/benchmarks.md
// ("Memory and start-up"): what each in-process model adds to the resident
// set, and the CPU its load takes (the collection after it included), as
// serve's loader loads them one after another (one iteration; run
// with -benchtime 1x, one process per run: -count accumulates), and what is
// released and left once every lease is given back.
//
//	for i in 1 2 3; do go test -run - -bench LoaderMemory -benchtime 1x ./internal/deploy; done
func BenchmarkLoaderMemory(b *testing.B) {
	orttest.Library(b)
	ctx := context.Background()
	for range b.N {
		l, err := NewLoader(ModelsONNX, signal.Models{}, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			b.Fatal(err)
		}
		debug.FreeOSMemory()
		base := rssMB(b)
		prev := base
		var leases []*Lease
		step := func(unit string, need Need) {
			cpu := cpuMS()
			ls, err := l.Acquire(ctx, need)
			b.ReportMetric(cpuMS()-cpu, "cpu-ms-"+strings.TrimPrefix(unit, "MB-"))
			if err != nil {
				b.Fatal(err)
			}
			leases = append(leases, ls)
			debug.FreeOSMemory() // what Acquire leaves to a background collection
			now := rssMB(b)
			b.ReportMetric(now-prev, unit)
			prev = now
		}
		b.ReportMetric(base, "MB-base")
		step("MB-ort+domain", Need{Domain: true})
		step("MB-jailbreak", Need{Jailbreak: true})
		step("MB-embedder", Need{Embedder: true})
		step("MB-lingua", Need{Languages: []string{"de"}})
		leases[3].Release() // lingua
		now := rssMB(b)
		b.ReportMetric(prev-now, "MB-freed-lingua")
		prev = now
		for _, ls := range leases[:3] {
			ls.Release()
		}
		now = rssMB(b)
		b.ReportMetric(prev-now, "MB-freed-onnx")
		b.ReportMetric(now-base, "MB-left-after-release")
		l.Close()
	}
}
