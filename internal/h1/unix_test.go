//go:build linux

package h1_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/h1"
)

// unix is a transport to one Unix socket, as the router reaches the
// workers it runs (whatever a request's host).
func unix(socket string, maxIdle int) *h1.Transport {
	var d net.Dialer
	return h1.New(h1.Options{MaxIdle: maxIdle, Dial: func(ctx context.Context, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", socket)
	}})
}

// server is a real HTTP server on a Unix socket that counts the
// connections it accepted.
type server struct {
	socket string
	hs     *http.Server
	conns  atomic.Int64
}

func serve(t testing.TB, h http.Handler) *server {
	t.Helper()
	dir, err := os.MkdirTemp("", "uh") // short: socket paths are limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &server{socket: filepath.Join(dir, "s.sock")}
	s.start(t, h)
	return s
}

func (s *server) start(t testing.TB, h http.Handler) {
	t.Helper()
	l, err := net.Listen("unix", s.socket)
	if err != nil {
		t.Fatal(err)
	}
	s.hs = &http.Server{Handler: h, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}}
	go func() { _ = s.hs.Serve(l) }()
	hs := s.hs
	t.Cleanup(func() { _ = hs.Close() })
}

// echo answers the request's method, path, a header and body.
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Seen", r.Header.Get("X-Send"))
	fmt.Fprintf(w, "%s %s %s %s", r.Method, r.URL.RequestURI(), r.Host, b)
}

func do(t testing.TB, c *http.Client, ctx context.Context, method, url, body string) (*http.Response, string, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Send", "v")
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestRequestsReuseOneConnection(t *testing.T) {
	s := serve(t, http.HandlerFunc(echo))
	c := &http.Client{Transport: unix(s.socket, 0)}
	for i := range 5 {
		resp, got, err := do(t, c, context.Background(), http.MethodPost, "http://worker/v1/x?q=1", fmt.Sprint("body", i))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("POST /v1/x?q=1 worker body%d", i); got != want || resp.StatusCode != 200 || resp.Header.Get("X-Seen") != "v" {
			t.Fatalf("answer %d %q %v; want %q", resp.StatusCode, got, resp.Header, want)
		}
	}
	if _, got, err := do(t, c, context.Background(), http.MethodGet, "http://worker/health", ""); err != nil || got != "GET /health worker " {
		t.Fatalf("GET: %q %v", got, err)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections for sequential requests; want 1 kept alive", n)
	}
}

// TestLargeAndChunkedAnswers reads answers the server streams in chunks and
// one larger than any buffer, and reuses the connection after each.
func TestLargeAndChunkedAnswers(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), 100_000)
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			for i := range 3 {
				fmt.Fprintf(w, "part%d;", i)
				w.(http.Flusher).Flush()
			}
			return
		}
		_, _ = w.Write(big)
	}))
	c := &http.Client{Transport: unix(s.socket, 0)}
	for range 2 {
		resp, got, err := do(t, c, context.Background(), http.MethodGet, "http://worker/chunked", "")
		if err != nil || got != "part0;part1;part2;" || len(resp.TransferEncoding) == 0 {
			t.Fatalf("chunked: %q %v %v", got, err, resp)
		}
		if _, got, err = do(t, c, context.Background(), http.MethodGet, "http://worker/big", ""); err != nil || got != string(big) {
			t.Fatalf("big: %d bytes, %v", len(got), err)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections; want 1", n)
	}
}

// TestWorkerRestart restarts the server between requests: the idle
// connection is dead, and the request goes on a new one.
func TestWorkerRestart(t *testing.T) {
	s := serve(t, http.HandlerFunc(echo))
	c := &http.Client{Transport: unix(s.socket, 0)}
	if _, _, err := do(t, c, context.Background(), http.MethodPost, "http://worker/a", "one"); err != nil {
		t.Fatal(err)
	}
	_ = s.hs.Close()
	_ = os.Remove(s.socket)
	s.start(t, http.HandlerFunc(echo))
	_, got, err := do(t, c, context.Background(), http.MethodPost, "http://worker/a", "two")
	if err != nil || got != "POST /a worker two" {
		t.Fatalf("after a restart: %q %v", got, err)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("%d connections; want 2", n)
	}
}

