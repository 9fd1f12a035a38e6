//go:build linux

package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer is an httptest server that counts the connections opened to it.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func newTestH1() *Transport {
	return New(Options{MaxIdle: 16, IdleTimeout: time.Minute, BufferSize: 4 << 10})
}

// post sends body to url through rt and returns the answer's status and body.
func post(t *testing.T, ctx context.Context, rt http.RoundTripper, url, body string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestReusesConnections(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			w.(http.Flusher).Flush() // no Content-Length: chunked
			fmt.Fprintf(w, "chunked:%s", b)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			fmt.Fprintf(w, "echo:%s", b)
		}
	})
	tr := newTestH1()
	defer tr.Close()
	for i := 0; i < 30; i++ {
		path := []string{"/", "/chunked", "/empty"}[i%3]
		status, body, err := post(t, context.Background(), tr, srv.URL+path, fmt.Sprintf(`{"n":%d}`, i))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		want := map[string]string{"/": fmt.Sprintf(`echo:{"n":%d}`, i), "/chunked": fmt.Sprintf(`chunked:{"n":%d}`, i), "/empty": ""}[path]
		if body != want || (path == "/empty") != (status == http.StatusNoContent) {
			t.Fatalf("request %d: %d %q, want %q", i, status, body, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("30 sequential requests opened %d connections, want 1", n)
	}
}

func TestConcurrent(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})
	tr := newTestH1()
	defer tr.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				want := fmt.Sprintf("%d-%d", g, i)
				if _, got, err := post(t, context.Background(), tr, srv.URL, want); err != nil || got != want {
					errs <- fmt.Errorf("got %q, %v; want %q", got, err, want)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := conns.Load(); n > 8 {
		t.Fatalf("8 concurrent clients opened %d connections", n)
	}
}

// A pooled connection the backend closed while idle (keep-alive timeout,
// restart) must not swallow the next request.
func TestSkipsClosedIdleConnections(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	})
	tr := newTestH1()
	defer tr.Close()
	for i := 0; i < 5; i++ {
		if _, body, err := post(t, context.Background(), tr, srv.URL, "x"); err != nil || body != "ok" {
			t.Fatalf("request %d: %q %v", i, body, err)
		}
		srv.CloseClientConnections()
		time.Sleep(20 * time.Millisecond) // let the FIN arrive
	}
	if n := conns.Load(); n != 5 {
		t.Fatalf("opened %d connections, want one per request after each was closed", n)
	}
}

func TestConnectionClose(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	tr := newTestH1()
	defer tr.Close()
	for i := 0; i < 3; i++ {
		if _, body, err := post(t, context.Background(), tr, srv.URL, "x"); err != nil || body != "bye" {
			t.Fatalf("%q %v", body, err)
		}
		if idleConns(tr) != 0 {
			t.Fatal("a Connection: close answer's connection went back to the pool")
		}
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("Connection: close answers reused a connection (%d dials for 3 requests)", n)
	}
}

// Cancelling the context unblocks a read in progress, and that connection
// is not reused.
func TestCancelMidBody(t *testing.T) {
	release := make(chan struct{})
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/slow" {
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		io.WriteString(w, "fast")
	})
	defer close(release)
	tr := newTestH1()
	defer tr.Close()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/slow", strings.NewReader("x"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "partial" {
		t.Fatalf("%q %v", buf, err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("read past a cancelled request without error")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancellation took %v", d)
	}
	resp.Body.Close()
	if idleConns(tr) != 0 {
		t.Fatal("a cancelled request's connection went back to the pool")
	}
	if _, body, err := post(t, context.Background(), tr, srv.URL, "y"); err != nil || body != "fast" {
		t.Fatalf("after a cancelled request: %q %v", body, err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections: the cancelled one must not be reused", n)
	}

	// A context already done fails at once, as net/http does.
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, _, err := post(t, done, tr, srv.URL, "z"); !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: %v", err)
	}
}

func TestEarlyClose(t *testing.T) {
	big := strings.Repeat("x", 256<<10)
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, big)
	})
	tr := newTestH1()
	defer tr.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 10))
	resp.Body.Close()
	if idleConns(tr) != 0 {
		t.Fatal("a half-read connection went back to the pool")
	}
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after Close succeeded")
	}
	if _, body, err := post(t, context.Background(), tr, srv.URL, "y"); err != nil || body != big {
		t.Fatalf("after an early close: %d bytes, %v", len(body), err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections: a half-read connection must not be reused", n)
	}
}

func TestInformational(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Link", "</x>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "final")
	})
	tr := newTestH1()
	defer tr.Close()
	if status, body, err := post(t, context.Background(), tr, srv.URL, "x"); err != nil || status != 200 || body != "final" {
		t.Fatalf("%d %q %v", status, body, err)
	}
}

// A backend that hangs up without answering is an error, not an empty answer.
func TestNoAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			if req, err := http.ReadRequest(br); err == nil {
				io.Copy(io.Discard, req.Body)
			}
			c.Close()
		}
	}()
	tr := newTestH1()
	defer tr.Close()
	if _, _, err := post(t, context.Background(), tr, "http://"+ln.Addr().String(), "x"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want unexpected EOF", err)
	}
}

func TestIdleLimitsAndClose(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	})
	tr := New(Options{MaxIdle: 16, IdleTimeout: 30 * time.Millisecond, BufferSize: 4 << 10})
	post(t, context.Background(), tr, srv.URL, "x")
	time.Sleep(60 * time.Millisecond)
	post(t, context.Background(), tr, srv.URL, "x")
	if n := conns.Load(); n != 2 {
		t.Fatalf("a connection idle past IdleConnTimeout was reused (%d dials)", n)
	}
	// Idle connections are closed after the timeout even with no traffic.
	deadline := time.Now().Add(2 * time.Second)
	for idleConns(tr) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := idleConns(tr); n != 0 {
		t.Fatalf("%d connections still pooled long after IdleConnTimeout", n)
	}

	// A request in flight when the pool closes finishes; its connection is
	// then closed, and the pool refuses new requests.
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "ok" {
		t.Fatalf("%q %v", b, err)
	}
	if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("read after the end: %d, %v; want 0, EOF", n, err)
	}
	resp.Body.Close()
	if len(tr.idle) != 0 {
		t.Fatal("a closed pool kept a connection")
	}
	if _, _, err := post(t, context.Background(), tr, srv.URL, "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed pool: %v", err)
	}
}

func idleConns(t *Transport) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.idle)
}
