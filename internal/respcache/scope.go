package respcache

import (
	"context"
	"sync"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
)

// Scope is what a request's entries are kept under besides the namespace a
// plugin names: the recipe (empty when the response_cache plugin's
// scope.recipe is off) and the configuration epoch.
type Scope struct {
	Recipe string
	Epoch  string
	sfx    string    // suffix(), kept by ScopeOf so a request need not build it
	req    *reqState // ForRequest's
}

// reqState is what one request's lookups and stores share: the backend's
// flush count when the request first used the cache.
type reqState struct {
	mu      sync.Mutex
	seen    bool
	flushes uint64
}

// ForRequest is s for one request: a store through Scoped is dropped when
// the cache was flushed after the request's first lookup, so an answer
// made before a flush is never stored after it (a flush advances the
// epoch of what was in flight too). Retargeted keeps what an earlier
// scope of the same request saw.
func (s Scope) ForRequest() Scope {
	s.req = &reqState{}
	return s
}

// Retargeted is s for the request prev was made for (a fallback to another
// model keeps the request's flush state).
func (s Scope) Retargeted(prev Scope) Scope {
	s.req = prev.req
	return s
}

// scopeValue is the context value WithScope sets.
type scopeValue struct {
	sfx string
	req *reqState
}

// suffix is what Scoped appends to a namespace.
func (s Scope) suffix() string {
	out := ""
	if s.Recipe != "" {
		out += "/recipe=" + s.Recipe
	}
	if s.Epoch != "" {
		out += "/epoch=" + s.Epoch
	}
	return out
}

type scopeKey struct{}

// WithScope makes the cache lookups and stores under ctx use s.
func WithScope(ctx context.Context, s Scope) context.Context {
	if s.Recipe == "" && s.Epoch == "" {
		return ctx
	}
	sfx := s.sfx
	if sfx == "" {
		sfx = s.suffix()
	}
	return context.WithValue(ctx, scopeKey{}, &scopeValue{sfx: sfx, req: s.req})
}

// Scoped is the hostapi.Cache the plugin host is given: every namespace
// gets the scope of the call's context (none: the namespace as named).
type Scoped struct{ Backend hostapi.Cache }

var _ hostapi.Cache = Scoped{}

func scopeOf(ctx context.Context) *scopeValue {
	v, _ := ctx.Value(scopeKey{}).(*scopeValue)
	return v
}

func (v *scopeValue) namespace(ns string) string {
	if v == nil {
		return ns
	}
	return ns + v.sfx
}

// flushes is the backend's flush count, when it keeps one.
func (c Scoped) flushes() (uint64, bool) {
	f, ok := c.Backend.(interface{ Flushes() uint64 })
	if !ok {
		return 0, false
	}
	return f.Flushes(), true
}

// Lookup implements hostapi.Cache.
func (c Scoped) Lookup(ctx context.Context, ns, key string, embedding []float32, threshold float32) (abi.CacheEntry, bool, error) {
	v := scopeOf(ctx)
	if v != nil && v.req != nil {
		if n, ok := c.flushes(); ok {
			v.req.mu.Lock()
			if !v.req.seen {
				v.req.seen, v.req.flushes = true, n
			}
			v.req.mu.Unlock()
		}
	}
	return c.Backend.Lookup(ctx, v.namespace(ns), key, embedding, threshold)
}

// Store implements hostapi.Cache. A store of a request that looked up
// before a flush is dropped (nil error: the answer is not worth keeping).
func (c Scoped) Store(ctx context.Context, ns, key string, value []byte, ttl time.Duration, embedding []float32) error {
	v := scopeOf(ctx)
	if v != nil && v.req != nil {
		if n, ok := c.flushes(); ok {
			v.req.mu.Lock()
			stale := v.req.seen && v.req.flushes != n
			v.req.mu.Unlock()
			if stale {
				return nil
			}
		}
	}
	return c.Backend.Store(ctx, v.namespace(ns), key, value, ttl, embedding)
}