// TestOneShotBodyAfterRestart: the closed connection is found out before
// the request is written on it, so even a body that cannot be sent twice
// goes, on a new connection.
func TestOneShotBodyAfterRestart(t *testing.T) {
	s := serve(t, http.HandlerFunc(echo))
	c := &http.Client{Transport: unix(s.socket, 0)}
	if _, _, err := do(t, c, context.Background(), http.MethodGet, "http://worker/a", ""); err != nil {
		t.Fatal(err)
	}
	_ = s.hs.Close()
	_ = os.Remove(s.socket)
	s.start(t, http.HandlerFunc(echo))
	req, _ := http.NewRequest(http.MethodPost, "http://worker/a", io.NopCloser(strings.NewReader("x")))
	req.ContentLength = 1
	if req.GetBody != nil {
		t.Fatal("test needs a body without GetBody")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("a one-shot body after a restart: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "POST /a worker x" || s.conns.Load() != 2 {
		t.Fatalf("answer %q over %d connections; want 2", b, s.conns.Load())
	}
}

func TestContextBoundsTheExchange(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/slow-body":
			_, _ = w.Write([]byte("first"))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		default:
			echo(w, r)
		}
	}))
	c := &http.Client{Transport: unix(s.socket, 0)}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, _, err := do(t, c, ctx, http.MethodPost, "http://worker/slow", "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel2)
	if _, _, err := do(t, c, ctx2, http.MethodGet, "http://worker/slow", ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
	// Cancelled while the body streams: the read fails.
	ctx3, cancel3 := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx3, http.MethodGet, "http://worker/slow-body", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel3)
	if b, err := io.ReadAll(resp.Body); err == nil || string(b) != "first" {
		t.Fatalf("body read after cancel: %q %v", b, err)
	}
	resp.Body.Close()
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("cancelled requests took %s", d)
	}
	// Connections interrupted are not reused; the next request works.
	before := s.conns.Load()
	if _, got, err := do(t, c, context.Background(), http.MethodGet, "http://worker/a", ""); err != nil || got != "GET /a worker " {
		t.Fatalf("after cancellations: %q %v", got, err)
	}
	if s.conns.Load() != before+1 {
		t.Fatalf("a connection an interrupted request used was reused")
	}
	// A deadline set for one request does not stay on the connection.
	ctx4, cancel4 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if _, _, err := do(t, c, ctx4, http.MethodGet, "http://worker/a", ""); err != nil {
		t.Fatal(err)
	}
	cancel4()
	time.Sleep(150 * time.Millisecond)
	if _, _, err := do(t, c, context.Background(), http.MethodGet, "http://worker/a", ""); err != nil {
		t.Fatalf("a past request's deadline failed the next one: %v", err)
	}
}

// TestEarlyCloseAndConnectionClose: a body closed before its end, and an
// answer with Connection: close, end their connections.
func TestEarlyCloseAndConnectionClose(t *testing.T) {
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		_, _ = w.Write(bytes.Repeat([]byte("x"), 10_000))
	}))
	c := &http.Client{Transport: unix(s.socket, 0)}
	req, _ := http.NewRequest(http.MethodGet, "http://worker/a", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = resp.Body.Read(make([]byte, 10))
	resp.Body.Close()
	if _, _, err := do(t, c, context.Background(), http.MethodGet, "http://worker/close", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := do(t, c, context.Background(), http.MethodGet, "http://worker/a", ""); err != nil {
		t.Fatal(err)
	}
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("%d connections; want 3 (early close, Connection: close, then a new one)", n)
	}
}

