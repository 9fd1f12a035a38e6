// Package h1 is an HTTP/1.1 keep-alive client transport (http.RoundTripper)
// that does all of a request's I/O on the calling goroutine. The gateway
// uses it for plain-HTTP backends and the router for the model workers it
// runs on Unix sockets.
//
// net/http's Transport gives every connection a reader and a writer
// goroutine: a request hands its body to the writer, waits for the reader to
// hand back the response, and the reader waits again for the body to be
// consumed before pooling the connection. Each hand-off can wake another OS
// thread, and on loopback to a local model server those wake-ups, not the
// bytes, are most of what forwarding a request costs. Here the caller writes
// the request, reads the answer and returns the connection to the pool
// itself; the netpoller wakes it once, when the server answers.
//
// It serves only what it can serve as net/http would: plain http:// without
// a proxy, HTTP/1.1, requests with a known length. A pooled connection the
// server has closed (a keep-alive timeout, a restart) is found out before a
// request is written on it, by a non-blocking peek at the socket; that needs
// Linux (Supported), and elsewhere callers use net/http's Transport. A
// request's context cancels it by expiring the connection's deadline, which
// unblocks a read or write in progress; such a connection is never reused.
// The package must not interpret answers.
package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Options configure a Transport.
type Options struct {
	// Dial opens a connection for a request to addr (its URL's host:port,
	// the scheme's default port filled in). Nil dials TCP.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// MaxIdle is how many idle connections are kept (default 64).
	MaxIdle int
	// IdleTimeout closes connections idle for longer (default 90 s).
	IdleTimeout time.Duration
	// BufferSize is each connection's read and write buffer (default 32 KiB).
	BufferSize int
}

// Transport is the keep-alive pool; see the package comment.
type Transport struct {
	dial        func(ctx context.Context, addr string) (net.Conn, error)
	maxIdle     int
	idleTimeout time.Duration
	bufSize     int

	mu     sync.Mutex
	idle   []*conn     // most recently used last
	reaper *time.Timer // closes connections idle past idleTimeout
	closed bool
}

var _ http.RoundTripper = (*Transport)(nil)

// conn is one connection to the server.
type conn struct {
	t        *Transport
	nc       net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	idleAt   time.Time
	liveness func() bool // reports whether an idle connection is still open
}

// New returns a transport.
func New(o Options) *Transport {
	t := &Transport{dial: o.Dial, maxIdle: o.MaxIdle, idleTimeout: o.IdleTimeout, bufSize: o.BufferSize}
	if t.dial == nil {
		var d net.Dialer
		t.dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	if t.maxIdle <= 0 {
		t.maxIdle = 64
	}
	if t.idleTimeout <= 0 {
		t.idleTimeout = 90 * time.Second
	}
	if t.bufSize <= 0 {
		t.bufSize = 32 << 10
	}
	return t
}

// ErrClosed is returned by a transport whose pool was closed (Close) while
// a request was being set up.
var ErrClosed = errors.New("connection pool closed")

// aLongTimeAgo is a deadline that has passed: setting it makes blocked reads
// and writes return at once.
var aLongTimeAgo = time.Unix(1, 0)

// RoundTrip implements http.RoundTripper. Nothing is retried: a pooled connection the backend has closed is found
// out before the request is written (liveness), and a request that was
// written is not sent twice, as net/http does not resend a POST.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("h1: request has no URL")
	}
	if req.URL.Scheme != "http" {
		closeBody(req)
		return nil, fmt.Errorf("h1: unsupported URL scheme %q (this transport speaks plain http:// only)", req.URL.Scheme)
	}
	ctx := req.Context()
	if ctx.Err() != nil {
		closeBody(req)
		return nil, context.Cause(ctx)
	}
	c, err := t.get(ctx, canonicalAddr(req))
	if err != nil {
		closeBody(req)
		return nil, err
	}
	return c.roundTrip(ctx, req)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// conn returns an idle connection that is still open, else a new one.
func (t *Transport) get(ctx context.Context, addr string) (*conn, error) {
	now := time.Now()
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, ErrClosed
		}
		n := len(t.idle)
		if n == 0 {
			t.mu.Unlock()
			break
		}
		c := t.idle[n-1]
		t.idle[n-1] = nil
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		if now.Sub(c.idleAt) > t.idleTimeout || c.br.Buffered() > 0 || !c.liveness() {
			_ = c.nc.Close()
			continue
		}
		return c, nil
	}
	return t.newConn(ctx, addr)
}

func (t *Transport) newConn(ctx context.Context, addr string) (*conn, error) {
	nc, err := t.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	c := &conn{t: t, nc: nc, br: bufio.NewReaderSize(nc, t.bufSize), bw: bufio.NewWriterSize(nc, t.bufSize)}
	c.liveness = connLiveness(nc)
	return c, nil
}

// put returns a connection whose exchange ended cleanly to the pool.
func (t *Transport) put(c *conn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	if t.closed || len(t.idle) >= t.maxIdle {
		t.mu.Unlock()
		_ = c.nc.Close()
		return
	}
	t.idle = append(t.idle, c)
	if t.reaper == nil {
		t.reaper = time.AfterFunc(t.idleTimeout, t.reap)
	}
	t.mu.Unlock()
}

