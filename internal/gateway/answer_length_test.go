package gateway

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/recipes"
)

// TestNonStreamedAnswerHasItsLength checks that a non-streamed answer goes to
// the client with a Content-Length that is the length of what it receives
// (routing_metadata spliced in), small or larger than net/http's chunking
// threshold, and that an upstream 204 goes out with no length and no body.
func TestNonStreamedAnswerHasItsLength(t *testing.T) {
	status, content := http.StatusOK, "ok"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","model":"small","choices":[{"index":0,"message":{"role":"assistant","content":`+
			strings.TrimSpace(mustJSON(t, content))+`},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	}))
	defer upstream.Close()
	doc, err := recipes.Parse([]byte(strings.ReplaceAll(`
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
`, "{{up}}", upstream.URL)))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ups := NewUpstreams(UpstreamOptions{})
	defer ups.Close()
	gw := httptest.NewServer(New(Options{Listener: doc.Listeners[0], Runtime: engine.NewRuntime(gen),
		Metrics: metrics.New(prometheus.NewRegistry()), Plugins: native.Stage(), Upstreams: ups, Logger: slog.New(slog.DiscardHandler)}))
	defer gw.Close()

	post := func() (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	for _, c := range []struct {
		name    string
		status  int
		content string
	}{{"small", http.StatusOK, "ok"}, {"over 4 KiB", http.StatusOK, strings.Repeat("long answer ", 800)}, {"upstream 400", http.StatusBadRequest, "bad"}} {
		status, content = c.status, c.content
		resp, body := post()
		if resp.StatusCode != c.status {
			t.Fatalf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
		if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 {
			t.Errorf("%s: Content-Length %d, transfer encoding %v, for a body of %d bytes", c.name, resp.ContentLength, resp.TransferEncoding, len(body))
		}
		var got struct {
			RoutingMetadata json.RawMessage `json:"routing_metadata"`
		}
		if err := json.Unmarshal(body, &got); err != nil || (c.status == http.StatusOK && len(got.RoutingMetadata) == 0) {
			t.Errorf("%s: the answer lost its routing_metadata or is not JSON (%v): %.200s", c.name, err, body)
		}
	}
	status = http.StatusNoContent
	resp, body := post()
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 || resp.Header.Get("Content-Length") != "" {
		t.Errorf("upstream 204: status %d, %d body bytes, Content-Length %q", resp.StatusCode, len(body), resp.Header.Get("Content-Length"))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
