package redisstore_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/ratelimit/redisstore"
	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
)

func TestConcurrentTakesAdmitExactlyTheLimit(t *testing.T) {
	testConcurrentTakesAdmitExactlyTheLimit(t, redistest.New(t))
}

func testConcurrentTakesAdmitExactlyTheLimit(t *testing.T, c *redisstate.Client) {
	s := redisstore.New(c, false)
	b := ratelimit.Bucket{ID: "key=a", Capacity: 20, Window: time.Hour}
	now := time.Now()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lv := make([]ratelimit.Level, 1)
			ok, err := s.Take(context.Background(), now, []ratelimit.Take{{Bucket: b, N: 1}}, lv)
			if err != nil {
				t.Error(err)
			}
			if ok {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 20 {
		t.Fatalf("admitted %d of 50 against a limit of 20", n)
	}
}

func TestAllOrNoneAndRefill(t *testing.T) { testAllOrNoneAndRefill(t, redistest.New(t)) }

func testAllOrNoneAndRefill(t *testing.T, c *redisstate.Client) {
	s := redisstore.New(c, false)
	small := ratelimit.Bucket{ID: "small", Capacity: 2, Window: time.Second}
	big := ratelimit.Bucket{ID: "big", Capacity: 100, Window: time.Second}
	now := time.Unix(1000, 0)
	lv := make([]ratelimit.Level, 2)
	take := func(at time.Time) bool {
		ok, err := s.Take(context.Background(), at, []ratelimit.Take{{Bucket: big, N: 1}, {Bucket: small, N: 1}}, lv)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	first, second, third := take(now), take(now), take(now)
	if !first || !second || third {
		t.Fatalf("takes admitted %v, %v, %v; want two admitted, the third refused", first, second, third)
	}
	if lv[0].Remaining != 98 || lv[1].Remaining != 0 || lv[1].Wait <= 0 {
		t.Fatalf("a refused take took from the other bucket, or levels are off: %+v", lv)
	}
	if !take(now.Add(time.Second)) {
		t.Fatal("the bucket did not refill over its window")
	}
	if err := s.Adjust(context.Background(), now.Add(time.Second), small, 5); err != nil {
		t.Fatal(err)
	}
	if take(now.Add(time.Second)) {
		t.Fatal("an adjustment below zero did not refuse the next take")
	}
}

func TestRedisDownFailsOpenOrClosed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := redisstate.New(redisstate.Config{Address: addr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := ratelimit.Bucket{ID: "x", Capacity: 1, Window: time.Second}
	lv := make([]ratelimit.Level, 1)
	for _, open := range []bool{true, false} {
		start := time.Now()
		ok, err := redisstore.New(c, open).Take(context.Background(), time.Now(), []ratelimit.Take{{Bucket: b, N: 1}}, lv)
		if err != nil || ok != open {
			t.Fatalf("fail open %v: admitted %v, %v", open, ok, err)
		}
		// A refused connection answers at once: the take must not wait
		// out dial retries (go-redis's default took 0.4 s here).
		if d := time.Since(start); d > 200*time.Millisecond {
			t.Fatalf("a take with Redis down took %v", d)
		}
	}
	if n := c.Errors("rate_limit", "take"); n != 2 {
		t.Fatalf("errors counted: %v", n)
	}
}

// BenchmarkTake is the added latency of one rate-limit take (two buckets)
// against Redis over loopback: single on a redis-server, cluster on a
// three-node Redis Cluster, both its own, without persistence.
func BenchmarkTake(b *testing.B) {
	b.Run("single", func(b *testing.B) { benchTake(b, redistest.StartVolatileServer(b).Client(b)) })
	b.Run("cluster", func(b *testing.B) { benchTake(b, redistest.StartCluster(b, 3).Client(b)) })
}

func benchTake(b *testing.B, c *redisstate.Client) {
	s := redisstore.New(c, true)
	takes := []ratelimit.Take{
		{Bucket: ratelimit.Bucket{ID: "key=k", Capacity: 1 << 40, Window: time.Minute}, N: 1},
		{Bucket: ratelimit.Bucket{ID: "model=m", Capacity: 1 << 40, Window: time.Minute}, N: 1},
	}
	lv := make([]ratelimit.Level, 2)
	ctx := context.Background()
	for b.Loop() {
		if ok, err := s.Take(ctx, time.Now(), takes, lv); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// TestBucketLivesUntilFull: a bucket's key expires a second after the
// bucket would be full again, and a refused take writes nothing (the key's
// TTL runs on from the last admitted take).
func TestBucketLivesUntilFull(t *testing.T) {
	c := redistest.New(t)
	s := redisstore.New(c, false)
	b := ratelimit.Bucket{ID: "ttl", Capacity: 20, Window: 10 * time.Second}
	lv := make([]ratelimit.Level, 1)
	now := time.Now()
	ctx := context.Background()
	if ok, _ := s.Take(ctx, now, []ratelimit.Take{{Bucket: b, N: 10}}, lv); !ok || lv[0].Remaining != 10 {
		t.Fatalf("take of 10 from 20: admitted %v, %+v", ok, lv[0])
	}
	keys, err := c.Keys(ctx, c.Prefix+"*ttl").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the bucket's keys: %v, %v", keys, err)
	}
	// Half empty over a 10 s window: full in 5 s, the key lives 6 s.
	if ttl := c.PTTL(ctx, keys[0]).Val(); ttl < 5500*time.Millisecond || ttl > 6*time.Second {
		t.Fatalf("the bucket's TTL is %v, want 6 s (full in 5 s, and a second)", ttl)
	}
	before := c.Get(ctx, keys[0]).Val()
	if ok, _ := s.Take(ctx, now, []ratelimit.Take{{Bucket: b, N: 11}}, lv); ok || lv[0].Remaining != 10 {
		t.Fatalf("take of 11 from 10: admitted %v, %+v", ok, lv[0])
	}
	if after := c.Get(ctx, keys[0]).Val(); after != before {
		t.Fatal("a refused take rewrote the bucket")
	}
}

// TestClockBehindDoesNotRefillTwice: a take from a replica whose clock is
// behind the bucket's time takes at the bucket's time, so a later take does
// not refill the interval between the two clocks a second time.
func TestClockBehindDoesNotRefillTwice(t *testing.T) {
	s := redisstore.New(redistest.New(t), false)
	b := ratelimit.Bucket{ID: "skew", Capacity: 10, Window: 10 * time.Second} // 1 a second
	lv := make([]ratelimit.Level, 1)
	ctx := context.Background()
	at := time.Unix(2000, 0)
	take := func(now time.Time, n int64) bool {
		ok, err := s.Take(ctx, now, []ratelimit.Take{{Bucket: b, N: n}}, lv)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !take(at, 10) {
		t.Fatal("the first take of a full bucket was refused")
	}
	if take(at.Add(-5*time.Second), 1) {
		t.Fatal("an empty bucket admitted a take from a clock 5 s behind")
	}
	if err := s.Adjust(ctx, at.Add(-5*time.Second), b, -1); err != nil { // a refund from the clock behind
		t.Fatal(err)
	}
	// One second after the bucket's time: 1 refilled, 1 refunded.
	if take(at.Add(time.Second), 3) || lv[0].Remaining != 2 {
		t.Fatalf("a second later: %+v, want 2 left (one refilled, one refunded), not the 5 s between the clocks again", lv[0])
	}
}

// TestOldLayoutIgnored: a bucket of the earlier layout (a hash at rl:<id>,
// what a replica not yet upgraded keeps) is neither read nor overwritten.
func TestOldLayoutIgnored(t *testing.T) {
	c := redistest.New(t)
	ctx := context.Background()
	old := c.Group("rl") + ":old"
	if err := c.HSet(ctx, old, "l", "0", "t", "1").Err(); err != nil {
		t.Fatal(err)
	}
	lv := make([]ratelimit.Level, 1)
	b := ratelimit.Bucket{ID: "old", Capacity: 5, Window: time.Minute}
	if ok, err := redisstore.New(c, false).Take(ctx, time.Now(), []ratelimit.Take{{Bucket: b, N: 1}}, lv); !ok || err != nil || lv[0].Remaining != 4 {
		t.Fatalf("take beside an old-layout bucket: %v %v %+v, want admitted from a new full bucket", ok, err, lv[0])
	}
	if h := c.HGetAll(ctx, old).Val(); h["l"] != "0" || h["t"] != "1" {
		t.Fatalf("the old-layout bucket changed: %v", h)
	}
}

// TestScriptLostRunsAgain: a Redis that lost the script (SCRIPT FLUSH, a
// restart) runs it from its source, alone (Take, Adjust) and carried in a
// lookup's pipeline (Defer), with more buckets than a call holds inline,
// and counts as it would have: no take fails, none is counted twice.
func TestScriptLostRunsAgain(t *testing.T) {
	c := redistest.StartVolatileServer(t).Client(t)
	s := redisstore.New(c, false)
	ctx := context.Background()
	now := time.Now()
	var takes []ratelimit.Take
	for _, id := range []string{"a", "b", "c"} {
		takes = append(takes, ratelimit.Take{Bucket: ratelimit.Bucket{ID: id, Capacity: 10, Window: time.Hour}, N: 1})
	}
	lv := make([]ratelimit.Level, len(takes))
	flush := func() {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	if ok, _ := s.Take(ctx, now, takes, lv); !ok || lv[2].Remaining != 9 {
		t.Fatalf("take after a flush: admitted %v, %+v", ok, lv)
	}
	flush()
	if err := s.Adjust(ctx, now, takes[1].Bucket, 4); err != nil {
		t.Fatal(err)
	}
	flush()
	dctx, send := s.Defer(ctx, now, takes, lv)
	pass, err := redisstate.DeferredFrom(dctx).Pipelined(dctx, c, time.Second, func(p redis.Pipeliner) { p.Get(dctx, c.Prefix+"absent") })
	if !pass || err == nil { // err: the GET's redis.Nil
		t.Fatalf("carried take after a flush: pass %v, err %v", pass, err)
	}
	if ok, err := send.Send(); !ok || err != nil {
		t.Fatalf("the carried take's verdict: %v, %v", ok, err)
	}
	if got := []int64{lv[0].Remaining, lv[1].Remaining, lv[2].Remaining}; !slices.Equal(got, []int64{8, 4, 8}) {
		t.Fatalf("levels after two takes and an adjust of 4 on b: %v, want [8 4 8]", got)
	}
	if n := c.Errors("rate_limit", "take"); n != 0 {
		t.Fatalf("errors counted: %v", n)
	}
}
