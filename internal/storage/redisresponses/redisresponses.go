// Package redisresponses is the Responses API's response store on the Redis
// global.state names (global.services.response_api.store: redis, the
// default with global.state.backend redis): every replica reads and writes
// the same responses, so a conversation continued with
// previous_response_id works whichever replica gets the next turn.
//
// Each response is a hash (previous id, creation time, response and input
// JSON) with a Redis TTL of the store's time to live after its last use;
// a sorted set of the ids by last use bounds the store (max_entries, the
// least recently used deleted first). Storing a turn and renewing the
// conversation it continues is one Lua script (atomic, one round trip); so
// is reading a whole conversation (storage.ChainReader). A PutResponse
// that returns nil is in Redis: durable as Redis's own persistence
// (appendonly) makes it.
//
// On a Redis Cluster every key of the store is one key group
// (redisstate.Client.Group, a hash tag): the scripts follow previous ids to
// keys they compute, which a cluster allows only within the slot of the
// keys they declare. The store lives on one shard; the cluster spreads the
// response cache's entries instead.
//
// Redis down: the calls fail with an error that names it (the data plane
// answers 503, and a response it cannot keep is logged; the client has
// its answer), counted in
// junction_state_errors_total{feature="response_store"}.
package redisresponses

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/storage"
)

// Feature is the feature label of this store's errors in
// junction_state_errors_total.
const Feature = "response_store"

// Defaults of Options.
const (
	DefaultMaxEntries = 100000
	DefaultMaxBytes   = 256 << 20
	DefaultTTL        = storage.DefaultResponseTTL
)

// Options bound a Store; zero values take the defaults.
type Options struct {
	// MaxEntries bounds the responses kept (all replicas together).
	MaxEntries int
	// MaxBytes refuses a response larger than it (storage.ErrTooLarge);
	// the bytes of all responses are Redis's to bound (maxmemory).
	MaxBytes int64
	TTL      time.Duration
}

// Store is the Redis response store. Safe for concurrent use.
type Store struct {
	c     *redisstate.Client
	o     Options
	renew time.Duration // storage.RenewWithin(TTL)
	key   string        // prefix of a response's hash
	index string        // the sorted set of ids by last use
}

var (
	_ storage.Responses   = (*Store)(nil)
	_ storage.ChainReader = (*Store)(nil)
)

// New is a store on c (which it does not close).
func New(c *redisstate.Client, o Options) *Store {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	g := c.Group("resp")
	return &Store{c: c, o: o, renew: storage.RenewWithin(o.TTL), key: g + ":", index: g + "-index"}
}

// put stores a turn and renews its conversation: KEYS the index, the
// turn's key and the previous turn's (the turns before it are computed
// from the key prefix, in the same slot); ARGV the key prefix, id, previous id, created (unix ns), response, input, TTL
// (ms), renewal window (ms), now (ms, the index's score), max entries, max
// turns. A previous turn is renewed (TTL and index) unless it was used
// within the window (then so were the turns before it: renewal always
// walks back from the newest turn).
var put = redis.NewScript(`
local prefix, id, prev = ARGV[1], ARGV[2], ARGV[3]
local ttl, renew, now = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local maxn, maxturns = tonumber(ARGV[10]), tonumber(ARGV[11])
local k = KEYS[2]
redis.call("DEL", k)
redis.call("HSET", k, "p", prev, "c", ARGV[4], "r", ARGV[5], "i", ARGV[6])
redis.call("PEXPIRE", k, ttl)
redis.call("ZADD", KEYS[1], now, id)
local n = 0
while prev ~= "" and n < maxturns do
  local pk = prefix .. prev
  local left = redis.call("PTTL", pk)
  if left < 0 or left >= ttl - renew then break end
  redis.call("PEXPIRE", pk, ttl)
  redis.call("ZADD", KEYS[1], now, prev)
  prev = redis.call("HGET", pk, "p") or ""
  n = n + 1
end
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - ttl)
local over = redis.call("ZCARD", KEYS[1]) - maxn
if over > 0 then
  local gone = redis.call("ZPOPMIN", KEYS[1], over)
  for i = 1, #gone, 2 do redis.call("DEL", prefix .. gone[i]) end
end
return 1
`)

