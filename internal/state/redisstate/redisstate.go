// Package redisstate connects to the Redis that global.state names when the
// state of several replicas (the response cache, the rate-limit counters)
// is shared: one client from the configuration (a single server's address
// and database, or a Redis Cluster's seed addresses; a password read from
// the environment variable password_env names, TLS files, a key prefix
// every key starts with), and the errors counter
// (junction_state_errors_total{feature,op}) the shared stores record into
// when Redis does not answer, so a Redis outage is a metric and a log line,
// never a failed request.
//
// Redis Cluster. A cluster refuses a command, a transaction or a Lua script
// whose keys hash to different slots. The stores keep every key that one
// script or transaction touches in one group (Client.Group), which in
// cluster mode carries a hash tag, so the group shares a slot; keys that
// are never touched together (the response cache's entries) carry none and
// spread over the cluster's shards. A store never sends a multi-key command
// (MGET, DEL of several keys) across groups: it pipelines single-key
// commands instead, which the cluster client sends to each key's node.
// Client.ScanKeys scans every master. With one server the groups are the
// same key names as before cluster mode existed (no tag), so switching
// modes is a new key layout while upgrading keeps the old one.
//
// One round trip a request. A command a request must send before any
// effect (the rate-limit take) can ride on the request's first read
// (Deferred): both go in one pipeline, one write and one wait on one
// server; on a cluster the client sends each to its key's node in parallel.
package redisstate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// Config is global.state.redis.
type Config struct {
	// Address is the server's host:port (Mode standalone).
	Address string
	// Mode is ModeStandalone (empty: the same) or ModeCluster.
	Mode string
	// Addresses are a cluster's seed nodes (Mode cluster): one is enough
	// (a managed cluster's endpoint); the client learns the others from
	// it. With Mode cluster and no Addresses, Address is the one seed.
	Addresses   []string
	DB          int    // standalone only: a cluster has database 0 alone
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

// Modes (Config.Mode).
const (
	ModeStandalone = "standalone"
	ModeCluster    = "cluster"
)

// DefaultKeyPrefix is the key prefix when none is configured.
const DefaultKeyPrefix = "junction:"

// Client is a Redis connection pool (one server's, or a cluster's) with the
// key prefix and the errors counter of the stores built on it. Safe for
// concurrent use.
type Client struct {
	redis.UniversalClient
	Prefix  string
	cluster *redis.ClusterClient // nil for one server
	addr    string               // for messages: the address, or the seeds joined
	tls     bool                 // tls.enabled, for the advice of Ping's errors
	pwEnv   string               // password_env, for the same
	errors  *prometheus.CounterVec
	log     *slog.Logger

	mu     sync.Mutex
	logged map[string]time.Time // feature/op → when last logged

	// pipes holds pipelines for reuse (Pipelined): go-redis builds each
	// from five allocations, and a pipeline is empty again once it ran.
	pipes sync.Pool
}

// Pipelined is the embedded client's Pipelined, run on a pipeline reused
// from earlier calls: fn queues the commands, which are sent in one write
// (on a cluster, to each key's node) unless fn returns an error, and the
// pipeline holds none of them when this returns.
func (c *Client) Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	p := c.pipeline()
	defer c.release(p)
	if err := fn(p); err != nil {
		return nil, err
	}
	return p.Exec(ctx)
}

