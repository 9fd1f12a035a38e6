package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/chat/chattest"

	"github.com/junction-router/junction/internal/plugin/recorder"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/demobackend"
	"github.com/junction-router/junction/internal/plugin"
)

// withRunner runs the gateway's plugins with r.
func withRunner(r plugin.Runner) envOption { return func(c *envConfig) { c.plugins = r } }

// withRecordedDecision adds a decision (keyword "recordme", model small)
// whose plugin is the recorder.
func withRecordedDecision() envOption {
	return withYAML(func(y string) string {
		y = strings.Replace(y, "        - {name: gated, keywords: [\"gated\"]}\n",
			"        - {name: gated, keywords: [\"gated\"]}\n        - {name: recordme, keywords: [\"recordme\"]}\n", 1)
		return strings.Replace(y, "      - name: gated\n", "      - name: recorded\n        priority: 135\n"+
			"        rules: {operator: OR, conditions: [{type: keyword, name: recordme}]}\n"+
			"        modelRefs: [{model: small}]\n        plugins: [{type: recorder}]\n      - name: gated\n", 1)
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A streamed answer reaches the response phase once it has been relayed,
// assembled into the chat.completion a plain request gets: from an
// OpenAI-style backend, from a Messages API backend (translated), and for
// a Responses API client (whose events are translated on the way out).
func TestStreamedAnswerReachesResponsePhase(t *testing.T) {
	rec := &recorder.Recorder{}
	e := newEnv(t, withRunner(plugin.New(rec)), withRecordedDecision())

	resp, body := e.post("/v1/chat/completions", `{"model":"MoM","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"recordme please"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	content, done := chattest.StreamContent(t, body)
	if !done || !strings.Contains(content, "recordme please") {
		t.Fatalf("stream: done %v, content %q", done, content)
	}
	waitFor(t, "the response phase", func() bool { return len(rec.Answers()) == 1 })
	got := rec.Answers()[0]
	if c := chattest.CompletionContent(t, got); c != content {
		t.Fatalf("the response phase got content %q; the client saw %q", c, content)
	}
	var a struct {
		ID    string          `json:"id"`
		Model string          `json:"model"`
		Usage json.RawMessage `json:"usage"`
	}
	_ = json.Unmarshal([]byte(got), &a)
	if !strings.HasPrefix(a.ID, "chatcmpl-demo-") || a.Model == "" || len(a.Usage) == 0 || strings.Contains(got, "routing_metadata") {
		t.Fatalf("assembled answer: %s", got)
	}

	// A Messages API backend: the chunks Junction translated are assembled.
	resp, body = e.post("/v1/chat/completions", `{"model":"claude","stream":true,"messages":[{"role":"user","content":"recordme claude"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("anthropic: status %d: %s", resp.StatusCode, body)
	}
	content, _ = chattest.StreamContent(t, body)
	waitFor(t, "the response phase (anthropic)", func() bool { return len(rec.Answers()) == 2 })
	if c := chattest.CompletionContent(t, rec.Answers()[1]); c != content || !strings.Contains(c, "recordme claude") {
		t.Fatalf("anthropic: the response phase got %q; the client saw %q", c, content)
	}

	// A Responses API client: plugins still get the chat completion.
	resp, body = e.post("/v1/responses", `{"model":"MoM","stream":true,"input":"recordme responses"}`)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "response.completed") {
		t.Fatalf("responses: status %d: %s", resp.StatusCode, body)
	}
	waitFor(t, "the response phase (responses)", func() bool { return len(rec.Answers()) == 3 })
	if c := chattest.CompletionContent(t, rec.Answers()[2]); !strings.Contains(c, "recordme responses") {
		t.Fatalf("responses: the response phase got %s", rec.Answers()[2])
	}
	if n := e.scalar("junction_response_phase_skipped_total", nil); n != 0 {
		t.Fatalf("%v streams counted as skipped", n)
	}
}

// A stream that breaks off, one whose client goes away, and one with an error
// event never reach the response phase; each is counted (a stream past the
// bound: stream_huge_norace_test.go).
func TestIncompleteStreamsSkipResponsePhase(t *testing.T) {
	rec := &recorder.Recorder{}
	e := newEnv(t, withRunner(plugin.New(rec)), withRecordedDecision())
	skipped := func(reason string) float64 {
		return e.scalar("junction_response_phase_skipped_total", map[string]string{"reason": reason})
	}
	req := `{"model":"MoM","stream":true,"messages":[{"role":"user","content":"recordme please"}]}`

	// The upstream breaks off mid-way (no [DONE]): the client gets an error event.
	e.ups["small"].setHandler(demobackend.New(demobackend.Options{FailAfterChunks: 3}))
	resp, body := e.post("/v1/chat/completions", req)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"error"`) {
		t.Fatalf("broken stream: %d %s", resp.StatusCode, body)
	}
	waitFor(t, "the broken stream counted", func() bool { return skipped(dataplane.SkipIncomplete) == 1 })

	// The client goes away after the first chunk.
	e.ups["small"].setHandler(demobackend.New(demobackend.Options{ChunkDelay: 200 * time.Millisecond}))
	ctx, cancel := context.WithCancel(context.Background())
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.gw.URL+"/v1/chat/completions", strings.NewReader(req))
	hresp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(hresp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	hresp.Body.Close()
	waitFor(t, "the cancelled stream counted", func() bool { return skipped(dataplane.SkipIncomplete) == 2 })

	// An error event, even one the upstream follows with [DONE], is relayed
	// but not given to plugins.
	e.ups["small"].setHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\ndata: [DONE]\n\n")
	}))
	resp, body = e.post("/v1/chat/completions", req)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "overloaded") {
		t.Fatalf("error event: %d %s", resp.StatusCode, body)
	}
	waitFor(t, "the error event counted", func() bool { return skipped(dataplane.SkipUnreadable) == 1 })

	if got := rec.Answers(); len(got) != 0 {
		t.Fatalf("the response phase ran for %d incomplete streams", len(got))
	}
}
