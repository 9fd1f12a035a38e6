//go:build linux

package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/h1"
	"github.com/junction-router/junction/recipes"
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

func TestUpstreamsPickTransport(t *testing.T) {
	u := NewUpstreams(UpstreamOptions{})
	defer u.Close()
	if _, ok := u.transport(&recipes.BackendRef{BaseURL: "http://127.0.0.1:8000/v1"}).(*h1.Transport); !ok {
		t.Error("a plain-HTTP backend should get h1.Transport")
	}
	if _, ok := u.transport(&recipes.BackendRef{BaseURL: "https://api.example.com/v1"}).(*http.Transport); !ok {
		t.Error("an https backend should get net/http's Transport")
	}
	n := NewUpstreams(UpstreamOptions{NetHTTPTransport: true})
	defer n.Close()
	if _, ok := n.transport(&recipes.BackendRef{BaseURL: "http://127.0.0.1:8000/v1"}).(*http.Transport); !ok {
		t.Error("NetHTTPTransport should keep net/http's Transport")
	}
}

var processingTime = regexp.MustCompile(`"processing_time_ms":\d+`)

// The gateway over h1.Transport and over net/http's Transport must answer
// the same.
func TestH1TransportMatchesNetHTTP(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("X-Selected-Model")+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","usage":{"prompt_tokens":1,"completion_tokens":2}}`)
	})
	body := `{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`
	var answers []string
	for _, std := range []bool{false, true} {
		ups := NewUpstreams(UpstreamOptions{NetHTTPTransport: std})
		gw := benchGateway(t, srv.URL, ups)
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, req)
		ups.Close()
		h := w.Result().Header
		// processing_time_ms is a measurement, which differs by a millisecond
		// when a loaded machine stalls one of the two requests.
		answer := processingTime.ReplaceAll(bytes.TrimSpace(w.Body.Bytes()), []byte(`"processing_time_ms":N`))
		answers = append(answers, fmt.Sprintf("%d %s %s %s", w.Code, h.Get("Content-Type"), h.Get("X-Selected-Model"), answer))
	}
	if answers[0] != answers[1] || len(seen) != 2 || seen[0] != seen[1] {
		t.Fatalf("answers:\n%s\n%s\nupstream saw:\n%s", answers[0], answers[1], strings.Join(seen, "\n"))
	}
}

// benchGateway is a gateway routing every request to the backend at up.
func benchGateway(t *testing.T, up string, ups *Upstreams) *Server {
	t.Helper()
	cfg := strings.ReplaceAll(`
version: v1
providers:
  defaults: {default_model: small}
  models:
    - name: small
      backend_refs: [{base_url: "{{up}}/v1", provider: openai}]
recipes:
  - name: default
    decisions:
      - name: general
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]
`, "{{up}}", up)
	doc, err := recipes.Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Listener: doc.Listeners[0], Runtime: engine.NewRuntime(gen), Upstreams: ups})
}
