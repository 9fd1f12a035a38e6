package gateway

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/demobackend"
	"github.com/junction-router/junction/internal/h1"
	"github.com/junction-router/junction/recipes"
)

// UpstreamOptions tune the upstream connection pools. Zero values take the
// defaults.
type UpstreamOptions struct {
	// DialTimeout bounds connecting to a backend; default 10s.
	DialTimeout time.Duration
	// MaxIdleConnsPerHost is how many keep-alive connections a backend keeps;
	// default 512. High because every in-flight stream holds a connection and
	// a burst of requests should not open new ones.
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes unused connections; default 90s.
	IdleConnTimeout time.Duration
	// Demo serves provider "demo" backends (recipes.DemoProvider, no base_url); default
	// demobackend.NewRoundTripper(demobackend.Options{}).
	Demo http.RoundTripper
	// FailureThreshold and Cooldown configure the passive health tracker.
	FailureThreshold int
	Cooldown         time.Duration
	// NetHTTPTransport makes net/http's Transport serve plain-HTTP backends
	// too. By default they get h1.Transport, which does a request's I/O on
	// the handler's goroutine (see h1transport.go); https backends, backends
	// behind a proxy and platforms without it always use net/http.
	NetHTTPTransport bool
}

// upstreamPool is one backend's connection pool.
type upstreamPool interface {
	http.RoundTripper
	CloseIdleConnections()
}

// Upstreams holds one connection pool per backend base URL. It outlives
// configuration generations: pools are looked up by URL on each request, so a
// reload that keeps a backend keeps its warm connections, and Retain closes
// those of backends no longer configured.
type Upstreams struct {
	opts   UpstreamOptions
	health *Health

	mu    sync.RWMutex
	pools map[string]upstreamPool

	// targets caches where each backend_ref's chat requests go, parsed once.
	tmu     sync.RWMutex
	targets map[targetKey]*target
}

// target is the chat URL of a backend_ref, parsed once.
type target struct {
	// url is dataplane.ChatURL's answer, as error messages show it.
	url *url.URL
	// req is what requests carry: url re-read from its string form with the
	// host's empty port removed, as http.NewRequest would make it.
	req *url.URL
	err error
}

type targetKey struct {
	base, path, format string
	demo               bool
}

// NewUpstreams returns an empty set of pools; they are created on first use.
func NewUpstreams(opts UpstreamOptions) *Upstreams {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.MaxIdleConnsPerHost <= 0 {
		opts.MaxIdleConnsPerHost = 512
	}
	if opts.IdleConnTimeout <= 0 {
		opts.IdleConnTimeout = 90 * time.Second
	}
	if opts.Demo == nil {
		opts.Demo = demobackend.NewRoundTripper(demobackend.Options{})
	}
	return &Upstreams{
		opts:    opts,
		health:  NewHealth(opts.FailureThreshold, opts.Cooldown),
		pools:   map[string]upstreamPool{},
		targets: map[targetKey]*target{},
	}
}

// Health returns the passive tracker; pass it as engine.Options.Health so
// selection avoids backends that are failing.
func (u *Upstreams) Health() *Health { return u.health }

