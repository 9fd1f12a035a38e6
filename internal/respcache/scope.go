package respcache

import (
	"context"
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
	sfx    any // suffix() as a context value, kept by ScopeOf so a request need not build it
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
	if s.sfx != nil {
		return context.WithValue(ctx, scopeKey{}, s.sfx)
	}
	return context.WithValue(ctx, scopeKey{}, s.suffix())
}

// Scoped is the hostapi.Cache the plugin host is given: every namespace
// gets the scope of the call's context (none: the namespace as named).
type Scoped struct{ Backend hostapi.Cache }

var _ hostapi.Cache = Scoped{}

func scoped(ctx context.Context, ns string) string {
	if s, ok := ctx.Value(scopeKey{}).(string); ok {
		return ns + s
	}
	return ns
}

// Lookup implements hostapi.Cache.
func (c Scoped) Lookup(ctx context.Context, ns, key string, embedding []float32, threshold float32) (abi.CacheEntry, bool, error) {
	return c.Backend.Lookup(ctx, scoped(ctx, ns), key, embedding, threshold)
}

// Store implements hostapi.Cache.
func (c Scoped) Store(ctx context.Context, ns, key string, value []byte, ttl time.Duration, embedding []float32) error {
	return c.Backend.Store(ctx, scoped(ctx, ns), key, value, ttl, embedding)
}
