//go:build linux && !nolingua

package langid

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// releaseEmbedded gives back the resident pages of an embedded model file
// once the cold build has read it. lingua's archives are part of the
// binary's read-only image: reading ten languages' archives (20 MB) maps
// about 50 MB of it (the kernel maps the pages around each one touched),
// which counts in the process's RSS and its peak until the kernel reclaims
// them, though no detection reads them again (the tables hold everything).
// MADV_DONTNEED on a private mapping that was never written drops the pages
// from the process; should they be read again they are faulted back in from
// the file, unchanged. Only pages wholly inside data are dropped, and only
// when data lies in a read-only mapping of a file, so that nothing the
// process wrote can be lost.
func releaseEmbedded(data string) {
	if len(data) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.StringData(data)))
	skip := (page - start%page) % page
	n := (uintptr(len(data)) - min(skip, uintptr(len(data)))) &^ (page - 1)
	if n == 0 || !inReadOnlyFileMapping(start, start+uintptr(len(data))) {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(data)), skip)), n)
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED) // advice: nothing to do if refused
}

var readOnlyMappings = sync.OnceValue(func() [][2]uintptr {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1][0] != 'r' || fields[1][1] != '-' || fields[4] == "0" {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			out = append(out, [2]uintptr{uintptr(a), uintptr(b)})
		}
	}
	return out
})

// inReadOnlyFileMapping reports whether [lo, hi) lies in one read-only
// (not writable) mapping of a file, as the process mapped it at start-up.
func inReadOnlyFileMapping(lo, hi uintptr) bool {
	for _, m := range readOnlyMappings() {
		if lo >= m[0] && hi <= m[1] {
			return true
		}
	}
	return false
}
