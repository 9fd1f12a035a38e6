// Package redisstore is the ratelimit.Store of several replicas: the token
// buckets live in Redis, and one Lua script takes from every bucket of a
// request atomically (all of them or none), so replicas sharing a Redis
// admit exactly what one process would. Keys expire once a bucket would be
// full again. When Redis does not answer, a take fails open (admitted) or
// closed (refused) as configured, counted in junction_state_errors_total
// and logged, never an error the request sees.
//
// A take can be held back (Store.Defer, a redisstate.Deferred) so that the
// request's first read from Redis, the response cache's exact lookup,
// carries it in one pipeline: one round trip for both on one server.
//
// On a Redis Cluster the buckets are one key group (redisstate.Client.Group,
// a hash tag), so the buckets of any request share a slot and the script
// stays atomic; they live on one shard, as they must for one script to take
// from several of them.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/state/redisstate"
)

// take is the script: KEYS the buckets, ARGV now (ns) and then capacity,
// window (ns) and n per bucket, then 1 to take or 0 to adjust (no refusal).
// It returns each bucket's level (before the take when refused, after it
// when admitted) and 1 or 0.
var take = redis.NewScript(`
local now = tonumber(ARGV[1])
local adjust = ARGV[#ARGV] == "0"
local levels, ok = {}, true
for i, key in ipairs(KEYS) do
  local cap = tonumber(ARGV[3*i-1]); local win = tonumber(ARGV[3*i]); local n = tonumber(ARGV[3*i+1])
  local h = redis.call("HMGET", key, "l", "t")
  local level, at = tonumber(h[1]), tonumber(h[2])
  if level == nil then level, at = cap, now end
  if now > at then level = level + (now - at) * cap / win; at = now end
  if level > cap then level = cap end
  levels[i] = level
  if not adjust and (n > cap or level < n) then ok = false end
end
for i, key in ipairs(KEYS) do
  local cap = tonumber(ARGV[3*i-1]); local win = tonumber(ARGV[3*i]); local n = tonumber(ARGV[3*i+1])
  if ok then levels[i] = levels[i] - n end
  redis.call("HSET", key, "l", tostring(levels[i]), "t", tostring(now))
  local full = math.ceil((cap - levels[i]) * win / cap / 1e6) + 1000
  redis.call("PEXPIRE", key, full)
  levels[i] = tostring(levels[i])
end
levels[#levels+1] = ok and 1 or 0
return levels
`)

// Store is the Redis ratelimit.Store.
type Store struct {
	c *redisstate.Client
	// FailOpen admits requests while Redis does not answer; false refuses them.
	FailOpen bool
}

// New is a store on c.
func New(c *redisstate.Client, failOpen bool) *Store { return &Store{c: c, FailOpen: failOpen} }

var _ ratelimit.Store = (*Store)(nil)

func (s *Store) run(ctx context.Context, now time.Time, takes []ratelimit.Take, adjust bool) ([]float64, bool, error) {
	keys, args := s.script(now, takes, adjust)
	return parse(take.Run(ctx, s.c, keys, args...).Slice())
}

// parse reads the script's answer: each bucket's level and whether the take
// was admitted.
func parse(res []any, err error) ([]float64, bool, error) {
	if err != nil {
		return nil, false, err
	}
	if len(res) == 0 {
		return nil, false, errors.New("the take script answered nothing")
	}
	levels := make([]float64, len(res)-1)
	for i := range levels {
		str, _ := res[i].(string)
		levels[i], _ = strconv.ParseFloat(str, 64)
	}
	ok, _ := res[len(res)-1].(int64)
	return levels, ok == 1, nil
}

// script is the take script's KEYS and ARGV for takes.
func (s *Store) script(now time.Time, takes []ratelimit.Take, adjust bool) ([]string, []any) {
	keys := make([]string, len(takes))
	args := make([]any, 0, 2+3*len(takes))
	args = append(args, now.UnixNano())
	for i, t := range takes {
		keys[i] = s.c.Group("rl") + ":" + t.Bucket.ID
		args = append(args, t.Bucket.Capacity, int64(t.Bucket.Window), t.N)
	}
	mode := "1"
	if adjust {
		mode = "0"
	}
	return keys, append(args, mode)
}

