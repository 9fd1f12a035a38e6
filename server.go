package junction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/junction-router/junction/internal/extproc"
)

// Server is one Junction: its gateway listeners, Envoy ext_proc hook,
// management API, metrics, model deployments, plugin system and stored
// data. Make one
// with New, serve with Run, stop with Shutdown (or by ending Run's context).
type Server struct {
	opts Options
	log  *slog.Logger
	reg  *prometheus.Registry

	quit     chan struct{} // closed by Shutdown
	done     chan struct{} // closed when Run returns
	ready    chan struct{} // closed when serving, or when Run returns
	readyOne sync.Once

	mu      sync.Mutex
	started bool              // Run was called
	shut    bool              // Shutdown was called
	addrs   map[string]string // listener → bound address
	mgmt    http.Handler
}

// New checks o and returns a Server that Run starts. Nothing is opened yet.
func New(o Options) (*Server, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	s := &Server{opts: o, log: o.Logger, reg: o.Registry, quit: make(chan struct{}), done: make(chan struct{}),
		ready: make(chan struct{}), addrs: map[string]string{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if s.opts.WorkerStderr == nil {
		s.opts.WorkerStderr = os.Stderr
	}
	return s, nil
}

// Run starts every part and serves until ctx ends or Shutdown is called,
// then finishes the requests in flight (up to 10 s) and closes everything.
// It returns nil after such a stop (at once when Shutdown came first), and
// the error when a part fails to start or a listener fails. A Server runs
// once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.shut && !s.started:
		s.mu.Unlock()
		return nil
	case s.started:
		s.mu.Unlock()
		return errors.New("junction: this Server has already run; make another with New")
	}
	s.started = true
	s.mu.Unlock()
	defer close(s.done)
	defer s.markReady()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	return s.run(ctx)
}

// Shutdown stops a running Server as the end of Run's context does, and
// waits until Run has returned or ctx ends. Before Run it only makes Run
// return at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.shut {
		s.shut = true
		close(s.quit)
	}
	started := s.started
	s.mu.Unlock()
	if !started {
		s.markReady()
		return nil
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Ready is closed once every listener is open and the configuration
// serves, or when Run returns without getting there.
func (s *Server) Ready() <-chan struct{} { return s.ready }

func (s *Server) markReady() { s.readyOne.Do(func() { close(s.ready) }) }

// GatewayAddr is the bound host:port of the configuration's first gateway
// listener (the port chosen when its address ends in :0), or "" before
// Ready or without one.
func (s *Server) GatewayAddr() string { return s.addr(firstGateway) }

// ManagementAddr is the management API's bound host:port, or "".
func (s *Server) ManagementAddr() string { return s.addr("management") }

// ExtprocAddr is the ext_proc hook's bound host:port, or "".
func (s *Server) ExtprocAddr() string { return s.addr("ext_proc") }

// MetricsAddr is the /metrics listener's bound host:port, or "".
func (s *Server) MetricsAddr() string { return s.addr("metrics") }

// ManagementHandler is the management API (also served on ManagementAddr),
// or nil before Ready or when it is off: an embedder may mount it itself.
func (s *Server) ManagementHandler() http.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mgmt
}

// firstGateway keys the first gateway listener's address.
const firstGateway = "gateway"

func (s *Server) addr(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[name]
}

func (s *Server) setAddr(name, addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.addrs[name]; !ok {
		s.addrs[name] = addr
	}
}

// listeners are what one Run opened, closed on a failed start or a stop.
type listeners struct {
	log      *slog.Logger
	servers  []*http.Server
	lns      []net.Listener // closed directly on a failed start: Serve may not hold them yet
	grpc     *grpc.Server
	health   *health.Server
	errc     chan error
	recorded func(name, addr string)
}

// http opens addr and serves h on it; the bound address is recorded.
func (l *listeners) http(name, addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s listener on %s: %w (is another process using the port?)", name, addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(l.log.Handler(), slog.LevelWarn),
	}
	l.servers = append(l.servers, srv)
	l.lns = append(l.lns, ln)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			l.errc <- fmt.Errorf("%s listener: %w", name, err)
		}
	}()
	bound := ln.Addr().String()
	l.recorded(name, bound)
	return bound, nil
}

// abandon closes what a start that failed half-way had opened.
func (l *listeners) abandon() {
	for _, s := range l.servers {
		_ = s.Shutdown(context.Background())
	}
	for _, ln := range l.lns {
		_ = ln.Close()
	}
	if l.grpc != nil {
		l.grpc.Stop()
	}
}

// stop finishes the requests in flight, up to 10 s.
func (l *listeners) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		if l.grpc != nil {
			extproc.Shutdown(ctx, l.grpc, l.health)
		}
		close(done)
	}()
	for _, s := range l.servers {
		_ = s.Shutdown(ctx)
	}
	<-done
}
