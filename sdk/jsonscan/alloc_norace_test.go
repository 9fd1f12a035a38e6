//go:build !race

// The race detector's instrumentation allocates on its own, so allocation
// counts are checked only without it.

package jsonscan

import "testing"

func TestMembersAllocs(t *testing.T) {
	msg := []byte(`{"role":"system","content":"You are helpful."}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = Members(msg) }); n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}
