// Package ratelimit admits requests against the configuration's
// global.rate_limits: requests and tokens per key (API key, user, model,
// decision or a header) and window, as token buckets that refill evenly over
// the window. The counters live behind Store: Local keeps them in this
// process, exact under concurrency (a request takes from every bucket it
// counts against, all or none, under one lock); a shared store (Redis, for
// several replicas) implements the same interface. Limiter turns a
// configuration and a request into bucket takes, the answer headers of the
// tightest limit and the 429 refusal, and settles tokens from usage.
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"
)

// Bucket names one counter: its identity (limit, dimension and key value)
// and its size. Capacity units are available per Window, refilled evenly.
type Bucket struct {
	ID       string
	Capacity int64
	Window   time.Duration
}

// Take asks N units of a bucket.
type Take struct {
	Bucket Bucket
	N      int64
}

// Level is a bucket's state after a take (before it, when refused).
type Level struct {
	// Remaining is the whole units left.
	Remaining int64
	// Full is when the bucket will be full again if nothing more is taken.
	Full time.Time
	// Wait is how long until N units are there (0 when they are); a take
	// larger than the capacity waits a whole window and is never admitted.
	Wait time.Duration
}

// Store keeps the buckets. Implementations are safe for concurrent use.
type Store interface {
	// Take takes each take's N units at now, all of them or, when one
	// bucket lacks them, none; it fills levels (len(takes)) either way.
	Take(ctx context.Context, now time.Time, takes []Take, levels []Level) (bool, error)
	// Adjust takes n more units (n > 0) or gives -n back (n < 0) without
	// refusing: a bucket may go below zero, which later takes wait out.
	// It settles an estimate once the real cost is known.
	Adjust(ctx context.Context, now time.Time, b Bucket, n int64) error
}

// Local is the in-process Store.
type Local struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	takes   int // since the last sweep
}

type bucket struct {
	level float64 // units available (may be negative after Adjust)
	at    time.Time
	rate  float64 // units per nanosecond, as last taken
	max   float64 // capacity, as last taken
}

// sweepEvery is how many takes pass between sweeps of full buckets, which
// bounds memory by the keys seen within a window.
const sweepEvery = 4096

// NewLocal returns an empty in-process store.
func NewLocal() *Local { return &Local{buckets: map[string]*bucket{}} }

// refill brings b to now for a bucket of the given size and returns it.
func (l *Local) refill(now time.Time, k Bucket) *bucket {
	b := l.buckets[k.ID]
	capacity := float64(k.Capacity)
	if b == nil {
		b = &bucket{level: capacity, at: now}
		l.buckets[k.ID] = b
	}
	b.rate, b.max = capacity/float64(k.Window), capacity
	if dt := now.Sub(b.at); dt > 0 {
		b.level += b.rate * float64(dt)
		b.at = now
	}
	if b.level > capacity { // full, or the limit was lowered
		b.level = capacity
	}
	return b
}

func level(now time.Time, k Bucket, b *bucket, n int64) Level {
	capacity, rate := float64(k.Capacity), float64(k.Capacity)/float64(k.Window)
	lv := Level{Remaining: int64(math.Floor(math.Max(b.level, 0)))}
	lv.Full = now.Add(time.Duration(math.Ceil((capacity - b.level) / rate)))
	switch missing := float64(n) - b.level; {
	case n > k.Capacity:
		lv.Wait = k.Window
	case missing > 0:
		lv.Wait = time.Duration(math.Ceil(missing / rate))
	}
	return lv
}

// Take implements Store.
func (l *Local) Take(_ context.Context, now time.Time, takes []Take, levels []Level) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.takes++
	if l.takes >= sweepEvery {
		l.takes = 0
		l.sweep(now)
	}
	ok := true
	for i, t := range takes {
		b := l.refill(now, t.Bucket)
		if t.N > t.Bucket.Capacity || b.level < float64(t.N) {
			ok = false
		}
		levels[i] = level(now, t.Bucket, b, t.N)
	}
	if !ok {
		return false, nil
	}
	for i, t := range takes {
		b := l.buckets[t.Bucket.ID]
		b.level -= float64(t.N)
		levels[i] = level(now, t.Bucket, b, 0)
	}
	return true, nil
}

// Adjust implements Store.
func (l *Local) Adjust(_ context.Context, now time.Time, k Bucket, n int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now, k).level -= float64(n)
	return nil
}

// sweep forgets the buckets that have refilled completely: a new bucket
// starts full, so forgetting them changes nothing, and memory stays bounded
// by the keys seen within a window.
func (l *Local) sweep(now time.Time) {
	for id, b := range l.buckets {
		if b.level+b.rate*float64(now.Sub(b.at)) >= b.max {
			delete(l.buckets, id)
		}
	}
}

// Len is the number of buckets held (for tests and metrics).
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
