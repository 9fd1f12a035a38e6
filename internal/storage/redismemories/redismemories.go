// Package redismemories keeps the memory plugin's memories (storage.Memories)
// in the Redis global.state names, so that what a user told one replica is
// recalled on every other: with global.state.backend redis and stored data
// in the data directory (global.storage.backend embedded; with postgres the
// memories are PostgreSQL's, which every replica shares already).
//
// A memory is a hash (scope, text, embedding model and vector, creation
// time, its sequence number); each scope has a sorted set of its ids by
// sequence (what Recall scans and ListMemories pages) and a hash from the
// normalised text's digest to the id (deduplication), and one sorted set
// lists every memory. Remember, DeleteMemory and DeleteScope are each one
// Lua script, so two replicas remembering the same text keep one memory.
// Memories have no TTL: they stay until deleted, as in the other backends
// (Redis's persistence decides whether they survive a Redis restart).
//
// On a Redis Cluster every key of the store is one key group
// (redisstate.Client.Group, a hash tag): the scripts declare the keys they
// know in advance and compute the memories' keys from the prefix, which a
// cluster allows within the declared keys' slot. The memories live on one
// shard.
package redismemories

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

// Feature is the feature label of this store's errors in
// junction_state_errors_total.
const Feature = "memories"

// Store is the Redis memories store. Safe for concurrent use.
type Store struct {
	c *redisstate.Client
	p string // key prefix
}

var _ storage.Memories = (*Store)(nil)

// New is a store on c (which it does not close).
func New(c *redisstate.Client) *Store { return &Store{c: c, p: c.Group("mem") + ":"} }

// remember: KEYS the scope's dedup hash, the sequence, the new memory's
// hash, the scope's set and the set of all (an existing memory's key is
// computed); ARGV prefix, scope, text digest, new id, text, model, vector,
// created (unix ns). It returns {0, id} when the scope holds the text
// already, {1, id} when it kept the new one.
var remember = redis.NewScript(`
local p, scope, digest, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local existing = redis.call("HGET", KEYS[1], digest)
if existing and redis.call("EXISTS", p .. "m:" .. existing) == 1 then return {0, existing} end
local seq = redis.call("INCR", KEYS[2])
redis.call("HSET", KEYS[3], "s", scope, "t", ARGV[5], "e", ARGV[6], "v", ARGV[7], "c", ARGV[8], "q", seq, "h", digest)
redis.call("HSET", KEYS[1], digest, id)
redis.call("ZADD", KEYS[4], seq, id)
redis.call("ZADD", KEYS[5], seq, id)
return {1, id}
`)

// forget: KEYS the memory's hash and the set of all (its scope's keys are
// computed from the hash); ARGV prefix, id. It returns 1, or 0 when there
// is none.
var forget = redis.NewScript(`
local p, id = ARGV[1], ARGV[2]
local h = redis.call("HMGET", KEYS[1], "s", "h")
if not h[1] then return 0 end
redis.call("DEL", KEYS[1])
redis.call("HDEL", p .. "dedup:" .. h[1], h[2])
redis.call("ZREM", p .. "scope:" .. h[1], id)
redis.call("ZREM", KEYS[2], id)
return 1
`)

// forgetScope: KEYS the scope's set, its dedup hash and the set of all
// (the memories' keys are computed); ARGV prefix. It returns how many
// went.
var forgetScope = redis.NewScript(`
local p = ARGV[1]
local ids = redis.call("ZRANGE", KEYS[1], 0, -1)
for _, id in ipairs(ids) do
  redis.call("DEL", p .. "m:" .. id)
  redis.call("ZREM", KEYS[3], id)
end
redis.call("DEL", KEYS[1], KEYS[2])
return #ids
`)

