package redisresponses_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/redisresponses"
	"github.com/junction-router/junction/internal/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.RunResponses(t, func(t *testing.T) storage.Responses {
		return redisresponses.New(redistest.New(t), redisresponses.Options{})
	})
}

// TestBounds: past MaxEntries the least recently used go (on every replica:
// the bound is the shared store's); a response over MaxBytes is refused.
func TestBounds(t *testing.T) { testBounds(t, redistest.New(t)) }

func testBounds(t *testing.T, c *redisstate.Client) {
	ctx := context.Background()
	a := redisresponses.New(c, redisresponses.Options{MaxEntries: 2, MaxBytes: 100})
	b := redisresponses.New(c, redisresponses.Options{MaxEntries: 2, MaxBytes: 100})
	for i, id := range []string{"a", "b", "c"} {
		s := a
		if i%2 == 1 {
			s = b
		}
		if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, Response: make([]byte, 10)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // distinct last-use scores
	}
	if _, err := b.GetResponse(ctx, "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("oldest past MaxEntries: %v, want ErrNotFound", err)
	}
	if n, err := a.Len(ctx); err != nil || n != 2 {
		t.Fatalf("Len = %d (%v), want 2", n, err)
	}
	if err := a.PutResponse(ctx, storage.StoredResponse{ID: "huge", Response: make([]byte, 200)}); !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("over MaxBytes alone: %v, want ErrTooLarge", err)
	}
}

// TestConversationRenewedAcrossReplicas: turns stored through two stores
// on one Redis (two replicas) make one conversation; a turn continuing it
// keeps the earlier turns alive past their own TTL, and it expires a TTL
// after its newest turn.
func TestConversationRenewedAcrossReplicas(t *testing.T) {
	testConversationRenewedAcrossReplicas(t, redistest.New(t))
}

func testConversationRenewedAcrossReplicas(t *testing.T, c *redisstate.Client) {
	ctx := context.Background()
	const ttl = 400 * time.Millisecond
	replicas := []*redisresponses.Store{redisresponses.New(c, redisresponses.Options{TTL: ttl}), redisresponses.New(c, redisresponses.Options{TTL: ttl})}
	prev := ""
	for i, id := range []string{"resp_0", "resp_1", "resp_2"} {
		if err := replicas[i%2].PutResponse(ctx, storage.StoredResponse{ID: id, PreviousID: prev, Response: []byte(`{}`), Input: []byte(`["` + id + `"]`)}); err != nil {
			t.Fatal(err)
		}
		prev = id
		time.Sleep(ttl * 6 / 10) // past the renewal window: the next turn renews every earlier one
	}
	// resp_0 was stored 1.2 TTLs ago: alive only because the later turns renewed it.
	chain, err := storage.Chain(ctx, replicas[1], "resp_2", 0)
	if err != nil || len(chain) != 3 || string(chain[0].Input) != `["resp_0"]` {
		t.Fatalf("the conversation read on the other replica: %d turns, %v", len(chain), err)
	}
	time.Sleep(ttl * 5 / 10) // past a TTL after resp_2
	if _, err := replicas[0].GetResponse(ctx, "resp_2"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a TTL after the newest turn: %v, want ErrNotFound", err)
	}
	if _, err := replicas[0].GetResponse(ctx, "resp_0"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the first turn a TTL after the newest: %v, want ErrNotFound", err)
	}
}

// TestRedisDown: the calls fail saying where Redis was looked for, and the
// errors metric counts them.
func TestRedisDown(t *testing.T) {
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
	s := redisresponses.New(c, redisresponses.Options{})
	ctx := context.Background()
	if err := s.PutResponse(ctx, storage.StoredResponse{ID: "r", Response: []byte(`{}`)}); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("put with Redis down: %v", err)
	}
	if _, err := s.GetResponse(ctx, "r"); err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get with Redis down: %v, want an error that is not ErrNotFound (the data plane answers 503, not 404)", err)
	}
	if _, err := storage.Chain(ctx, s, "r", 0); err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("chain with Redis down: %v", err)
	}
	if n := c.Errors(redisresponses.Feature, "put") + c.Errors(redisresponses.Feature, "get") + c.Errors(redisresponses.Feature, "chain"); n != 3 {
		t.Fatalf("junction_state_errors_total{feature=response_store}: %v, want 3", n)
	}
}
