package redisstore_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
