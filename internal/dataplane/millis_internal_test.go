package dataplane

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// TestMillisMatchesFormatFloat: millis writes what
// strconv.FormatFloat(ms, 'f', 3, 64) writes, for every residue around the
// rounding boundaries (ties included), small and large durations, the
// bounds of the integer path, and random ones.
func TestMillisMatchesFormatFloat(t *testing.T) {
	want := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	check := func(d time.Duration) {
		t.Helper()
		if got, w := millis(d), want(d); got != w {
			t.Fatalf("millis(%d) = %q, FormatFloat %q", int64(d), got, w)
		}
	}
	for d := time.Duration(-3000); d < 2_000_000; d++ {
		check(d)
	}
	for _, base := range []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour, 1<<50 - 5000, 1 << 50, 1<<62 + 12345} {
		for off := time.Duration(-2000); off <= 2000; off++ {
			check(base + off)
		}
	}
	rng := rand.New(rand.NewPCG(17, 2))
	for range 1_000_000 {
		check(time.Duration(rng.Int64N(1 << uint(1+rng.IntN(62)))))
	}
}
