//go:build !linux

package gateway

import "time"

// threadCPU: no per-thread CPU clock here; the benchmarks report wall time
// alone.
func threadCPU() (time.Duration, bool) { return 0, false }
