package gateway

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the CPU time the calling thread has used (Linux's
// CLOCK_THREAD_CPUTIME_ID, nanosecond accounting), so that a benchmark on a
// goroutine locked to its thread can tell its own work from the time it
// waited for a core on a loaded machine. ok is false where the clock cannot
// be read.
func threadCPU() (time.Duration, bool) {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
