package junction

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/ratelimit/redisstore"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/recipes"
)

func stateDoc(t *testing.T, state string) *recipes.Document {
	t.Helper()
	doc, err := recipes.Parse([]byte(`{version: v1, global: {state: ` + state + `},
		providers: {defaults: {default_model: m}, models: [{name: m, backend_refs: [{provider: demo}]}]}, recipes: [{name: default}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// Two replicas configured with global.state redis count against the same buckets: 40 concurrent takes split
// between them against a limit of 15 admit exactly 15.
func TestRateLimitsSharedThroughRedis(t *testing.T) {
	prefix := redistest.New(t).Prefix // skips without a Redis (fails under CI); deletes the prefix's keys after
	doc := stateDoc(t, `{backend: redis, redis: {address: "`+redistest.TestAddress+`", key_prefix: "`+prefix+`"}}`)
	log := slog.New(slog.DiscardHandler)
	var replicas []ratelimit.Store
	for range 2 {
		shared, err := openSharedState(context.Background(), doc, prometheus.NewRegistry(), log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(shared.close)
		s := shared.rateLimits()
		if _, ok := s.(*redisstore.Store); !ok {
			t.Fatalf("global.state redis gave a %T, want *redisstore.Store", s)
		}
		replicas = append(replicas, s)
	}
	b := ratelimit.Bucket{ID: "api_key=k", Capacity: 15, Window: time.Hour}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lv := make([]ratelimit.Level, 1)
			ok, err := replicas[i%2].Take(context.Background(), time.Now(), []ratelimit.Take{{Bucket: b, N: 1}}, lv)
			if err != nil {
				t.Error(err)
			}
			if ok {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 15 {
		t.Fatalf("two replicas admitted %d of 40 against a shared limit of 15", n)
	}
}

// Without global.state (or with memory) the limiter keeps its own in-process store; a Redis that does not answer
// at start is not fatal, and fail_closed decides what a take does while it is away.
func TestRateLimitStoreBackends(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, state := range []string{`{}`, `{backend: memory}`, `{backend: embedded}`} {
		shared, err := openSharedState(context.Background(), stateDoc(t, state), prometheus.NewRegistry(), log)
		if err != nil || shared != nil || shared.rateLimits() != nil {
			t.Fatalf("global.state %s: shared state %v, err %v; want the limiter's own store", state, shared, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	b := ratelimit.Bucket{ID: "user=u", Capacity: 5, Window: time.Minute}
	for _, tt := range []struct {
		failClosed string
		admit      bool
	}{{"false", true}, {"true", false}} {
		reg := prometheus.NewRegistry()
		shared, err := openSharedState(context.Background(), stateDoc(t, `{backend: redis, redis: {address: "`+closed+`", fail_closed: `+tt.failClosed+`}}`), reg, log)
		if err != nil {
			t.Fatalf("a Redis that does not answer at start: %v, want a warning and a store that degrades", err)
		}
		ok, err := shared.rateLimits().Take(context.Background(), time.Now(), []ratelimit.Take{{Bucket: b, N: 1}}, make([]ratelimit.Level, 1))
		shared.close()
		if err != nil || ok != tt.admit {
			t.Fatalf("fail_closed %s with Redis down: admitted %v (err %v), want %v", tt.failClosed, ok, err, tt.admit)
		}
		mfs, _ := reg.Gather()
		if len(mfs) == 0 || mfs[0].GetName() != "junction_state_errors_total" {
			t.Fatalf("junction_state_errors_total is not registered with serve's registry: %v", mfs)
		}
	}
	if _, err := openSharedState(context.Background(), stateDoc(t, `{backend: redis, redis: {address: "h:1", password_env: JUNCTION_TEST_UNSET_REDIS_PW}}`), prometheus.NewRegistry(), log); err == nil {
		t.Fatal("password_env naming an unset variable: no error")
	}
}