// Bound is context.WithTimeout(ctx, timeout), except that a ctx whose own
// deadline comes first is returned as it is, with a cancel that does
// nothing: WithTimeout would make a context that only cancels on return
// (four allocations), identical to ctx while the caller uses it. A
// plugin's host calls (the response cache's lookups and stores) run under
// the plugin host's per-call deadline, 250 ms, which is the stores' own
// bound too.
func Bound(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= timeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

// pipeline is an empty pipeline, one that release put back or a new one.
func (c *Client) pipeline() redis.Pipeliner {
	if p, ok := c.pipes.Get().(redis.Pipeliner); ok {
		return p
	}
	return c.UniversalClient.Pipeline()
}

// release empties p (Exec did, unless it was not called) and keeps it for
// reuse, with room for two commands: Exec hands its list of commands to
// the caller and starts the next from nothing, which queueing two commands
// one at a time (a carried take and its read) then grew twice.
func (c *Client) release(p redis.Pipeliner) {
	p.Discard()
	_ = p.BatchProcess(context.Background(), noCommands[:]...)
	p.Discard()
	c.pipes.Put(p)
}

// noCommands is what release queues and discards to give a pipeline room;
// never written.
var noCommands [2]redis.Cmder

// New builds a client from c (it does not connect: Ping does). log may be nil.
func New(c Config, log *slog.Logger) (*Client, error) {
	var seeds []string
	switch c.Mode {
	case "", ModeStandalone:
		if c.Address == "" {
			return nil, errors.New("global.state.redis.address is empty: set it to host:port of the Redis server")
		}
		if len(c.Addresses) > 0 {
			return nil, errors.New("global.state.redis.addresses lists a cluster's nodes but mode is standalone: set mode: cluster, or name the one server as address")
		}
	case ModeCluster:
		seeds = c.Addresses
		switch {
		case len(seeds) > 0 && c.Address != "":
			return nil, errors.New("global.state.redis: set address or addresses, not both: in cluster mode both name seed nodes")
		case len(seeds) == 0 && c.Address == "":
			return nil, errors.New("global.state.redis.addresses is empty: list one or more of the cluster's nodes as host:port")
		case len(seeds) == 0:
			seeds = []string{c.Address}
		}
		if c.DB != 0 {
			return nil, fmt.Errorf("global.state.redis.db is %d, but a Redis Cluster has database 0 only: remove db", c.DB)
		}
	default:
		return nil, fmt.Errorf("global.state.redis.mode must be standalone or cluster (got %q)", c.Mode)
	}
	var password string
	if c.PasswordEnv != "" {
		pw, ok := os.LookupEnv(c.PasswordEnv)
		if !ok {
			return nil, fmt.Errorf("global.state.redis.password_env names %s, which is not set in the environment: export it or remove password_env", c.PasswordEnv)
		}
		password = pw
	}
	var tc *tls.Config
	if c.TLS.Enabled {
		var err error
		if tc, err = tlsConfig(c.TLS); err != nil {
			return nil, err
		}
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
	const (
		dial = 2 * time.Second
		rw   = 500 * time.Millisecond
		pool = time.Second
	)
	cl := &Client{
		Prefix: prefix,
		addr:   c.Address,
		tls:    c.TLS.Enabled,
		pwEnv:  c.PasswordEnv,
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "junction_state_errors_total",
			Help: "Operations on the shared state (Redis) that failed, by feature and operation; the feature degraded instead (a cache miss, a rate limit failing open or closed).",
		}, []string{"feature", "op"}),
		log:    log,
		logged: map[string]time.Time{},
	}
	dialer := recentDialer(redis.NewDialer(&redis.Options{DialTimeout: dial, TLSConfig: tc}))
	if seeds == nil {
		cl.UniversalClient = redis.NewClient(&redis.Options{
			Addr: c.Address, DB: c.DB, Password: password, TLSConfig: tc, Dialer: dialer,
			DialTimeout: dial, ReadTimeout: rw, WriteTimeout: rw, PoolTimeout: pool,
			// A request does not wait out retries (go-redis's default dials
			// five times with backoff, 0.4 s on a refused connection); the
			// store degrades instead.
			MaxRetries: -1, DialerRetries: 1,
		})
		return cl, nil
	}
	// No retries, as above; redirects are still followed (the default 3),
	// so a slot that moved (resharding, a failover) is answered by its new
	// node.
	cl.cluster = redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: seeds, Password: password, TLSConfig: tc, Dialer: dialer,
		DialTimeout: dial, ReadTimeout: rw, WriteTimeout: rw, PoolTimeout: pool,
		MaxRetries: -1, DialerRetries: 1,
	})
	cl.UniversalClient, cl.addr = cl.cluster, "cluster "+strings.Join(seeds, ",")
	return cl, nil
}

// checkAfter is how long a connection goes without reading an answer
// before go-redis's pool checks it again when it is taken from the pool
// (recentConn).
const checkAfter = 100 * time.Millisecond