// TestEarlyAnswerToALargeBody: a worker that refuses a body over its limit
// answers 413 and closes the connection while the request is still being
// written; the caller gets that answer, not a write error.
func TestEarlyAnswerToALargeBody(t *testing.T) {
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1024)); err != nil {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	c := &http.Client{Transport: unix(s.socket, 0)}
	for range 3 { // also on a reused connection
		if _, got, err := do(t, c, context.Background(), http.MethodPost, "http://worker/a", "small"); err != nil || got != "ok" {
			t.Fatalf("small body: %q %v", got, err)
		}
		resp, got, err := do(t, c, context.Background(), http.MethodPost, "http://worker/a", strings.Repeat("x", 8<<20))
		if err != nil {
			t.Fatalf("large body: %v", err)
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(got, "too large") {
			t.Fatalf("large body answered %d %q", resp.StatusCode, got)
		}
	}
}

func TestErrors(t *testing.T) {
	c := &http.Client{Transport: unix(filepath.Join(t.TempDir(), "none.sock"), 0)}
	if _, _, err := do(t, c, context.Background(), http.MethodGet, "http://worker/a", ""); err == nil || !strings.Contains(err.Error(), "none.sock") {
		t.Fatalf("no socket: %v", err)
	}
	if _, _, err := do(t, c, context.Background(), http.MethodGet, "https://worker/a", ""); err == nil || !strings.Contains(err.Error(), "scheme") {
		t.Fatalf("https: %v", err)
	}
}

func TestConcurrentRequests(t *testing.T) {
	s := serve(t, http.HandlerFunc(echo))
	tr := unix(s.socket, 16)
	c := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				body := fmt.Sprintf("g%d-%d", g, i)
				_, got, err := do(t, c, context.Background(), http.MethodPost, "http://worker/c", body)
				if err == nil && got != "POST /c worker "+body {
					err = fmt.Errorf("answer %q for %s", got, body)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c.CloseIdleConnections()
	if n := s.conns.Load(); n > 16 {
		t.Fatalf("%d connections for 16 concurrent clients", n)
	}
}

// BenchmarkRoundTrip compares one small POST round trip over a Unix socket
// through net/http's Transport and through h1's, alternating per
// request in the same process; it reports the median of each and their
// ratio. The handler answers at once, or after keeping its thread busy for
// 100 µs, as a worker's forward pass does: the client's threads fall asleep
// meanwhile, and waking them is part of the cost of any hop.
func BenchmarkRoundTrip(b *testing.B) {
	for _, busy := range []time.Duration{0, 100 * time.Microsecond} {
		b.Run(fmt.Sprintf("handler=%s", busy), func(b *testing.B) { benchRoundTrip(b, busy) })
	}
}

func benchRoundTrip(b *testing.B, busy time.Duration) {
	answer := []byte(`{"object":"list","model":"m","results":[{"index":0,"label":"benign","score":0.9}]}`)
	s := serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for t0 := time.Now(); time.Since(t0) < busy; {
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	var d net.Dialer
	std := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", s.socket) }}}
	own := &http.Client{Transport: unix(s.socket, 64)}
	body := []byte(`{"model":"m","input":["` + strings.Repeat("word ", 40) + `"],"options":{}}`)
	call := func(c *http.Client) time.Duration {
		t0 := time.Now()
		req, _ := http.NewRequest(http.MethodPost, "http://worker/v1/classify", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		return time.Since(t0)
	}
	var ds, do []time.Duration
	b.ResetTimer()
	for range b.N {
		ds = append(ds, call(std))
		do = append(do, call(own))
	}
	b.StopTimer()
	slices.Sort(ds)
	slices.Sort(do)
	ms, mo := ds[len(ds)/2], do[len(do)/2]
	b.ReportMetric(float64(ms)/1e3, "nethttp-µs")
	b.ReportMetric(float64(mo)/1e3, "h1-µs")
	b.ReportMetric(float64(mo)/float64(ms), "h1/nethttp")
}
