package main

import "testing"

// TestSchedtraceMS: serve reports the sysmon tuning as the runtime reads GODEBUG (the last valid schedtrace
// wins; a value that is no int32 is skipped; 0 is off).
func TestSchedtraceMS(t *testing.T) {
	for _, tc := range []struct {
		godebug string
		want    int64
	}{
		{"", 0},
		{"schedtrace=2147483647", 2147483647},
		{"http2debug=1,schedtrace=1000", 1000},
		{"schedtrace=1000,schedtrace=0", 0},
		{"schedtrace=1000,schedtrace=x", 1000},
		{"schedtrace=2147483648", 0}, // over int32: the runtime ignores it
		{"xschedtrace=5,schedtrace", 0},
	} {
		if got := schedtraceMS(tc.godebug); got != tc.want {
			t.Errorf("schedtraceMS(%q) = %d, want %d", tc.godebug, got, tc.want)
		}
	}
}