// Retain adopts doc after an activation: the health tracker learns its models
// and the pools of backends doc no longer names are closed.
func (u *Upstreams) Retain(doc *recipes.Document) {
	u.health.SetModels(doc.Providers.Models)
	keep := map[string]bool{}
	for i := range doc.Providers.Models {
		for _, k := range backendKeys(&doc.Providers.Models[i]) {
			keep[k] = true
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, t := range u.pools {
		if !keep[k] {
			closePool(t)
			delete(u.pools, k)
		}
	}
	u.tmu.Lock()
	clear(u.targets)
	u.tmu.Unlock()
}

// target returns where chat requests for ref go, for a model of apiFormat.
func (u *Upstreams) target(ref *recipes.BackendRef, apiFormat string) *target {
	k := targetKey{base: ref.BaseURL, path: ref.ChatPath, format: strings.ToLower(apiFormat), demo: dataplane.IsDemo(ref)}
	u.tmu.RLock()
	t, ok := u.targets[k]
	u.tmu.RUnlock()
	if ok {
		return t
	}
	t = &target{}
	t.url, t.err = dataplane.ChatURL(ref, apiFormat)
	if t.err == nil {
		// http.NewRequest parsed the string form of the URL; keep doing so.
		t.req, t.err = url.Parse(t.url.String())
		if t.err == nil && strings.HasSuffix(t.req.Host, ":") {
			t.req.Host = strings.TrimSuffix(t.req.Host, ":")
		}
	}
	u.tmu.Lock()
	u.targets[k] = t
	u.tmu.Unlock()
	return t
}

// Close closes every idle connection.
func (u *Upstreams) Close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, t := range u.pools {
		closePool(t)
		delete(u.pools, k)
	}
}

// closePool closes a pool that is no longer used: its idle connections now,
// and (h1.Transport) busy ones as their requests end.
func closePool(p upstreamPool) {
	if h, ok := p.(*h1.Transport); ok {
		h.Close()
		return
	}
	p.CloseIdleConnections()
}

// transport returns the round tripper for ref.
func (u *Upstreams) transport(ref *recipes.BackendRef) http.RoundTripper {
	if dataplane.IsDemo(ref) {
		return u.opts.Demo
	}
	key := backendKey(ref)
	u.mu.RLock()
	t, ok := u.pools[key]
	u.mu.RUnlock()
	if ok {
		return t
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if t, ok = u.pools[key]; !ok {
		t = u.newPool(key)
		u.pools[key] = t
	}
	return t
}

// newPool returns the pool for the backend at base: h1.Transport for a
// plain-HTTP backend reached without a proxy, net/http's Transport otherwise.
func (u *Upstreams) newPool(base string) upstreamPool {
	dialer := &net.Dialer{Timeout: u.opts.DialTimeout, KeepAlive: 30 * time.Second}
	if h1.Supported && !u.opts.NetHTTPTransport {
		if bu, err := url.Parse(base); err == nil && bu.Scheme == "http" {
			if p, err := http.ProxyFromEnvironment(&http.Request{URL: bu}); err == nil && p == nil {
				return h1.New(h1.Options{
					Dial:    func(ctx context.Context, addr string) (net.Conn, error) { return dialer.DialContext(ctx, "tcp", addr) },
					MaxIdle: u.opts.MaxIdleConnsPerHost, IdleTimeout: u.opts.IdleConnTimeout, BufferSize: 32 << 10,
				})
			}
		}
	}
	return u.newTransport(dialer)
}

func (u *Upstreams) newTransport(dialer *net.Dialer) *http.Transport {
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		MaxIdleConns:        0, // no global cap: each pool is one backend
		MaxIdleConnsPerHost: u.opts.MaxIdleConnsPerHost,
		IdleConnTimeout:     u.opts.IdleConnTimeout,
		TLSHandshakeTimeout: 10 * time.Second,
		// HTTP/2 over TLS where the backend offers it; plain-text backends
		// (vLLM, local servers) speak HTTP/1.1 keep-alive.
		ForceAttemptHTTP2: true,
		// Compression would make the transport buffer SSE to inflate it and
		// costs CPU on what is usually a local link.
		DisableCompression: true,
		ReadBufferSize:     32 << 10,
		WriteBufferSize:    32 << 10,
	}
}

// pick returns the backend_ref to send a request for m to: the first whose
// backend is healthy, else the first (a request to a failing backend then fails
// with a clear upstream error rather than going somewhere unexpected). ok is
// false when m has no backend_refs.
func (u *Upstreams) pick(m *recipes.Model) (ref *recipes.BackendRef, ok bool) {
	if len(m.BackendRefs) == 0 {
		return nil, false
	}
	u.health.learn(m)
	for i := range m.BackendRefs {
		if u.health.BackendHealthy(backendKey(&m.BackendRefs[i])) {
			return &m.BackendRefs[i], true
		}
	}
	return &m.BackendRefs[0], true
}

// backendKey identifies a backend: its base URL without a trailing slash. All
// in-process demo backends share one key.
func backendKey(ref *recipes.BackendRef) string {
	if dataplane.IsDemo(ref) {
		return "demo:"
	}
	return strings.TrimRight(ref.BaseURL, "/")
}

func backendKeys(m *recipes.Model) []string {
	keys := make([]string, len(m.BackendRefs))
	for i := range m.BackendRefs {
		keys[i] = backendKey(&m.BackendRefs[i])
	}
	return keys
}
