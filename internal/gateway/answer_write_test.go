package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/respcache"
)

// countingListener hands out connections that count their writes.
type countingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := new(atomic.Int64)
	l.mu.Lock()
	l.conns = append(l.conns, n)
	l.mu.Unlock()
	return writeCountingConn{c, n}, nil
}

func (l *countingListener) last() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[len(l.conns)-1].Load()
}

// An answer the gateway gives without forwarding (a response cache hit, the
// model list, a request the data plane refuses) goes to the client with its
// length, in one write: flushed without one, net/http chunks it, and the
// last chunk, which the client waits for, is written only once the handler
// has done its bookkeeping, a second write.
func TestAnswerWithoutBackendIsOneWrite(t *testing.T) {
	gw := sharedStateGateway(t, respcache.NewMemory(respcache.Options{}), ratelimit.New(nil, nil), 1000,
		countingUpstream{fixedUpstream{storableAnswer}, &atomic.Int64{}})
	srv := httptest.NewUnstartedServer(gw)
	ln := &countingListener{Listener: srv.Listener}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	// A connection per request: each answer's writes are its connection's.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	send := func(method, path, body string) (*http.Response, []byte, int64) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b, ln.last()
	}
	question := `{"model":"MoM","messages":[{"role":"user","content":"What is the capital of France?"}]}`
	if resp, _, _ := send(http.MethodPost, "/v1/chat/completions", question); resp.StatusCode != http.StatusOK {
		t.Fatalf("the first question: status %d", resp.StatusCode)
	}
	// The answer is stored beside the request: ask until it is a hit.
	var hit *http.Response
	var hitBody []byte
	var hitWrites int64
	deadline := time.Now().Add(5 * time.Second)
	for hit == nil {
		resp, b, n := send(http.MethodPost, "/v1/chat/completions", question)
		if resp.Header.Get("X-Cache-Status") == "hit" {
			hit, hitBody, hitWrites = resp, b, n
		} else if time.Now().After(deadline) {
			t.Fatalf("no cache hit: X-Cache-Status %q", resp.Header.Get("X-Cache-Status"))
		}
	}
	models, modelsBody, modelsWrites := send(http.MethodGet, "/v1/models", "")
	bad, badBody, badWrites := send(http.MethodPost, "/v1/chat/completions", `{"model":`)
	for _, c := range []struct {
		name   string
		status int
		resp   *http.Response
		body   []byte
		writes int64
	}{
		{"cache hit", http.StatusOK, hit, hitBody, hitWrites},
		{"model list", http.StatusOK, models, modelsBody, modelsWrites},
		{"unparsable request", http.StatusBadRequest, bad, badBody, badWrites},
	} {
		if c.resp.StatusCode != c.status || len(c.body) == 0 {
			t.Errorf("%s: status %d, %d body bytes", c.name, c.resp.StatusCode, len(c.body))
		}
		if c.resp.ContentLength != int64(len(c.body)) || len(c.resp.TransferEncoding) > 0 {
			t.Errorf("%s: Content-Length %d, transfer encoding %v, for a body of %d bytes", c.name, c.resp.ContentLength, c.resp.TransferEncoding, len(c.body))
		}
		if c.writes != 1 {
			t.Errorf("%s: the answer took %d writes, want 1", c.name, c.writes)
		}
	}
}
