package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/openai/openai-go/v3"

	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/recipes"
)

func TestBadInput(t *testing.T) {
	e := newEnv(t, withYAML(func(y string) string {
		return strings.Replace(y, "timeout: 5s", "timeout: 5s\n    max_body_bytes: 4096", 1)
	}))
	for _, c := range []struct {
		name, body string
		status     int
		param      string
	}{
		{"malformed JSON", `{"model":"MoM","messages":[`, 400, ""},
		{"not an object", `[1,2]`, 400, ""},
		{"empty body", ``, 400, ""},
		{"missing messages", `{"model":"MoM"}`, 400, "messages"},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model"},
		{"messages not an array", `{"model":"MoM","messages":"hi"}`, 400, "messages"},
		{"model not a string", `{"model":7,"messages":[{"role":"user","content":"hi"}]}`, 400, "model"},
		{"stream not a boolean", `{"model":"MoM","stream":"yes","messages":[{"role":"user","content":"hi"}]}`, 400, "stream"},
		{"bad role", `{"model":"MoM","messages":[{"role":"wizard","content":"hi"}]}`, 400, "messages[0].role"},
		{"content wrong type", `{"model":"MoM","messages":[{"role":"user","content":42}]}`, 400, "messages[0].content"},
		{"invalid UTF-8", "{\"model\":\"MoM\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400, ""},
		{"too large", `{"model":"MoM","messages":[{"role":"user","content":"` + strings.Repeat("a", 5000) + `"}]}`, 413, ""},
		{"unknown model", `{"model":"gpt-nope","messages":[{"role":"user","content":"hi"}]}`, 404, "model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := e.post("/v1/chat/completions", c.body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			eb := decodeError(t, b)
			if eb.Error.Type != "invalid_request_error" || eb.Error.Message == "" {
				t.Errorf("body %s", b)
			}
			if c.param != "" && (eb.Error.Param == nil || *eb.Error.Param != c.param) {
				t.Errorf("param %v, want %s", eb.Error.Param, c.param)
			}
			if resp.Header.Get("x-request-id") == "" {
				t.Error("no x-request-id on an error")
			}
		})
	}
	// The official client sees the unknown model the way OpenAI reports it.
	_, err := e.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-nope", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Fatalf("unknown model via client: %v", err)
	}
	if v := e.errors("unknown", "parse_error"); v < 11 {
		t.Errorf("parse_error count %v", v)
	}
	for name, u := range e.ups {
		if u.count() != 0 {
			t.Errorf("a bad request reached %s", name)
		}
	}
}

func TestRoutesAndMethods(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		method, path string
		status       int
		typ          string
	}{
		{"POST", "/v1/responses", 400, "invalid_request_error"}, // no body
		{"GET", "/v1/responses/resp_123", 404, "invalid_request_error"},
		{"DELETE", "/v1/responses/resp_123", 404, "invalid_request_error"},
		{"GET", "/v1/responses/resp_123/input_items", 404, "invalid_request_error"},
		{"GET", "/v1/models/nope", 404, "invalid_request_error"},
		{"GET", "/v1/chat/completions", 405, "invalid_request_error"},
		{"POST", "/v1/models", 405, "invalid_request_error"},
		{"PUT", "/v1/responses", 405, "invalid_request_error"},
		{"GET", "/v1/files", 404, "invalid_request_error"},
		{"GET", "/", 404, "invalid_request_error"},
	} {
		req, _ := http.NewRequest(c.method, e.gw.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
			continue
		}
		if eb := decodeError(t, []byte(b.String())); eb.Error.Type != c.typ {
			t.Errorf("%s %s: type %q", c.method, c.path, eb.Error.Type)
		}
		if c.status == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: no Allow header", c.method, c.path)
		}
	}
	if v := e.scalar("router_requests_total", map[string]string{"endpoint": "other", "status": "404"}); v != 2 {
		t.Errorf("unknown paths must share the endpoint label \"other\": %v", v)
	}
}