// chain reads a conversation newest first: KEYS the newest turn's key (the
// others are computed from the key prefix, in the same slot); ARGV the key
// prefix, the id and the most turns. It returns {"ok", id, previous, created, response, input,
// ...}, {"missing", id} (the first id is not stored: not found; a later
// one: the chain is broken) or {"long"}.
var chain = redis.NewScript(`
local prefix, id, maxturns = ARGV[1], ARGV[2], tonumber(ARGV[3])
local out = {"ok"}
local nxt, n = id, 0
while nxt ~= "" do
  if n == maxturns then return {"long"} end
  local h = redis.call("HMGET", prefix .. nxt, "p", "c", "r", "i")
  if not h[3] then return {"missing", nxt} end
  out[#out+1] = nxt; out[#out+1] = h[1] or ""; out[#out+1] = h[2] or "0"; out[#out+1] = h[3]; out[#out+1] = h[4] or ""
  nxt = h[1] or ""
  n = n + 1
end
return out
`)

func (s *Store) fail(op string, err error) error {
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		s.c.Failed(Feature, op, err)
	}
	return fmt.Errorf("response store on redis at %s (global.state.redis): %s: %w", s.c.Addr(), op, err)
}

// PutResponse keeps r for the TTL and renews the conversation it
// continues; a response over MaxBytes is refused (storage.ErrTooLarge).
func (s *Store) PutResponse(ctx context.Context, r storage.StoredResponse) error {
	if size := int64(r.Size()); size > s.o.MaxBytes {
		return fmt.Errorf("redisresponses: response %s is %d bytes, over the store's %d (global.services.response_api.max_bytes): %w", r.ID, size, s.o.MaxBytes, storage.ErrTooLarge)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	err := put.Run(ctx, s.c, []string{s.index, s.key + r.ID, s.key + r.PreviousID}, s.key, r.ID, r.PreviousID, r.CreatedAt.UnixNano(), r.Response, r.Input,
		s.o.TTL.Milliseconds(), s.renew.Milliseconds(), time.Now().UnixMilli(), s.o.MaxEntries, storage.MaxConversationTurns).Err()
	if err != nil {
		return s.fail("put", err)
	}
	return nil
}

// GetResponse returns the response with that id.
func (s *Store) GetResponse(ctx context.Context, id string) (storage.StoredResponse, error) {
	h, err := s.c.HMGet(ctx, s.key+id, "p", "c", "r", "i").Result()
	if err != nil {
		return storage.StoredResponse{}, s.fail("get", err)
	}
	if h[2] == nil {
		return storage.StoredResponse{}, fmt.Errorf("response %s: %w", id, storage.ErrNotFound)
	}
	return decode(id, str(h[0]), str(h[1]), str(h[2]), str(h[3])), nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func decode(id, prev, created, response, input string) storage.StoredResponse {
	ns, _ := strconv.ParseInt(created, 10, 64)
	return storage.StoredResponse{ID: id, PreviousID: prev, CreatedAt: time.Unix(0, ns), Response: []byte(response), Input: []byte(input)}
}

// DeleteResponse removes it.
func (s *Store) DeleteResponse(ctx context.Context, id string) error {
	var del *redis.IntCmd
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		del = p.Del(ctx, s.key+id)
		p.ZRem(ctx, s.index, id)
		return nil
	})
	if err != nil {
		return s.fail("delete", err)
	}
	if del.Val() == 0 {
		return fmt.Errorf("response %s: %w", id, storage.ErrNotFound)
	}
	return nil
}

// ResponseChain implements storage.ChainReader: the whole conversation in
// one round trip.
func (s *Store) ResponseChain(ctx context.Context, id string, maxTurns int) ([]storage.StoredResponse, error) {
	res, err := chain.Run(ctx, s.c, []string{s.key + id}, s.key, id, maxTurns).StringSlice()
	if err != nil {
		return nil, s.fail("chain", err)
	}
	switch {
	case len(res) == 1 && res[0] == "long":
		return nil, fmt.Errorf("response %s: %w (more than %d)", id, storage.ErrChainTooLong, maxTurns)
	case len(res) == 2 && res[0] == "missing":
		if res[1] == id {
			return nil, fmt.Errorf("response %s: %w", id, storage.ErrNotFound)
		}
		return nil, &storage.ChainBrokenError{ID: id, Missing: res[1]}
	case len(res) == 0 || res[0] != "ok" || (len(res)-1)%5 != 0:
		return nil, s.fail("chain", fmt.Errorf("unexpected script result of %d values", len(res)))
	}
	n := (len(res) - 1) / 5
	out := make([]storage.StoredResponse, n)
	for i := range n {
		f := res[1+5*i:]
		out[n-1-i] = decode(f[0], f[1], f[2], f[3], f[4]) // oldest first
	}
	return out, nil
}

// Len is the number of responses the index holds (tests).
func (s *Store) Len(ctx context.Context) (int64, error) { return s.c.ZCard(ctx, s.index).Result() }
