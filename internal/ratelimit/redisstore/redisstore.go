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
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/state/redisstate"
)

// take is the script: KEYS the buckets; ARGV[1] the numbers, little-endian
// float64s (struct.unpack): now (ns), then capacity, window (ns) and n per
// bucket; ARGV[2] 1 to take or 0 to adjust (no refusal). The numbers are
// one binary argument, not one decimal argument each: Lua's tonumber of
// four decimal strings, and the ARGV strings Redis builds for them, were a
// fifth of a one-bucket take on redis-server (52,700 instructions an
// EVALSHA, 42,200 packed: docs/benchmarks.md, "Issue 18, session 17"). A
// float64 holds what tonumber read before (the nearest double to the
// integer), so the arithmetic is the same. It answers one string: 1 (admitted) or 0 (refused), a byte, then each
// bucket's level (before the take when refused, after it when admitted), a
// little-endian float64 each.
//
// A bucket is one string (bucketLayout): its level and the time of that
// level, two little-endian float64s (struct.pack), written with its TTL
// (the time until it is full again, and a second) in one SET … PX, so a
// bucket costs the script one GET and one SET and no number formatting:
// the hash of HMGET, HSET and PEXPIRE with the numbers as text (keyed
// rl:<bucket>, before) cost redis-server 89,000 instructions a one-bucket
// EVALSHA, this 53,000 with decimal arguments (docs/benchmarks.md, "Issue
// 18, session 16"). A refused take writes nothing: the buckets' levels refill by the same rule from what they
// hold, so the write would change no later verdict. A level's time never
// goes back (a replica whose clock is behind takes at the bucket's time),
// so a bucket never refills twice over the same interval. One bucket, the
// common case (one limit per model), takes the first branch: no tables.
var take = redis.NewScript(takeSource)

const takeSource = `
local a = ARGV[1]
local adjust = ARGV[2] == "0"
if #KEYS == 1 then
  local now, cap, win, n = struct.unpack("<dddd", a)
  local level, at = cap, now
  local v = redis.call("GET", KEYS[1])
  if v then level, at = struct.unpack("<dd", v) end
  if now > at then level = level + (now - at) * cap / win; at = now end
  if level > cap then level = cap end
  if not adjust and (n > cap or level < n) then return struct.pack("<Bd", 0, level) end
  level = level - n
  local px = math.ceil(((at - now) + (cap - level) * win / cap) / 1e6) + 1000
  if px < 1 then px = 1 end
  redis.call("SET", KEYS[1], struct.pack("<dd", level, at), "PX", px)
  return struct.pack("<Bd", 1, level)
end
local now = struct.unpack("<d", a)
local caps, wins, ns, levels, ats, ok = {}, {}, {}, {}, {}, true
for i, key in ipairs(KEYS) do
  local cap, win, n = struct.unpack("<ddd", a, 24*i - 15)
  local level, at = cap, now
  local v = redis.call("GET", key)
  if v then level, at = struct.unpack("<dd", v) end
  if now > at then level = level + (now - at) * cap / win; at = now end
  if level > cap then level = cap end
  caps[i], wins[i], ns[i], levels[i], ats[i] = cap, win, n, level, at
  if not adjust and (n > cap or level < n) then ok = false end
end
local out = {ok and "\1" or "\0"}
for i, key in ipairs(KEYS) do
  if ok then
    local cap, win = caps[i], wins[i]
    local level = levels[i] - ns[i]
    levels[i] = level
    local px = math.ceil(((ats[i] - now) + (cap - level) * win / cap) / 1e6) + 1000
    if px < 1 then px = 1 end
    redis.call("SET", key, struct.pack("<dd", level, ats[i]), "PX", px)
  end
  out[i+1] = struct.pack("<d", levels[i])
end
return table.concat(out)
`

// bucketLayout names the buckets' keys (<group>:<bucketLayout>:<bucket>):
// a layout of its own, so that during a rolling upgrade a replica of the
// earlier layout (rl:<bucket>, a hash) and one of this never read each
// other's values; each counts its own buckets until the last old replica
// is gone (docs/configuration.md).
const bucketLayout = "b2"

// Store is the Redis ratelimit.Store.
type Store struct {
	c *redisstate.Client
	// FailOpen admits requests while Redis does not answer; false refuses them.
	FailOpen bool
	// keyPrefix starts every bucket's key (<group>:<bucketLayout>:), built
	// once: a take only appends the bucket's ID.
	keyPrefix string
}