// recentDialer is dial (go-redis's own: the timeout, keep-alives, TLS) with
// each plain TCP connection a recentConn. A TLS connection is returned as
// it is: go-redis never checks one (it is not a syscall.Conn).
func recentDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tcp, ok := conn.(*net.TCPConn)
		if !ok {
			return conn, nil
		}
		raw, err := tcp.SyscallConn()
		if err != nil {
			return conn, nil
		}
		rc := &recentConn{TCPConn: tcp, raw: raw, recent: recentRaw{raw}}
		rc.read.Store(int64(time.Since(connEpoch)))
		return rc, nil
	}
}

// connEpoch is the origin of recentConn's times (monotonic).
var connEpoch = time.Now()

// recentConn is a connection that go-redis's pool checks only when it has
// read no answer for checkAfter. The pool checks every connection it hands
// out (connCheck: a non-blocking MSG_PEEK recvfrom on the socket, through a
// syscall.RawConn that net.TCPConn.SyscallConn allocates each time), so
// that a connection the server closed while it sat idle (its timeout, a
// restart) is dialled again instead of failing a command: a syscall and
// three allocations a command, about 2 µs here, and no option turns it
// off (docs/benchmarks.md, "Issue 18, session 17"). A connection that read
// an answer within checkAfter is handed out without the peek: the server's
// idle timeout is a whole number of seconds, so it has not closed it, and
// a close in that window otherwise (a restart, CLIENT KILL) fails the
// command as a close just after the check does (the take fails open or
// closed, the cache misses). Older connections are checked as before.
type recentConn struct {
	*net.TCPConn
	raw    syscall.RawConn // the socket's, made once: the check of a connection that waited
	recent recentRaw       // what SyscallConn hands out while the connection answered recently
	read   atomic.Int64    // when a Read last returned bytes, since connEpoch
}

// Read is the connection's, noting when it returned bytes.
func (c *recentConn) Read(b []byte) (int, error) {
	n, err := c.TCPConn.Read(b)
	if n > 0 {
		c.read.Store(int64(time.Since(connEpoch)))
	}
	return n, err
}

// SyscallConn is the socket's raw connection, whose Read (the pool's check)
// does not look at the socket when the connection read an answer within
// checkAfter.
func (c *recentConn) SyscallConn() (syscall.RawConn, error) {
	if time.Since(connEpoch)-time.Duration(c.read.Load()) < checkAfter {
		return &c.recent, nil
	}
	return c.raw, nil
}

// recentRaw is a raw connection whose Read runs nothing: the socket is
// taken to be as it was when it last answered.
type recentRaw struct{ syscall.RawConn }

func (*recentRaw) Read(func(fd uintptr) bool) error { return nil }

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

