package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/junction-router/junction/internal/h1"
)

// writeCountingConn counts the writes made on a connection.
type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// An upstream request goes out in one write on either transport: net/http
// flushes a request's head on its own first unless the body is a type it
// knows to be in memory, which costs a write and a wake-up of the backend
// per request.
func TestUpstreamRequestIsOneWrite(t *testing.T) {
	body := []byte(`{"model":"small","messages":[{"role":"user","content":"hi"}]}`)
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return writeCountingConn{c, &writes}, nil
	}
	transports := map[string]http.RoundTripper{
		"net/http": &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) }},
	}
	if h1.Supported {
		transports["h1"] = h1.New(h1.Options{Dial: dial})
	}
	for name, rt := range transports {
		for i := range 2 { // a new connection, then a pooled one
			writes.Store(0)
			h := http.Header{"Content-Type": {"application/json"}}
			resp, err := rt.RoundTrip(newUpstreamRequest(context.Background(), u, h, body))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if b := <-got; b != string(body) {
				t.Fatalf("%s: the backend read %q, want %q", name, b, body)
			}
			if n := writes.Load(); n != 1 {
				t.Errorf("%s, request %d: the request took %d writes, want 1", name, i+1, n)
			}
		}
	}
}

// The body can be read again (GetBody) and is the same bytes.
func TestUpstreamRequestGetBody(t *testing.T) {
	body := []byte(`{"a":1}`)
	u, _ := url.Parse("http://127.0.0.1:1/v1/chat/completions")
	req := newUpstreamRequest(context.Background(), u, http.Header{}, body)
	for range 2 {
		rc, err := req.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		if string(b) != string(body) {
			t.Fatalf("GetBody read %q", b)
		}
	}
	if req.ContentLength != int64(len(body)) {
		t.Fatalf("ContentLength %d", req.ContentLength)
	}
	if empty := newUpstreamRequest(context.Background(), u, http.Header{}, nil); empty.Body != http.NoBody {
		t.Fatalf("an empty body is %T, want http.NoBody", empty.Body)
	}
}
