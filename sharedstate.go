package junction

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/ratelimit/redisstore"
	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/recipes"
)

// sharedState is the Redis global.state names (backend redis), one connection pool for every feature that keeps
// its state there: the rate-limit counters, the response cache and the Responses API's store.
type sharedState struct {
	c          *redisstate.Client
	failClosed bool
}

// openSharedState connects to the Redis of global.state: nil (every feature keeps its own per-replica store) for
// memory and embedded. A Redis that does not answer at start is logged, not fatal: the features degrade (rate
// limits fail open or closed as configured, the cache serves this replica's entries) until it answers, as they do
// when it goes away later. Its errors counter joins reg.
func openSharedState(ctx context.Context, doc *recipes.Document, reg prometheus.Registerer, log *slog.Logger) (*sharedState, error) {
	if doc == nil || recipes.StateBackend(doc.Global.State) != recipes.StateBackendRedis {
		return nil, nil
	}
	r := doc.Global.State.Redis
	cfg := redisstate.Config{Mode: r.Mode, Address: r.Address, Addresses: r.Addresses, DB: r.DB, PasswordEnv: r.PasswordEnv, KeyPrefix: r.KeyPrefix}
	if t := r.TLS; t != nil {
		cfg.TLS = redisstate.TLS{Enabled: t.Enabled, CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}
	}
	c, err := redisstate.New(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("global.state: %w", err)
	}
	if err := reg.Register(c.Collector()); err != nil {
		c.Close()
		return nil, fmt.Errorf("global.state: registering junction_state_errors_total: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	mode := "open"
	if r.FailClosed {
		mode = "closed"
	}
	if err := c.Ping(pctx); err != nil {
		log.Warn("shared state: Redis does not answer; rate limits fail "+mode+" and the response cache serves this replica's entries until it does", "addr", c.Addr(), "err", err)
	} else {
		log.Info("shared state on Redis", "addr", c.Addr(), "db", r.DB, "key_prefix", c.Prefix, "rate_limits_on_failure", mode)
	}
	return &sharedState{c: c, failClosed: r.FailClosed}, nil
}

// rateLimits is the store of the rate-limit counters: nil (the limiter's own in-process store) without shared
// state, Redis with it.
func (s *sharedState) rateLimits() ratelimit.Store {
	if s == nil {
		return nil
	}
	return redisstore.New(s.c, !s.failClosed)
}

// client is the Redis connection, nil without shared state.
func (s *sharedState) client() *redisstate.Client {
	if s == nil {
		return nil
	}
	return s.c
}

// close releases the connection (after every feature that uses it closed).
func (s *sharedState) close() {
	if s != nil {
		s.c.Close()
	}
}