func (s *Store) fail(op string, err error) error {
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		s.c.Failed(Feature, op, err)
	}
	return fmt.Errorf("memories on redis at %s (global.state.redis): %s: %w", s.c.Addr(), op, err)
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func newID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return "mem_" + strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// Remember implements storage.Memories.
func (s *Store) Remember(ctx context.Context, m storage.Memory) (storage.Memory, bool, error) {
	if err := storage.CheckMemory(m); err != nil {
		return storage.Memory{}, false, err
	}
	kept := storage.Memory{ID: newID(), Scope: m.Scope, Text: strings.TrimSpace(m.Text), CreatedAt: time.Now().UTC(),
		EmbeddingModel: m.EmbeddingModel, Vector: append([]float32(nil), m.Vector...)}
	keys := []string{s.p + "dedup:" + kept.Scope, s.p + "seq", s.p + "m:" + kept.ID, s.p + "scope:" + kept.Scope, s.p + "all"}
	res, err := remember.Run(ctx, s.c, keys, s.p, kept.Scope, storage.MemoryHash(kept.Text), kept.ID, kept.Text, kept.EmbeddingModel,
		storage.EncodeVector(nil, kept.Vector), kept.CreatedAt.UnixNano()).Slice()
	if err != nil {
		return storage.Memory{}, false, s.fail("remember", err)
	}
	if len(res) != 2 {
		return storage.Memory{}, false, s.fail("remember", fmt.Errorf("unexpected script result %v", res))
	}
	if created, _ := res[0].(int64); created == 1 {
		return kept, true, nil
	}
	id, _ := res[1].(string)
	existing, err := s.GetMemory(ctx, id)
	return existing, false, err
}

var fields = []string{"s", "t", "e", "v", "c"}

func decode(id string, h []any) (storage.Memory, bool) {
	if len(h) != len(fields) || h[0] == nil {
		return storage.Memory{}, false
	}
	str := func(i int) string { v, _ := h[i].(string); return v }
	ns, _ := strconv.ParseInt(str(4), 10, 64)
	return storage.Memory{ID: id, Scope: str(0), Text: str(1), EmbeddingModel: str(2), Vector: storage.DecodeVector([]byte(str(3))),
		CreatedAt: time.Unix(0, ns).UTC()}, true
}

// GetMemory implements storage.Memories.
func (s *Store) GetMemory(ctx context.Context, id string) (storage.Memory, error) {
	h, err := s.c.HMGet(ctx, s.p+"m:"+id, fields...).Result()
	if err != nil {
		return storage.Memory{}, s.fail("get", err)
	}
	m, ok := decode(id, h)
	if !ok {
		return storage.Memory{}, fmt.Errorf("memory %s: %w", id, storage.ErrNotFound)
	}
	return m, nil
}