// New is a store on c.
func New(c *redisstate.Client, failOpen bool) *Store {
	return &Store{c: c, FailOpen: failOpen, keyPrefix: c.Group("rl") + ":" + bucketLayout + ":"}
}

var _ ratelimit.Store = (*Store)(nil)

// The constant arguments of the script's command, boxed once: a take's
// command points into its call for the rest.
var (
	argEvalSha, argEval = any("evalsha"), any("eval")
	argSHA, argSource   = any(take.Hash()), any(takeSource)
	argTake, argAdjust  = any("1"), any("0")
)

// inlineBuckets is how many buckets a call holds without allocating more:
// one limit per model and one per key cover the common requests.
const inlineBuckets = 2

// call is one take's EVALSHA (KEYS and ARGV as the script reads them),
// built in one allocation: the command's arguments are pointers into it
// (go-redis writes a *string as its value, and the call itself, an
// encoding.BinaryMarshaler, as the numbers packed), so no key or number is
// boxed on its own, and its answer is read as one string
// (redis.StringCmd), not a reply boxed as an interface. go-redis's
// Script.Run, used before, built the keys and the arguments as two slices
// of their own, copied them into a third and boxed every number: 22
// allocations a two-bucket take, 12 of them these (docs/benchmarks.md,
// "Issue 18, session 16: the client side").
type call struct {
	args []any
	keys []string
	nums []byte // ARGV[1]: the numbers, little-endian float64s

	argsInline [3 + inlineBuckets + 2]any
	keysInline [inlineBuckets]string
	numsInline [8 * (1 + 3*inlineBuckets)]byte
}

// MarshalBinary is the call's ARGV[1], the numbers (go-redis writes an
// argument that is an encoding.BinaryMarshaler as these bytes).
func (c *call) MarshalBinary() ([]byte, error) { return c.nums, nil }

// newCall is the take script's command for takes at now (adjust: no
// refusal).
func (s *Store) newCall(now time.Time, takes []ratelimit.Take, adjust bool) *call {
	c := new(call)
	s.fill(c, now, takes, adjust)
	return c
}

// fill builds c as newCall does, in place (a deferred take holds its call).
func (s *Store) fill(c *call, now time.Time, takes []ratelimit.Take, adjust bool) {
	c.args, c.keys, c.nums = c.argsInline[:0], c.keysInline[:0], c.numsInline[:0]
	if n := len(takes); n > inlineBuckets {
		c.args, c.keys, c.nums = make([]any, 0, 3+n+2), make([]string, 0, n), make([]byte, 0, 8*(1+3*n))
	}
	c.args = append(c.args, argEvalSha, argSHA, len(takes))
	for _, t := range takes {
		c.keys = append(c.keys, s.keyPrefix+t.Bucket.ID)
	}
	for i := range c.keys {
		c.args = append(c.args, &c.keys[i])
	}
	c.nums = appendFloat(c.nums, now.UnixNano())
	for _, t := range takes {
		c.nums = appendFloat(appendFloat(appendFloat(c.nums, t.Bucket.Capacity), int64(t.Bucket.Window)), t.N)
	}
	mode := argTake
	if adjust {
		mode = argAdjust
	}
	c.args = append(c.args, c, mode)
}

// appendFloat appends v as the script reads a number: a little-endian
// float64 (the nearest to v, as Lua's tonumber of v in decimal was).
func appendFloat(b []byte, v int64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(v)))
}

// command is the call as a command to run or queue: EVALSHA of the
// script's hash, or with eval EVAL of its source (Redis lost the script: a
// restart, SCRIPT FLUSH; EVAL loads it again).
func (c *call) command(ctx context.Context, eval bool) *redis.StringCmd {
	cmd := new(redis.StringCmd)
	c.commandIn(cmd, ctx, eval)
	return cmd
}

// commandIn is command into cmd, a command the caller holds (a deferred
// take's, in the same allocation as its call).
func (c *call) commandIn(cmd *redis.StringCmd, ctx context.Context, eval bool) {
	c.args[0], c.args[1] = argEvalSha, argSHA
	if eval {
		c.args[0], c.args[1] = argEval, argSource
	}
	*cmd = *redis.NewStringCmd(ctx, c.args...)
	cmd.SetFirstKeyPos(3)
}

// run sends the call alone (EVAL if Redis lost the script) and returns the
// script's answer.
func (s *Store) run(ctx context.Context, c *call) (string, error) {
	return s.runIn(ctx, c, new(redis.StringCmd))
}

