package defaultmodels

import (
	"runtime"
	"testing"
)

// allocated is the bytes f allocates (the runtime's cumulative count, which
// does not depend on the machine's load or on when the collector runs).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestWriteAllocatesLittle guards the cold start's peak: Write runs on the
// first start of every pod with an empty cache directory, beside the
// language tables' build. Building all seven graphs first and marshalling
// each file whole allocated 321 MB for 63 MB of files; one graph at a time,
// streamed from the bundle's slices, 25 MB.
func TestWriteAllocatesLittle(t *testing.T) {
	b, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var werr error
	n := allocated(func() { werr = b.Write(dir) })
	if werr != nil {
		t.Fatal(werr)
	}
	const limit = 64 << 20
	if n > limit {
		t.Errorf("Write allocated %d MB, want at most %d MB (it should not hold a model file or a graph's copy of the weights)", n>>20, limit>>20)
	}
}