// reap closes the connections idle for longer than idleTimeout, so that a
// burst's extra connections do not stay open (and half-closed once the
// backend times them out) while later traffic reuses only the newest ones.
func (t *Transport) reap() {
	now := time.Now()
	t.mu.Lock()
	n := 0
	for n < len(t.idle) && now.Sub(t.idle[n].idleAt) >= t.idleTimeout {
		n++
	}
	expired := append([]*conn(nil), t.idle[:n]...)
	rest := copy(t.idle, t.idle[n:])
	clear(t.idle[rest:])
	t.idle = t.idle[:rest]
	if len(t.idle) > 0 && !t.closed {
		// The oldest connection left is the next to expire.
		t.reaper.Reset(t.idle[0].idleAt.Add(t.idleTimeout).Sub(now))
	} else {
		t.reaper = nil
	}
	t.mu.Unlock()
	for _, c := range expired {
		_ = c.nc.Close()
	}
}

// CloseIdleConnections closes the pooled connections; connections in use
// are closed when their exchange ends.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		_ = c.nc.Close()
	}
}

// Close closes the pool for good: idle connections now, busy ones when done.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	if t.reaper != nil {
		t.reaper.Stop()
		t.reaper = nil
	}
	t.mu.Unlock()
	t.CloseIdleConnections()
}

// roundTrip sends req on c and reads the answer's head. The body is read by
// the caller through the returned response; c goes back to the pool when
// the body has been read to its end, or is closed otherwise.
func (c *conn) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	// Cancellation: expire the deadline so blocked I/O returns.
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = c.nc.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	keep := true
	werr := req.Write(c.bw)
	if werr == nil {
		werr = c.bw.Flush()
	}
	if werr != nil {
		if ctx.Err() != nil {
			return fail(werr)
		}
		// A backend may answer and hang up before reading all of a body
		// (a 413, say); that answer is the better error, so look for it
		// briefly, as net/http's transport does, before reporting the
		// write failure. The connection is not reused either way.
		keep = false
		_ = c.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		resp, err := c.readResponse(req)
		if err != nil {
			return fail(werr)
		}
		_ = c.nc.SetReadDeadline(time.Time{})
		if ctx.Err() != nil {
			// Cancelled meanwhile: keep the deadline the cancellation set.
			_ = c.nc.SetDeadline(aLongTimeAgo)
		}
		return c.answer(req, resp, stop, keep)
	}
	resp, err := c.readResponse(req)
	if err != nil {
		return fail(err)
	}
	return c.answer(req, resp, stop, keep)
}

// readResponse reads the final answer's head, skipping 1xx informational
// answers as net/http's transport does.
func (c *conn) readResponse(req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			if errors.Is(err, io.EOF) {
				// The backend closed the connection without answering.
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode <= 199 {
			if resp.StatusCode == http.StatusSwitchingProtocols {
				return nil, errors.New("upstream answered 101 Switching Protocols to a chat request")
			}
			continue
		}
		return resp, nil
	}
}

// answer hands resp to the caller with a body that releases c at its end.
func (c *conn) answer(req *http.Request, resp *http.Response, stop func() bool, keep bool) (*http.Response, error) {
	keep = keep && !resp.Close && !req.Close
	if resp.Body == nil || resp.Body == http.NoBody {
		resp.Body = http.NoBody
		c.finish(stop, keep)
		return resp, nil
	}
	resp.Body = &body{c: c, body: resp.Body, stop: stop, keep: keep}
	return resp, nil
}

// finish ends an exchange: the connection goes back to the pool when the
// exchange ended cleanly and the request's context never touched it.
func (c *conn) finish(stop func() bool, keep bool) {
	if stop() && keep {
		c.t.put(c)
		return
	}
	_ = c.nc.Close()
}

// body is a response body that releases its connection at its end. Close
// may be called while a Read is blocked: it closes the connection, which
// ends the Read.
type body struct {
	c    *conn
	body io.ReadCloser
	stop func() bool
	keep bool

	mu   sync.Mutex
	done bool // the connection has been released or closed
	eof  bool // ... because the body was read to its end
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	done, eof := b.done, b.eof
	b.mu.Unlock()
	if eof {
		return 0, io.EOF
	}
	if done {
		return 0, errBodyClosed
	}
	n, err := b.body.Read(p)
	if err == nil {
		return n, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		// Closed while reading; the connection is already gone.
		return n, err
	}
	b.done = true
	if err == io.EOF {
		b.eof = true
		b.c.finish(b.stop, b.keep)
		return n, io.EOF
	}
	b.stop()
	_ = b.c.nc.Close()
	return n, err
}

// Close before the end closes the connection: what is left of the body is
// not worth reading (net/http's transport does the same).
func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil
	}
	b.done = true
	b.stop()
	return b.c.nc.Close()
}

var errBodyClosed = errors.New("http: read on closed response body")

// canonicalAddr is req's host:port, with the scheme's default port.
func canonicalAddr(req *http.Request) string {
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port)
}
