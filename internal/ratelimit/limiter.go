package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/junction-router/junction/recipes"
)

// Request is what the limits of one request count per, once it is routed.
type Request struct {
	// APIKey is the client's credential (bearer token or x-api-key); it is
	// hashed before it names a bucket, never kept as is.
	APIKey string
	// User is the request body's user field.
	User     string
	Model    string
	Decision string
	// Header reads a client request header (header:<name> keys).
	Header func(name string) string
	// Tokens is the estimated prompt + completion tokens (see Estimate).
	Tokens int64
}

// Status is one limit's state, for the answer's X-RateLimit headers.
type Status struct {
	// Name of the limit and its dimension (requests or tokens).
	Name, Dimension string
	Limit           int64
	Remaining       int64
	// Reset is when the limit is whole again (Unix seconds in the header).
	Reset time.Time
	// RetryAfter is how long a refused request should wait (0 if admitted).
	RetryAfter time.Duration
	Window     time.Duration
}

// Set reports whether s describes a limit (the zero Status does not).
func (s Status) Set() bool { return s.Limit > 0 }

// Admission is an admitted request's hold on its token buckets, settled
// once the answer's usage is known. The zero Admission holds nothing.
type Admission struct {
	// Tightest is the limit with the least left, for the answer's headers.
	Tightest Status
	store    Store
	tokens   []Bucket
	charged  int64
}

// Limiter applies a configuration's rate limits to requests. It keeps the
// store across configurations: a bucket keeps its level when its limit's
// size changes (clamped to the new size), so a change applies live.
type Limiter struct {
	store Store
	now   func() time.Time
}

