// Package selection picks the model a decision routes to among its modelRefs.
//
// Selector is an interface so that smarter algorithms (latency-, cost- or
// load-aware) can be added beside FirstHealthy without touching the engine. A
// selector only chooses; it never calls a backend.
package selection

import (
	"context"

	"github.com/junction-router/junction/recipes"
)

// Health reports whether a model currently has a usable backend.
type Health interface {
	Healthy(model string) bool
}

// AllHealthy is the Health used when nothing tracks backends (routing previews).
type AllHealthy struct{}

// Healthy always reports true.
func (AllHealthy) Healthy(string) bool { return true }

// Selector chooses one of candidates. ok is false only when candidates is empty.
type Selector interface {
	Select(ctx context.Context, candidates []recipes.ModelRef, health Health) (ref recipes.ModelRef, ok bool)
	// Name identifies the algorithm in routing output.
	Name() string
}

// FirstHealthy picks the first healthy candidate in configuration order, and
// the first candidate when none is healthy (a request to an unhealthy backend
// fails with a clear upstream error rather than silently going elsewhere).
type FirstHealthy struct{}

// Name implements Selector.
func (FirstHealthy) Name() string { return "first_healthy" }

// Select implements Selector.
func (FirstHealthy) Select(_ context.Context, candidates []recipes.ModelRef, health Health) (recipes.ModelRef, bool) {
	if len(candidates) == 0 {
		return recipes.ModelRef{}, false
	}
	for _, c := range candidates {
		if health == nil || health.Healthy(c.Model) {
			return c, true
		}
	}
	return candidates[0], true
}

// ByName returns the selector for an algorithm type; "" and "first_healthy"
// give FirstHealthy.
func ByName(name string) (Selector, bool) {
	switch name {
	case "", "first_healthy", "static":
		return FirstHealthy{}, true
	}
	return nil, false
}
