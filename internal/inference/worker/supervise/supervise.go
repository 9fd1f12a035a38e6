// Package supervise runs model runtime workers for the router: it starts a
// `junction worker` process on a Unix socket in a private (0700) directory,
// restarts it when it exits or when every one of its models failed to load
// (waiting 1 s at first, doubling up to 60 s after repeated failures), and
// stops it by terminating it and killing it after 10 s. Attach connects to a
// worker an operator runs, by address, without supervising it.
//
// The package must not interpret worker answers beyond /health; callers use
// the HTTP client it gives them.
package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/junction-router/junction/internal/h1"
)

// Options configure a managed worker.
type Options struct {
	// Command runs the worker; default: this executable with the argument
	// "worker". Args are appended (model arguments and worker flags; --uds is
	// added by the supervisor).
	Command []string
	Args    []string
	Env     []string // extra environment, KEY=value
	// Dir holds the socket; it is created with mode 0700 (default: a new
	// private temporary directory, removed by Stop). An existing Dir must
	// already be 0700.
	Dir          string
	ReadyTimeout time.Duration // how long Ready waits (10m)
	MinBackoff   time.Duration // first restart wait (1s)
	MaxBackoff   time.Duration // longest restart wait (60s)
	StopGrace    time.Duration // terminate → kill (10s)
	HealthEvery  time.Duration // /health poll period (1s)
	Stderr       io.Writer     // worker's stderr (default: discarded)
	Logger       *slog.Logger
}

func (o *Options) defaults() error {
	if len(o.Command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("supervise: find this executable to run its worker: %w; set Options.Command", err)
		}
		o.Command = []string{exe, "worker"}
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.ReadyTimeout, 10*time.Minute)
	set(&o.MinBackoff, time.Second)
	set(&o.MaxBackoff, 60*time.Second)
	set(&o.StopGrace, 10*time.Second)
	set(&o.HealthEvery, time.Second)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	return nil
}

// Worker is a supervised worker process.
type Worker struct {
	opt     Options
	socket  string
	ownDir  bool
	client  *http.Client
	stopped chan struct{}
	cancel  context.CancelFunc

	mu       sync.Mutex
	cmd      *exec.Cmd
	restarts int
	pid      int
	lastExit string
}

// Start starts the worker and supervises it until Stop.
func Start(o Options) (*Worker, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	w := &Worker{opt: o, stopped: make(chan struct{})}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "junction-worker-")
		if err != nil {
			return nil, fmt.Errorf("supervise: socket directory: %w", err)
		}
		dir, w.ownDir = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("supervise: socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("supervise: make %s private: %w", dir, err)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		return nil, fmt.Errorf("supervise: socket directory %s must have mode 0700", dir)
	}
	w.socket = filepath.Join(dir, "worker.sock")
	w.client = UnixClient(w.socket)
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	if err := w.spawn(); err != nil {
		cancel()
		w.cleanup()
		return nil, err
	}
	go w.supervise(ctx)
	return w, nil
}

// UnixClient is an HTTP client whose every request goes to socket; use it with
// the base URL http://worker. On Linux its transport (internal/h1) writes each
// request and reads its answer on the caller's goroutine; elsewhere it is
// net/http's. Either keeps up to 64 idle connections.
func UnixClient(socket string) *http.Client {
	var d net.Dialer
	dial := func(ctx context.Context, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", socket) }
	if h1.Supported {
		return &http.Client{Transport: h1.New(h1.Options{Dial: dial, MaxIdle: 64})}
	}
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx, "") }}}
}

// Socket is the worker's Unix socket.
func (w *Worker) Socket() string { return w.socket }

// Client sends requests to the worker; use BaseURL for their URLs.
func (w *Worker) Client() *http.Client { return w.client }

// BaseURL is the URL prefix for requests through Client.
func (w *Worker) BaseURL() string { return "http://worker" }

// Restarts is how many times the worker was restarted.
func (w *Worker) Restarts() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.restarts
}

// PID is the running worker's process id (0 while none runs).
func (w *Worker) PID() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pid
}

func (w *Worker) spawn() error {
	args := append(append([]string{}, w.opt.Command[1:]...), w.opt.Args...)
	args = append(args, "--uds", w.socket)
	cmd := exec.Command(w.opt.Command[0], args...)
	cmd.Env = append(os.Environ(), w.opt.Env...)
	cmd.Stdout = w.opt.Stderr
	cmd.Stderr = w.opt.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("supervise: start %s: %w", w.opt.Command[0], err)
	}
	w.mu.Lock()
	w.cmd, w.pid = cmd, cmd.Process.Pid
	w.mu.Unlock()
	w.opt.Logger.Info("worker started", "pid", cmd.Process.Pid, "socket", w.socket)
	return nil
}

// supervise waits for the process to exit (or to report every model failed)
// and restarts it with backoff. The wait resets after the worker was ready.
func (w *Worker) supervise(ctx context.Context) {
	defer close(w.stopped)
	backoff := w.opt.MinBackoff
	for {
		w.mu.Lock()
		cmd := w.cmd
		w.mu.Unlock()
		exited := &exit{done: make(chan struct{})}
		go func() { exited.err = cmd.Wait(); close(exited.done) }()
		why, wasReady := w.watch(ctx, exited)
		if ctx.Err() != nil {
			w.terminate(cmd, exited)
			return
		}
		w.mu.Lock()
		w.pid, w.lastExit = 0, why
		w.mu.Unlock()
		if wasReady {
			backoff = w.opt.MinBackoff
		}
		w.opt.Logger.Warn("worker stopped; restarting", "reason", why, "wait", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, w.opt.MaxBackoff)
		for {
			if err := w.spawn(); err == nil {
				break
			} else {
				w.opt.Logger.Error("worker restart failed", "error", err, "wait", backoff)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, w.opt.MaxBackoff)
		}
		w.mu.Lock()
		w.restarts++
		w.mu.Unlock()
	}
}

