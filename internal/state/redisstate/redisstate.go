// Package redisstate connects to the Redis that global.state names when the
// state of several replicas (the response cache, the rate-limit counters)
// is shared: one client from the configuration (address, database, a
// password read from the environment variable password_env names, TLS
// files, a key prefix every key starts with), and the errors counter
// (junction_state_errors_total{feature,op}) the shared stores record into
// when Redis does not answer, so a Redis outage is a metric and a log line,
// never a failed request.
package redisstate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// Config is global.state.redis.
type Config struct {
	Address     string
	DB          int
	PasswordEnv string // the environment variable holding the password; empty: none
	TLS         TLS
	KeyPrefix   string // every key starts with it; empty: DefaultKeyPrefix
}

// TLS is global.state.redis.tls.
type TLS struct {
	Enabled  bool
	CAFile   string // empty: the system's roots
	CertFile string // with KeyFile: a client certificate
	KeyFile  string
}

// DefaultKeyPrefix is the key prefix when none is configured.
const DefaultKeyPrefix = "junction:"

// Client is a Redis connection pool with the key prefix and the errors
// counter of the stores built on it. Safe for concurrent use.
type Client struct {
	*redis.Client
	Prefix string
	errors *prometheus.CounterVec
	log    *slog.Logger

	mu     sync.Mutex
	logged map[string]time.Time // feature/op → when last logged
}

// New builds a client from c (it does not connect: Ping does). log may be nil.
func New(c Config, log *slog.Logger) (*Client, error) {
	if c.Address == "" {
		return nil, errors.New("global.state.redis.address is empty: set it to host:port of the Redis server")
	}
	o := &redis.Options{
		Addr:         c.Address,
		DB:           c.DB,
		DialTimeout:  2 * time.Second,
		ReadTimeout:  500 * time.Millisecond,
		WriteTimeout: 500 * time.Millisecond,
		PoolTimeout:  time.Second,
		MaxRetries:   -1, // a request does not wait out retries; the store degrades instead
	}
	if c.PasswordEnv != "" {
		pw, ok := os.LookupEnv(c.PasswordEnv)
		if !ok {
			return nil, fmt.Errorf("global.state.redis.password_env names %s, which is not set in the environment: export it or remove password_env", c.PasswordEnv)
		}
		o.Password = pw
	}
	if c.TLS.Enabled {
		tc, err := tlsConfig(c.TLS)
		if err != nil {
			return nil, err
		}
		o.TLSConfig = tc
	} else if c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.KeyFile != "" {
		return nil, errors.New("global.state.redis.tls names files but enabled is false: set enabled: true or remove the files")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	prefix := c.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	return &Client{
		Client: redis.NewClient(o),
		Prefix: prefix,
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "junction_state_errors_total",
			Help: "Operations on the shared state (Redis) that failed, by feature and operation; the feature degraded instead (a cache miss, a rate limit failing open or closed).",
		}, []string{"feature", "op"}),
		log:    log,
		logged: map[string]time.Time{},
	}, nil
}

func tlsConfig(t TLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("global.state.redis.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("global.state.redis.tls.ca_file %s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("global.state.redis.tls: cert_file and key_file go together: set both or neither")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("global.state.redis.tls client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Ping checks that Redis answers, with an error that says where it looked.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.Client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis at %s (global.state.redis) does not answer: %w", c.Options().Addr, err)
	}
	return nil
}

// Collector is the errors counter, for the serving registry.
func (c *Client) Collector() prometheus.Collector { return c.errors }

// Errors is the errors counter's value for feature and op (tests, status).
func (c *Client) Errors(feature, op string) float64 {
	var m dto.Metric
	_ = c.errors.WithLabelValues(feature, op).Write(&m)
	return m.GetCounter().GetValue()
}

// logEvery bounds the log lines of one feature and operation while Redis is
// down: one every so often, not one a request.
const logEvery = 10 * time.Second

// Failed records that op of feature failed with err: the counter always, a
// log line at most every logEvery per feature and op. The error text is
// Redis's or the network's, never a request's.
func (c *Client) Failed(feature, op string, err error) {
	c.errors.WithLabelValues(feature, op).Inc()
	k := feature + "/" + op
	now := time.Now()
	c.mu.Lock()
	last, seen := c.logged[k]
	if seen && now.Sub(last) < logEvery {
		c.mu.Unlock()
		return
	}
	c.logged[k] = now
	c.mu.Unlock()
	c.log.Warn("shared state unavailable; degrading", "feature", feature, "op", op, "redis", c.Options().Addr, "err", err)
}