// Ping checks that Redis answers, with an error that says where it looked:
// one server answers PING; a cluster answers PING on every master and
// reports cluster_state:ok.
func (c *Client) Ping(ctx context.Context) error {
	var err error
	if c.cluster == nil {
		err = c.UniversalClient.Ping(ctx).Err()
	} else {
		// The slot map comes from a seed; the masters are then dialled at
		// the addresses it names, with the same TLS settings and password.
		err = c.cluster.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			info, err := n.ClusterInfo(ctx).Result()
			if err == nil && !strings.Contains(info, "cluster_state:ok") {
				err = errors.New("the cluster is not ok (cluster_state is not ok: slots unassigned or a shard down)")
			}
			if err != nil {
				return &nodeError{addr: n.Options().Addr, err: err}
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("redis at %s (global.state.redis) does not answer: %w%s", c.addr, err, c.advice(err))
	}
	return nil
}

// nodeError is the error of a cluster's node at an address the slot map
// named (a seed answered it), as opposed to a seed's own.
type nodeError struct {
	addr string
	err  error
}

func (e *nodeError) Error() string { return "node " + e.addr + ": " + e.err.Error() }
func (e *nodeError) Unwrap() error { return e.err }

// advice is what to do about err, the error of a connection or a PING,
// where its cause is a setting ("" where it is not): a certificate the
// client does not trust, a TLS client talking to a plain port or the
// other way round, a missing client certificate or password, a TLS
// cluster that announces its plain ports.
func (c *Client) advice(err error) string {
	var (
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		plainReply tls.RecordHeaderError
		node       *nodeError
	)
	msg := err.Error()
	// A plain server reads a ClientHello as the start of an inline command
	// and waits for its end: the handshake times out.
	timedOut := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || strings.Contains(msg, "i/o timeout")
	switch {
	case errors.As(err, &unknownCA):
		return "; the server's certificate is not signed by a CA the client trusts: set global.state.redis.tls.ca_file to the CA certificate that signed it"
	case errors.As(err, &hostname):
		return "; the server's certificate does not name the host the address names: connect by a name or IP the certificate lists, or reissue the certificate"
	case errors.As(err, &invalid):
		return "; the server's certificate is not valid (expired, or not for a server): renew it"
	case c.tls && errors.As(err, &node) && (errors.As(err, &plainReply) || timedOut):
		// The seed spoke TLS, so tls.enabled is right: the slot map named
		// a port that does not. A node with tls-cluster no announces its
		// plain port (port) even to a TLS client.
		return fmt.Sprintf("; a seed answered over TLS, but node %s, at the port the cluster announces, did not complete a TLS handshake: "+
			"if the nodes serve TLS on a port other than the one they announce, run every redis-server with tls-cluster yes (and tls-replication yes), so the cluster announces its TLS ports", node.addr)
	case errors.As(err, &plainReply):
		return "; the server does not speak TLS on that port: set global.state.redis.tls.enabled: false, or use the server's TLS port"
	case strings.Contains(msg, "remote error: tls:"):
		return "; the server refused the TLS handshake: if it requires client certificates (tls-auth-clients yes), set global.state.redis.tls.cert_file and key_file to a certificate its CA signed"
	case strings.Contains(msg, "NOAUTH") && c.pwEnv == "":
		return "; the server requires a password: set global.state.redis.password_env to the environment variable that holds it"
	case strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "invalid password"):
		return fmt.Sprintf("; the server refuses the password in %s: set it to the server's password (requirepass)", c.pwEnv)
	case c.tls && timedOut:
		return "; the TLS handshake got no answer: if the server does not speak TLS on that port, set global.state.redis.tls.enabled: false, or use the server's TLS port"
	case !c.tls && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, os.ErrDeadlineExceeded) ||
		strings.Contains(msg, "i/o timeout") || strings.Contains(msg, "connection reset")):
		return "; the server closed the connection or did not answer: if it serves TLS on that port, set global.state.redis.tls.enabled: true"
	}
	return ""
}

// Addr says where the client connects, for messages: the server's address,
// or "cluster" and the seed addresses.
func (c *Client) Addr() string { return c.addr }

// Cluster reports whether the client is a Redis Cluster's.
func (c *Client) Cluster() bool { return c.cluster != nil }

// Group is the start of the names of a group of keys that a script or a
// transaction touches together: Prefix and name, with name as a hash tag
// in cluster mode ({name}), so the group's keys share a slot. With one
// server it is Prefix+name, the names the stores always used. (A key
// prefix that holds a hash tag of its own puts every key in its slot,
// which works too, on one shard.)
func (c *Client) Group(name string) string {
	if c.cluster == nil {
		return c.Prefix + name
	}
	return c.Prefix + "{" + name + "}"
}

// ScanKeys calls f with the keys matching the SCAN pattern match, count at
// a time or fewer, on every master of a cluster (one at a time: f need not
// be safe for concurrent use) or on the one server.
func (c *Client) ScanKeys(ctx context.Context, match string, count int, f func(keys []string) error) error {
	scan := func(ctx context.Context, n redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := n.Scan(ctx, cursor, match, int64(count)).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				if err := f(keys); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	if c.cluster == nil {
		return scan(ctx, c.UniversalClient)
	}
	var mu sync.Mutex
	return c.cluster.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		return scan(ctx, n)
	})
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
	c.log.Warn("shared state unavailable; degrading", "feature", feature, "op", op, "redis", c.addr, "err", err)
}