// New returns a limiter over store (nil: a new Local); now is the clock
// (nil: time.Now).
func New(store Store, now func() time.Time) *Limiter {
	if store == nil {
		store = NewLocal()
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{store: store, now: now}
}

// Store is the limiter's store.
func (l *Limiter) Store() Store { return l.store }

// Refusal is a request over a limit: the limit's status (RetryAfter set).
type Refusal struct{ Status }

func (r *Refusal) Error() string {
	return fmt.Sprintf("rate limit %q exceeded: %d %s per %s; retry after %d s", r.Name, r.Limit, r.Dimension, r.Window, retrySeconds(r.RetryAfter))
}

// Admit counts req against doc's global.rate_limits. It returns the
// admission (to settle and to report), or a *Refusal when a limit is
// exhausted (nothing is then taken from any bucket). Without limits it
// does nothing and allocates nothing.
func (l *Limiter) Admit(ctx context.Context, doc *recipes.Document, req *Request) (Admission, error) {
	if l == nil || doc == nil || len(doc.Global.RateLimits) == 0 {
		return Admission{}, nil
	}
	var meta [16]takeMeta
	t, info := l.prepare(doc, req, meta[:0])
	ok, err := l.store.Take(ctx, t.now, t.takes, t.levels)
	return conclude(t, info, ok, err)
}

// DeferringStore is a Store that can hold a take back for the request's
// first read of the same store to carry (a shared store, where the take is
// a round trip of its own).
type DeferringStore interface {
	Store
	// Defer holds the take back: ctx carried to the request's reads lets
	// them carry it; take's Send sends it unless a read did (once: later
	// calls return the same) and returns what Take would, levels filled, or
	// the error of ctx when it ended before the take was sent (nothing
	// taken).
	Defer(ctx context.Context, now time.Time, takes []Take, levels []Level) (carry context.Context, take Sender)
}

// Sender sends a held-back take (DeferringStore.Defer). An interface, not
// a func: the held-back take is one, where a method value was an
// allocation a request of its own.
type Sender interface {
	Send() (bool, error)
}

// Pending is a request's take held back (Limiter.Defer) until its verdict
// is needed. Safe for concurrent use.
type Pending struct {
	t    takes
	info []takeMeta
	take Sender
	once sync.Once
	a    Admission
	err  error
}

// Defer is Admit, held back: on a DeferringStore it prepares req's take
// (its buckets' keys and costs, from req as it is now) and returns it with
// ctx carrying it to the request's reads of the same store, which may send
// it with theirs (one round trip for both); Resolve sends it unless one
// did, and must be called before the request has any effect. nil (and ctx)
// when there is nothing to hold back: no limits, or a store that takes at
// once (Local: call Admit).
func (l *Limiter) Defer(ctx context.Context, doc *recipes.Document, req *Request) (*Pending, context.Context) {
	if l == nil || doc == nil || len(doc.Global.RateLimits) == 0 {
		return nil, ctx
	}
	ds, ok := l.store.(DeferringStore)
	if !ok {
		return nil, ctx
	}
	t, info := l.prepare(doc, req, nil)
	carry, take := ds.Defer(ctx, t.now, t.takes, t.levels)
	return &Pending{t: t, info: info, take: take}, carry
}

// Resolve is the held-back take's outcome, what Admit would have returned:
// the take is sent now unless a read carried it.
func (p *Pending) Resolve() (Admission, error) {
	p.once.Do(func() {
		ok, err := p.take.Send()
		p.a, p.err = conclude(p.t, p.info, ok, err)
	})
	return p.a, p.err
}

// takes is one request's take: the buckets and their levels once taken.
// (What each bucket is, for the answer's headers, is kept apart: Admit
// keeps it on its stack, where a field beside the buckets could not stay.)
type takes struct {
	store   Store
	now     time.Time
	takes   []Take
	levels  []Level
	charged int64
}

// prepare is req's take under doc's limits and the buckets' descriptions
// (appended to info).
func (l *Limiter) prepare(doc *recipes.Document, req *Request, info []takeMeta) (takes, []takeMeta) {
	limits := doc.Global.RateLimits
	t := takes{store: l.store, now: l.now(), charged: max(req.Tokens, 0), takes: make([]Take, 0, 2*len(limits))}
	for _, rl := range limits {
		window := rl.Window.Duration
		if window <= 0 {
			window = recipes.DefaultRateLimitWindow
		}
		id := rl.Name + "\x00" + keyValue(rl, req)
		if rl.Requests > 0 {
			t.takes = append(t.takes, Take{Bucket: Bucket{ID: "r\x00" + id, Capacity: rl.Requests, Window: window}, N: 1})
			info = append(info, takeMeta{name: rl.Name, dim: "requests"})
		}
		if rl.Tokens > 0 {
			t.takes = append(t.takes, Take{Bucket: Bucket{ID: "t\x00" + id, Capacity: rl.Tokens, Window: window}, N: max(req.Tokens, 0)})
			info = append(info, takeMeta{name: rl.Name, dim: "tokens"})
		}
	}
	t.levels = make([]Level, len(t.takes))
	return t, info
}

// conclude turns the store's answer to t into Admit's.
func conclude(t takes, info []takeMeta, ok bool, err error) (Admission, error) {
	if err != nil {
		return Admission{}, fmt.Errorf("rate limits: %w", err)
	}
	takes, levels := t.takes, t.levels
	if !ok {
		// The limit that makes the request wait longest is the one to report.
		worst := -1
		for i, lv := range levels {
			if lv.Wait > 0 && (worst < 0 || lv.Wait > levels[worst].Wait) {
				worst = i
			}
		}
		return Admission{}, &Refusal{status(takes[worst], info[worst], levels[worst], true)}
	}
	a := Admission{store: t.store, charged: t.charged}
	tight := -1
	for i, t := range takes {
		if info[i].dim == "tokens" {
			a.tokens = append(a.tokens, t.Bucket)
		}
		if tight < 0 || tighter(levels[i], t.Bucket, levels[tight], takes[tight].Bucket) {
			tight = i
		}
	}
	a.Tightest = status(takes[tight], info[tight], levels[tight], false)
	return a, nil
}

type takeMeta struct{ name, dim string }

func status(t Take, m takeMeta, lv Level, refused bool) Status {
	s := Status{Name: m.name, Dimension: m.dim, Limit: t.Bucket.Capacity, Remaining: lv.Remaining, Reset: lv.Full, Window: t.Bucket.Window}
	if refused {
		s.RetryAfter = lv.Wait
	}
	return s
}

// tighter: the smaller share left wins, then the fewer units.
func tighter(a Level, ab Bucket, b Level, bb Bucket) bool {
	// a.Remaining/ab.Capacity < b.Remaining/bb.Capacity, without division.
	l, r := a.Remaining*bb.Capacity, b.Remaining*ab.Capacity
	if l != r {
		return l < r
	}
	return a.Remaining < b.Remaining
}

// Settle charges the request's real token count (prompt + completion from
// the answer's usage) in place of the estimate it was admitted with. Known
// false: the answer reported no usage; a failed request (failed true) then
// gives the estimate back (the backend did no work), another keeps it.
func (a *Admission) Settle(ctx context.Context, now time.Time, tokens int64, known, failed bool) {
	if a == nil || a.store == nil || len(a.tokens) == 0 {
		return
	}
	var delta int64
	switch {
	case known:
		delta = tokens - a.charged
	case failed:
		delta = -a.charged
	default:
		return
	}
	if delta != 0 {
		for _, b := range a.tokens {
			_ = a.store.Adjust(ctx, now, b, delta) // a lost settlement only loosens a limit
		}
	}
	a.tokens = nil
}

// keyValue is what rl counts req per. A request without the value (no
// API key, no user field, no such header) counts under one shared empty
// value: a limit never lapses because its key is missing.
func keyValue(rl recipes.RateLimit, req *Request) string {
	switch rl.Key {
	case recipes.RateLimitKeyAPIKey:
		if req.APIKey == "" {
			return ""
		}
		sum := sha256.Sum256([]byte(req.APIKey))
		return hex.EncodeToString(sum[:16])
	case recipes.RateLimitKeyUser:
		return req.User
	case recipes.RateLimitKeyModel:
		return req.Model
	case recipes.RateLimitKeyDecision:
		return req.Decision
	}
	if name := rl.HeaderName(); name != "" && req.Header != nil {
		return req.Header(name)
	}
	return ""
}

// Estimate is a request's token estimate before the call: its prompt at
// about four bytes a token, plus the completion it allows (max_tokens or
// max_completion_tokens; 0 when it sets none, the answer's usage then
// settles it).
func Estimate(promptBytes int, maxCompletion int64) int64 {
	return int64(promptBytes+3)/4 + max(maxCompletion, 0)
}

func retrySeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// RetryAfterSeconds is the Retry-After value of a refusal: whole seconds,
// at least 1.
func (s Status) RetryAfterSeconds() int64 { return retrySeconds(s.RetryAfter) }

// Headers calls fn with the X-RateLimit headers of s (canonical names):
// Limit, Remaining, Reset (Unix seconds) and, when refused,
// X-RateLimit-Retry-After and Retry-After (seconds).
func (s Status) Headers(fn func(key, value string)) {
	if !s.Set() {
		return
	}
	fn(HeaderLimit, strconv.FormatInt(s.Limit, 10))
	fn(HeaderRemaining, strconv.FormatInt(s.Remaining, 10))
	fn(HeaderReset, strconv.FormatInt(resetUnix(s.Reset), 10))
	if s.RetryAfter > 0 {
		v := strconv.FormatInt(s.RetryAfterSeconds(), 10)
		fn(HeaderRetryAfter, v)
		fn("Retry-After", v)
	}
}

func resetUnix(t time.Time) int64 {
	u := t.Unix()
	if t.Nanosecond() > 0 {
		u++ // whole seconds, rounded up: the limit is whole by then
	}
	return u
}

// The rate-limit headers (the spec's earlier-revision set).
const (
	HeaderLimit      = "X-Ratelimit-Limit"
	HeaderRemaining  = "X-Ratelimit-Remaining"
	HeaderReset      = "X-Ratelimit-Reset"
	HeaderRetryAfter = "X-Ratelimit-Retry-After"
)
