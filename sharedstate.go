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

// openRateLimitStore is the store of the rate-limit counters global.state names: nil (the limiter's own
// in-process store) for memory and embedded, Redis for redis. A Redis that does not answer at start is logged,
// not fatal: the limits fail open or closed as configured until it answers, as they do when it goes away later.
// close releases the connection (it is never nil).
func openRateLimitStore(ctx context.Context, doc *recipes.Document, reg prometheus.Registerer, log *slog.Logger) (store ratelimit.Store, close func(), err error) {
	st := doc.Global.State
	if recipes.StateBackend(st) != recipes.StateBackendRedis {
		return nil, func() {}, nil
	}
	r := st.Redis
	cfg := redisstate.Config{Address: r.Address, DB: r.DB, PasswordEnv: r.PasswordEnv, KeyPrefix: r.KeyPrefix}
	if t := r.TLS; t != nil {
		cfg.TLS = redisstate.TLS{Enabled: t.Enabled, CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}
	}
	c, err := redisstate.New(cfg, log)
	if err != nil {
		return nil, nil, fmt.Errorf("global.state: %w", err)
	}
	if err := reg.Register(c.Collector()); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("global.state: registering junction_state_errors_total: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	mode := "open"
	if r.FailClosed {
		mode = "closed"
	}
	if err := c.Ping(pctx); err != nil {
		log.Warn("shared state: Redis does not answer; rate limits fail "+mode+" until it does", "addr", r.Address, "err", err)
	} else {
		log.Info("shared state on Redis", "addr", r.Address, "db", r.DB, "key_prefix", c.Prefix, "rate_limits_on_failure", mode)
	}
	return redisstore.New(c, !r.FailClosed), func() { c.Close() }, nil
}
