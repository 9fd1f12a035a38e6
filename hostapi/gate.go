package hostapi

import "context"

type gateKey struct{}

// WithEffectGate is ctx with gate, which the host asks before any effect a
// plugin's call would have: cache_store, memory_remember, a classify call
// on a remote binding (a model behind an endpoint, paid per call) and log.
// Reads and computation (embed, vector_search, retrieve, memory_recall,
// cache_lookup, a local classifier) do not ask it. gate returns whether the
// request may have effects; false denies the call (StatusDenied). The data
// plane sets it while a rate-limit verdict is still on its way (a take held
// back to ride on the request's first read from Redis): the gate waits for
// it, and a refused request's plugins change nothing (their outcome is
// discarded for the 429). It may be called more than once: it answers the
// same each time.
func WithEffectGate(ctx context.Context, gate func() bool) context.Context {
	return context.WithValue(ctx, gateKey{}, gate)
}

// mayAct reports whether ctx's effect gate, if any, lets the request have
// effects.
func mayAct(ctx context.Context) bool {
	g, _ := ctx.Value(gateKey{}).(func() bool)
	return g == nil || g()
}
