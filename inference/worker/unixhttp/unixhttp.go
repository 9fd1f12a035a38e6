// Package unixhttp is an HTTP/1.1 client transport (http.RoundTripper) for
// one Unix socket: how the router reaches the model runtime workers it runs
// on its own host. net/http's Transport hands each request to a writer
// goroutine and its answer back from a reader goroutine; on a small machine
// those two hand-offs cost more than the worker's own work on a short input.
// This transport writes the request and reads the answer on the caller's
// goroutine, over kept-alive connections.
//
// It speaks what a worker needs and no more: HTTP/1.1 without proxies, TLS,
// compression negotiation, 1xx answers or protocol upgrades. A request that
// fails on a reused connection before any byte of the answer arrived (the
// worker closed it while idle, or restarted) is sent once more on a new
// connection when its body can be replayed (GetBody), as net/http does; an
// answer the worker sent before it stopped reading a request (413 to a body
// over its limit) is returned although writing the rest failed.
// Deadlines and cancellation come from the request's context and bound the
// whole exchange, the answer's body included. The package must not interpret
// answers (package inference/worker/client does).
package unixhttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// DefaultMaxIdle is how many idle connections a Transport keeps when New is
// given no number.
const DefaultMaxIdle = 64

// Transport sends every request to one Unix socket, whatever its URL's host.
type Transport struct {
	socket  string
	maxIdle int
	dialer  net.Dialer

	mu   sync.Mutex
	idle []*conn // most recently used last
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a transport to socket that keeps up to maxIdle idle
// connections (≤ 0: DefaultMaxIdle).
func New(socket string, maxIdle int) *Transport {
	if maxIdle <= 0 {
		maxIdle = DefaultMaxIdle
	}
	return &Transport{socket: socket, maxIdle: maxIdle}
}

type conn struct {
	nc       net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	deadline bool // nc has a deadline set
}

// errNothingRead marks a failure before any byte of the answer arrived.
type errNothingRead struct{ err error }

func (e errNothingRead) Error() string { return e.err.Error() }
func (e errNothingRead) Unwrap() error { return e.err }

// RoundTrip sends req and reads the answer's header; the body is read from
// the connection as the caller reads it.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("unixhttp: request has no URL")
	}
	if req.URL.Scheme != "http" {
		closeBody(req)
		return nil, fmt.Errorf("unixhttp: unsupported URL scheme %q (a worker's Unix socket speaks http)", req.URL.Scheme)
	}
	ctx := req.Context()
	for retried := false; ; retried = true {
		c, reused, err := t.get(ctx)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := t.exchange(ctx, c, req)
		if err == nil {
			return resp, nil
		}
		var nothing errNothingRead
		if !reused || retried || ctx.Err() != nil || !errors.As(err, &nothing) || (req.Body != nil && req.GetBody == nil) {
			return nil, err
		}
		// The worker closed the idle connection (or restarted): once more
		// on a new one, with the body replayed.
		again := *req
		if req.Body != nil {
			if again.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		req = &again
	}
}

// get returns an idle connection or dials a new one.
func (t *Transport) get(ctx context.Context) (*conn, bool, error) {
	t.mu.Lock()
	if n := len(t.idle); n > 0 {
		c := t.idle[n-1]
		t.idle[n-1] = nil
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		return c, true, nil
	}
	t.mu.Unlock()
	nc, err := t.dialer.DialContext(ctx, "unix", t.socket)
	if err != nil {
		return nil, false, err
	}
	return &conn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}, false, nil
}

// put keeps c for the next request, or closes it when enough are idle.
func (t *Transport) put(c *conn) {
	t.mu.Lock()
	if len(t.idle) < t.maxIdle {
		t.idle = append(t.idle, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	_ = c.nc.Close()
}

// CloseIdleConnections closes the connections no request uses (called by
// http.Client.CloseIdleConnections).
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		_ = c.nc.Close()
	}
}

// aLongTimeAgo is a deadline that has passed: it interrupts blocked reads
// and writes at once.
var aLongTimeAgo = time.Unix(1, 0)

func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request) (*http.Response, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(dl)
		c.deadline = true
	} else if c.deadline {
		_ = c.nc.SetDeadline(time.Time{})
		c.deadline = false
	}
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(aLongTimeAgo) })
	}
	fail := func(err error) error {
		stop()
		_ = c.nc.Close()
		return ctxError(ctx, err)
	}
	// Request.Write closes the request's body.
	werr := req.Write(c.bw)
	if werr == nil {
		werr = c.bw.Flush()
	}
	if werr != nil {
		// The worker may have answered before it stopped reading (413 to a
		// body over its limit, then closed the connection): that answer,
		// already in the socket's buffer, is the one to return. A
		// connection that died without answering reads EOF at once; the
		// guard only bounds the unexpected.
		if !c.deadline || time.Until(dlOf(ctx)) > earlyAnswerWait {
			_ = c.nc.SetReadDeadline(time.Now().Add(earlyAnswerWait))
		}
		if _, err := c.br.Peek(1); err != nil {
			return nil, fail(errNothingRead{werr})
		}
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, fail(werr)
		}
		resp.Body = &body{rc: resp.Body, t: t, c: c, ctx: ctx, stop: stop, keep: false}
		return resp, nil
	}
	if _, err := c.br.Peek(1); err != nil {
		return nil, fail(errNothingRead{err})
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return nil, fail(err)
	}
	resp.Body = &body{rc: resp.Body, t: t, c: c, ctx: ctx, stop: stop, keep: !resp.Close}
	return resp, nil
}

// earlyAnswerWait bounds the wait for an answer after writing the request
// failed.
const earlyAnswerWait = 5 * time.Second

// ctxError returns the context's error for an err it caused: its
// cancellation, or its deadline, which the connection reaches a moment
// before the context's own timer fires.
func ctxError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return err
}

func dlOf(ctx context.Context) time.Time {
	dl, _ := ctx.Deadline()
	return dl
}

// body is an answer's body: read to its end, it gives the connection back
// for reuse; closed before its end, it closes the connection (as the rest of
// the answer would have to be read to reuse it).
type body struct {
	rc   io.ReadCloser
	t    *Transport
	c    *conn
	ctx  context.Context
	stop func() bool
	keep bool

	once sync.Once
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.release(true)
	case err != nil:
		err = ctxError(b.ctx, err)
	}
	return n, err
}

func (b *body) Close() error {
	b.release(b.rc == http.NoBody) // an answer without a body is whole
	return nil
}

// release ends the exchange once: the connection goes back to the idle pool
// when the whole answer was read, the worker keeps it open and the context's
// cancellation did not already interrupt it; otherwise it is closed.
func (b *body) release(atEOF bool) {
	b.once.Do(func() {
		stopped := b.stop()
		if atEOF && b.keep && stopped {
			b.t.put(b.c)
			return
		}
		_ = b.c.nc.Close()
		_ = b.rc.Close() // after the close: it must not wait to drain the rest
	})
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