// read is the memories of ids, in order (those gone meanwhile left out).
func (s *Store) read(ctx context.Context, op string, ids []string) ([]storage.Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.HMGet(ctx, s.p+"m:"+id, fields...)
		}
		return nil
	})
	if err != nil {
		return nil, s.fail(op, err)
	}
	out := make([]storage.Memory, 0, len(ids))
	for i, c := range cmds {
		if m, ok := decode(ids[i], c.(*redis.SliceCmd).Val()); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// Recall implements storage.Memories: an exact cosine scan over the scope's
// memories made with the same model and dimension.
func (s *Store) Recall(ctx context.Context, scope, model string, vector []float32, k int, minScore float32) ([]storage.MemoryHit, error) {
	if err := storage.CheckRecall(vector, k); err != nil {
		return nil, err
	}
	ids, err := s.c.ZRange(ctx, s.p+"scope:"+scope, 0, -1).Result()
	if err != nil {
		return nil, s.fail("recall", err)
	}
	ms, err := s.read(ctx, "recall", ids)
	if err != nil {
		return nil, err
	}
	q := append([]float32(nil), vector...)
	vecindex.Normalize(q)
	var hits []storage.MemoryHit
	for _, m := range ms {
		if m.EmbeddingModel != model || len(m.Vector) != len(q) {
			continue
		}
		v := append([]float32(nil), m.Vector...)
		vecindex.Normalize(v)
		if score := vecindex.Dot(q, v); score >= minScore {
			hits = append(hits, storage.MemoryHit{Memory: m, Score: score})
		}
	}
	return storage.RankMemoryHits(hits, k), nil
}

// ListMemories implements storage.Memories, paging as the SQL backends do
// (storage.List): newest first unless asc, exclusive after and before
// cursors.
func (s *Store) ListMemories(ctx context.Context, scope string, o storage.ListOptions) (storage.Page[storage.Memory], error) {
	var page storage.Page[storage.Memory]
	limit := o.Limit
	switch {
	case limit == 0:
		limit = storage.DefaultListLimit
	case limit < 1 || limit > storage.MaxListLimit:
		return page, fmt.Errorf("%w: limit must be between 1 and %d (got %d)", storage.ErrInvalid, storage.MaxListLimit, o.Limit)
	}
	desc := true
	switch o.Order {
	case "", "desc":
	case "asc":
		desc = false
	default:
		return page, fmt.Errorf("%w: order must be asc or desc (got %q)", storage.ErrInvalid, o.Order)
	}
	set := s.p + "all"
	if scope != "" {
		set = s.p + "scope:" + scope
	}
	seqOf := func(name, id string) (float64, error) {
		v, err := s.c.ZScore(ctx, set, id).Result()
		if errors.Is(err, redis.Nil) {
			return 0, fmt.Errorf("%w: %s %q is not an id of this list", storage.ErrInvalid, name, id)
		}
		if err != nil {
			return 0, s.fail("list", err)
		}
		return v, nil
	}
	// The range in seq: lo..hi, exclusive bounds from the cursors ("later"
	// in list order is a lower seq when newest first).
	lo, hi := "-inf", "+inf"
	bound := func(name, id string, later bool) error {
		if id == "" {
			return nil
		}
		v, err := seqOf(name, id)
		if err != nil {
			return err
		}
		x := "(" + strconv.FormatFloat(v, 'f', -1, 64)
		if later == desc { // below the cursor's seq
			hi = x
		} else {
			lo = x
		}
		return nil
	}
	if err := bound("after", o.After, true); err != nil {
		return page, err
	}
	if err := bound("before", o.Before, false); err != nil {
		return page, err
	}
	// With only a before cursor, the page is the limit items just before
	// it: walk backwards and reverse.
	backwards := o.Before != "" && o.After == ""
	asc := !desc
	if backwards {
		asc = !asc
	}
	args := redis.ZRangeArgs{Key: set, Start: lo, Stop: hi, ByScore: true, Count: int64(limit + 1)}
	if !asc { // newest first: from the high end
		args.Start, args.Stop, args.Rev = hi, lo, true
	}
	ids, err := s.c.ZRangeArgs(ctx, args).Result()
	if err != nil {
		return page, s.fail("list", err)
	}
	if len(ids) > limit {
		ids, page.HasMore = ids[:limit], true
	}
	if backwards {
		for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
			ids[i], ids[j] = ids[j], ids[i]
		}
	}
	ms, err := s.read(ctx, "list", ids)
	if err != nil {
		return page, err
	}
	page.Data = ms
	if page.Data == nil {
		page.Data = []storage.Memory{}
	}
	return page, nil
}

// DeleteMemory implements storage.Memories.
func (s *Store) DeleteMemory(ctx context.Context, id string) error {
	n, err := forget.Run(ctx, s.c, []string{s.p + "m:" + id, s.p + "all"}, s.p, id).Int()
	if err != nil {
		return s.fail("delete", err)
	}
	if n == 0 {
		return fmt.Errorf("memory %s: %w", id, storage.ErrNotFound)
	}
	return nil
}

// DeleteScope implements storage.Memories.
func (s *Store) DeleteScope(ctx context.Context, scope string) (int, error) {
	n, err := forgetScope.Run(ctx, s.c, []string{s.p + "scope:" + scope, s.p + "dedup:" + scope, s.p + "all"}, s.p).Int()
	if err != nil {
		return 0, s.fail("delete scope", err)
	}
	return n, nil
}
