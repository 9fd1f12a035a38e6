//go:build !race

// The race detector's instrumentation allocates on its own, so allocation
// counts are checked only without it.

package abi_test

import (
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
)

func TestAppendJSONStringAllocs(t *testing.T) {
	s := "You are helpful.\n\nAnswer \"briefly\"."
	if n := testing.AllocsPerRun(100, func() { _ = abi.AppendJSONString(nil, s) }); n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}