// watch returns when the process exits, when its /health says every model
// failed (the process is then stopped), or when ctx ends.
func (w *Worker) watch(ctx context.Context, exited *exit) (string, bool) {
	t := time.NewTicker(w.opt.HealthEvery)
	defer t.Stop()
	ready := false
	for {
		select {
		case <-ctx.Done():
			return "stopping", ready
		case <-exited.done:
			if exited.err == nil {
				return "exited", ready
			}
			return exited.err.Error(), ready
		case <-t.C:
			st, err := w.health(ctx)
			if err != nil {
				continue
			}
			if st == "ready" || st == "degraded" {
				ready = true
			}
			if st == "failed" {
				w.mu.Lock()
				cmd := w.cmd
				w.mu.Unlock()
				w.terminate(cmd, exited)
				return "every model failed to load", ready
			}
		}
	}
}

// terminate sends SIGTERM, then SIGKILL after StopGrace, and waits.
func (w *Worker) terminate(cmd *exec.Cmd, exited *exit) {
	if cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited.done:
	case <-time.After(w.opt.StopGrace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		<-exited.done
	}
}

// exit is a process's end, seen by everyone who waits for it: watch, and
// terminate, which may run twice for one process (after /health said every
// model failed, then again when the router stops). A channel that delivered
// the exit once would leave the second waiter blocked for ever.
type exit struct {
	done chan struct{}
	err  error // cmd.Wait's, set before done is closed
}

func (w *Worker) health(ctx context.Context) (string, error) {
	return Health(ctx, w.client, w.BaseURL())
}

// Health reads a worker's /health status (ready, degraded, failed, ...).
func Health(ctx context.Context, c *http.Client, base string) (string, error) {
	h, err := HealthReport(ctx, c, base)
	return h.Status, err
}

// WorkerHealth is what a worker's /health says: its status, and why each
// model that failed to load did.
type WorkerHealth struct {
	Status string
	// Failures is "model: error" for each failed model, sorted.
	Failures []string
}

// HealthReport reads a worker's /health with its models' failures.
func HealthReport(ctx context.Context, c *http.Client, base string) (WorkerHealth, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return WorkerHealth{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return WorkerHealth{}, err
	}
	defer resp.Body.Close()
	var h struct {
		Status string `json:"status"`
		Models map[string]struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"models"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h); err != nil {
		return WorkerHealth{}, fmt.Errorf("worker /health: %w", err)
	}
	out := WorkerHealth{Status: h.Status}
	for name, m := range h.Models {
		if m.Status == "failed" {
			out.Failures = append(out.Failures, name+": "+m.Error)
		}
	}
	slices.Sort(out.Failures)
	return out, nil
}

// Ready waits until the worker's /health answers ready, or ReadyTimeout.
func (w *Worker) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.opt.ReadyTimeout)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	last := "not answering"
	for {
		if st, err := w.health(ctx); err == nil {
			if st == "ready" {
				return nil
			}
			last = st
		}
		select {
		case <-ctx.Done():
			w.mu.Lock()
			exit := w.lastExit
			w.mu.Unlock()
			if exit != "" {
				last += "; last exit: " + exit
			}
			return fmt.Errorf("worker on %s not ready after %s (%s)", w.socket, w.opt.ReadyTimeout, last)
		case <-w.stopped:
			return errors.New("worker was stopped")
		case <-t.C:
		}
	}
}

// Stop terminates the worker (kill after StopGrace), ends supervision and
// removes a directory Start created.
func (w *Worker) Stop() {
	w.cancel()
	<-w.stopped
	w.cleanup()
}

func (w *Worker) cleanup() {
	_ = os.Remove(w.socket)
	if w.ownDir {
		_ = os.RemoveAll(filepath.Dir(w.socket))
	}
}

// Remote is a worker an operator runs, reached by address.
type Remote struct {
	client *http.Client
	base   string
}

// NewRemote is the client of an operator-run worker: "unix:/path/to.sock",
// or "host:port" / "http(s)://host:port". It does not call the worker (the
// router watches its /health instead); Attach also checks that it answers.
func NewRemote(addr string) (*Remote, error) {
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		return &Remote{client: UnixClient(p), base: "http://worker"}, nil
	}
	if addr == "" {
		return nil, errors.New("supervise: empty worker address; give unix:/path or host:port")
	}
	// Many requests run at once against one worker: keep their connections.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	base := addr
	if !strings.Contains(addr, "://") {
		base = "http://" + addr
	}
	return &Remote{client: &http.Client{Transport: tr}, base: strings.TrimSuffix(base, "/")}, nil
}

// Attach connects to an operator-run worker (addresses as NewRemote takes
// them) and checks that the worker answers /health/live.
func Attach(ctx context.Context, addr string) (*Remote, error) {
	r, err := NewRemote(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/health/live", nil)
	if err != nil {
		return nil, fmt.Errorf("supervise: worker address %q: %w", addr, err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("supervise: worker at %s does not answer: %w", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("supervise: worker at %s answered /health/live with %d", addr, resp.StatusCode)
	}
	return r, nil
}

// Client sends requests to the worker; BaseURL prefixes their paths.
func (r *Remote) Client() *http.Client { return r.client }

// BaseURL is the URL prefix of the worker.
func (r *Remote) BaseURL() string { return r.base }