// Take implements ratelimit.Store.
func (s *Store) Take(ctx context.Context, now time.Time, takes []ratelimit.Take, levels []ratelimit.Level) (bool, error) {
	keys, args := s.script(now, takes, false)
	res, err := take.Run(ctx, s.c, keys, args...).Slice()
	return s.settle(now, takes, levels, res, err), nil
}

// settle reads the script's answer to takes (err: Redis did not answer)
// into levels and returns the verdict; on an error the take fails open or
// closed, counted and logged.
func (s *Store) settle(now time.Time, takes []ratelimit.Take, levels []ratelimit.Level, res []any, err error) bool {
	got, ok, err := parse(res, err)
	if err == nil && len(got) != len(takes) {
		err = fmt.Errorf("the take script answered %d levels for %d buckets", len(got), len(takes))
	}
	if err != nil {
		s.c.Failed("rate_limit", "take", err)
		for i, t := range takes {
			levels[i] = ratelimit.Level{Remaining: t.Bucket.Capacity, Full: now}
			if !s.FailOpen {
				levels[i] = ratelimit.Level{Full: now.Add(t.Bucket.Window), Wait: time.Second}
			}
		}
		return s.FailOpen
	}
	for i, t := range takes {
		n := t.N
		if ok {
			n = 0
		}
		levels[i] = level(now, t.Bucket, got[i], n)
	}
	return ok
}

var _ ratelimit.DeferringStore = (*Store)(nil)

// Defer implements ratelimit.DeferringStore: the take is a
// redisstate.Deferred on the returned context, which the request's first
// read from Redis (the response cache's lookup: rediscache) sends in its
// own pipeline, one round trip for both on one server (on a cluster the
// bucket's node and the entry's answer in parallel). take sends it alone
// if nothing did; Redis not answering fails open or closed as Take does.
// A take not yet sent when the request's context ends is not sent: take
// then returns the context's error.
func (s *Store) Defer(ctx context.Context, now time.Time, takes []ratelimit.Take, levels []ratelimit.Level) (context.Context, func() (bool, error)) {
	keys, args := s.script(now, takes, false)
	d := s.c.Defer(ctx, &deferred{s: s, now: now, takes: takes, levels: levels, keys: keys, args: args})
	return redisstate.WithDeferred(ctx, d), d.Send
}

// deferred is a held-back take, as a redisstate.Deferrable.
type deferred struct {
	s      *Store
	now    time.Time
	takes  []ratelimit.Take
	levels []ratelimit.Level
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

func (d *deferred) Queue(ctx context.Context, p redis.Pipeliner) {
	d.cmd = take.EvalSha(ctx, p, d.keys, d.args...)
}

func (d *deferred) Carried(ctx context.Context) bool {
	res, err := d.cmd.Slice()
	if noScript(err) { // Redis lost the script (a restart, SCRIPT FLUSH): it runs now, and is kept again
		res, err = take.Eval(ctx, d.s.c, d.keys, d.args...).Slice()
	}
	return d.s.settle(d.now, d.takes, d.levels, res, err)
}

func (d *deferred) Send(ctx context.Context) bool {
	res, err := take.Run(ctx, d.s.c, d.keys, d.args...).Slice()
	return d.s.settle(d.now, d.takes, d.levels, res, err)
}

func noScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// Adjust implements ratelimit.Store.
func (s *Store) Adjust(ctx context.Context, now time.Time, b ratelimit.Bucket, n int64) error {
	if _, _, err := s.run(ctx, now, []ratelimit.Take{{Bucket: b, N: n}}, true); err != nil {
		s.c.Failed("rate_limit", "adjust", err)
	}
	return nil
}

// level is ratelimit.Local's reading of a bucket at lv units.
func level(now time.Time, k ratelimit.Bucket, lv float64, n int64) ratelimit.Level {
	capacity, rate := float64(k.Capacity), float64(k.Capacity)/float64(k.Window)
	l := ratelimit.Level{Remaining: int64(math.Floor(math.Max(lv, 0)))}
	l.Full = now.Add(time.Duration(math.Ceil((capacity - lv) / rate)))
	switch missing := float64(n) - lv; {
	case n > k.Capacity:
		l.Wait = k.Window
	case missing > 0:
		l.Wait = time.Duration(math.Ceil(missing / rate))
	}
	return l
}