// runIn is run with cmd as the command (a deferred take's own).
func (s *Store) runIn(ctx context.Context, c *call, cmd *redis.StringCmd) (string, error) {
	c.commandIn(cmd, ctx, false)
	_ = s.c.Process(ctx, cmd)
	res, err := cmd.Result()
	if noScript(err) {
		cmd = c.command(ctx, true)
		_ = s.c.Process(ctx, cmd)
		res, err = cmd.Result()
	}
	return res, err
}

// verdict reads the script's answer for n buckets: whether the take was
// admitted; levelOf reads a bucket's level from it.
func verdict(res string, n int) (bool, error) {
	if len(res) == 0 || (len(res)-1)%8 != 0 {
		return false, fmt.Errorf("the take script answered %d bytes, not a verdict and levels", len(res))
	}
	if got := (len(res) - 1) / 8; got != n {
		return false, fmt.Errorf("the take script answered %d levels for %d buckets", got, n)
	}
	return res[0] == 1, nil
}

func levelOf(res string, i int) float64 {
	b := res[1+8*i : 9+8*i]
	return math.Float64frombits(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)
}

// Take implements ratelimit.Store.
func (s *Store) Take(ctx context.Context, now time.Time, takes []ratelimit.Take, levels []ratelimit.Level) (bool, error) {
	res, err := s.run(ctx, s.newCall(now, takes, false))
	return s.settle(now, takes, levels, res, err), nil
}

// settle reads the script's answer to takes (err: Redis did not answer)
// into levels and returns the verdict; on an error the take fails open or
// closed, counted and logged.
func (s *Store) settle(now time.Time, takes []ratelimit.Take, levels []ratelimit.Level, res string, err error) bool {
	var ok bool
	if err == nil {
		ok, err = verdict(res, len(takes))
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
		levels[i] = level(now, t.Bucket, levelOf(res, i), n)
	}
	return ok
}

var _ ratelimit.DeferringStore = (*Store)(nil)

// Defer implements ratelimit.DeferringStore: the take is a
// redisstate.Deferred on the returned context, which the request's first
// read from Redis (the response cache's lookup: rediscache) sends in its
// own pipeline, one round trip for both on one server (on a cluster the
// bucket's node and the entry's answer in parallel). take (the Deferred
// itself) sends it alone if nothing did; Redis not answering fails open or
// closed as Take does. A take not yet sent when the request's context ends
// is not sent: take then returns the context's error.
func (s *Store) Defer(ctx context.Context, now time.Time, takes []ratelimit.Take, levels []ratelimit.Level) (context.Context, ratelimit.Sender) {
	dt := &deferred{s: s, now: now, takes: takes, levels: levels}
	s.fill(&dt.call, now, takes, false)
	s.c.DeferIn(&dt.d, ctx, dt)
	return &dt.d, &dt.d // the Deferred is ctx carrying itself, and sends itself
}

// deferred is a held-back take, as a redisstate.Deferrable, with its
// Deferred and its command in the same allocation.
type deferred struct {
	s      *Store
	now    time.Time
	takes  []ratelimit.Take
	levels []ratelimit.Level
	d      redisstate.Deferred
	call   call
	cmd    redis.StringCmd // the command, carried (Queue) or alone (Send)
}

func (d *deferred) Queue(ctx context.Context, p redis.Pipeliner) {
	d.call.commandIn(&d.cmd, ctx, false)
	_ = p.Process(ctx, &d.cmd)
}

func (d *deferred) Carried(ctx context.Context) bool {
	res, err := d.cmd.Result()
	if noScript(err) { // Redis lost the script (a restart, SCRIPT FLUSH): it runs now, and is kept again
		cmd := d.call.command(ctx, true)
		_ = d.s.c.Process(ctx, cmd)
		res, err = cmd.Result()
	}
	return d.s.settle(d.now, d.takes, d.levels, res, err)
}

func (d *deferred) Send(ctx context.Context) bool {
	res, err := d.s.runIn(ctx, &d.call, &d.cmd)
	return d.s.settle(d.now, d.takes, d.levels, res, err)
}

func noScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// Adjust implements ratelimit.Store.
func (s *Store) Adjust(ctx context.Context, now time.Time, b ratelimit.Bucket, n int64) error {
	res, err := s.run(ctx, s.newCall(now, []ratelimit.Take{{Bucket: b, N: n}}, true))
	if err == nil {
		_, err = verdict(res, 1)
	}
	if err != nil {
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