func TestUpstreamUnreachable(t *testing.T) {
	dead := closedURL(t)
	e := newEnv(t, withYAML(func(y string) string {
		return strings.Replace(y, `"{{small}}/v1"`, `"`+dead+`/v1"`, 1)
	}))
	resp, b := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`)
	eb := decodeError(t, b)
	want := `upstream for model "small" at ` + dead + `/v1/chat/completions is unreachable`
	if resp.StatusCode != 502 || eb.Error.Type != "upstream_error" || !strings.Contains(eb.Error.Message, want) {
		t.Fatalf("%d %s; want 502 naming %s", resp.StatusCode, b, want)
	}
	if resp.Header.Get("x-selected-model") != "small" {
		t.Error("routing headers missing on a 502")
	}
	if v := e.errors("small", "upstream_5xx"); v != 1 {
		t.Errorf("upstream_5xx = %v", v)
	}
}

func TestUpstreamTimeout(t *testing.T) {
	e := newEnv(t, withYAML(func(y string) string {
		return strings.Replace(y, `- {base_url: "{{small}}`, `- {timeout: 200ms, base_url: "{{small}}`, 1)
	}))
	e.ups["small"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	}))
	start := time.Now()
	resp, b := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`)
	eb := decodeError(t, b)
	if resp.StatusCode != 504 || eb.Error.Type != "upstream_timeout" || !strings.Contains(eb.Error.Message, `"small"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s; the 200ms timeout was not applied", d)
	}
	if v := e.errors("small", "timeout"); v != 1 {
		t.Errorf("timeout errors = %v", v)
	}
}

func TestClientCancellationCancelsUpstream(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "non-stream", true: "stream"}[stream], func(t *testing.T) {
			e := newEnv(t)
			entered := make(chan struct{})
			upstreamDone := make(chan struct{})
			e.ups["small"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"))
					w.(http.Flusher).Flush()
				}
				close(entered)
				select {
				case <-r.Context().Done():
					close(upstreamDone)
				case <-time.After(5 * time.Second):
				}
			}))
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				if stream {
					s := e.client.Chat.Completions.NewStreaming(ctx, userMsg("hi"))
					for s.Next() {
					}
					errc <- s.Err()
					return
				}
				_, err := e.client.Chat.Completions.New(ctx, userMsg("hi"))
				errc <- err
			}()
			<-entered
			time.Sleep(20 * time.Millisecond) // let the first chunk reach the client
			cancel()
			select {
			case <-upstreamDone:
			case <-time.After(3 * time.Second):
				t.Fatal("the upstream request was not cancelled when the client went away")
			}
			<-errc
			deadline := time.Now().Add(2 * time.Second)
			for e.errors("small", "cancellation") != 1 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if v := e.errors("small", "cancellation"); v != 1 {
				t.Errorf("cancellation count = %v", v)
			}
		})
	}
}

func TestUpstreamErrorsRelayedAsIs(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		status int
		reason string
	}{{429, "upstream_4xx"}, {503, "upstream_5xx"}} {
		body := `{"error":{"message":"backend says no","type":"rate_limit_error","code":"slow_down"}}`
		e.ups["small"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("x-ratelimit-remaining-requests", "0")
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(body))
		}))
		resp, b := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != c.status || string(b) != body {
			t.Errorf("%d: got %d %s", c.status, resp.StatusCode, b)
		}
		if resp.Header.Get("x-ratelimit-remaining-requests") != "0" || resp.Header.Get("x-selected-model") != "small" {
			t.Errorf("%d: headers %v", c.status, resp.Header)
		}
		if v := e.errors("small", c.reason); v != 1 {
			t.Errorf("%s = %v", c.reason, v)
		}
	}
}

// panicRunner stands in for a plugin runner with a bug.
type panicRunner struct{}

func (panicRunner) Request(context.Context, []recipes.PluginRef, *plugin.Request) (plugin.Outcome, error) {
	panic("plugin runner bug")
}

func TestPanicBecomes500(t *testing.T) {
	e := newEnv(t)
	e.server.opts.Plugins = panicRunner{}
	resp, b := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"prove it"}]}`)
	if resp.StatusCode != 500 || decodeError(t, b).Error.Type != "server_error" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if v := e.errors("big", "unknown"); v != 1 {
		t.Errorf("unknown errors = %v", v)
	}
	// The listener still serves.
	e.server.opts.Plugins = native.Stage()
	if resp, _ := e.post("/v1/chat/completions", `{"model":"MoM","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
		t.Fatalf("after a panic: %d", resp.StatusCode)
	}
}
