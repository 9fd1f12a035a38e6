package demobackend

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, c *http.Client, url, body string) *http.Response {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestNonStreamAnswerSaysModelAndReasoning(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	resp := post(t, srv.Client(), srv.URL+"/v1/chat/completions",
		`{"model":"big","messages":[{"role":"user","content":"prove that 2+2=4"}],"chat_template_kwargs":{"thinking":true}}`)
	defer resp.Body.Close()
	var out struct {
		Object  string
		Model   string
		Choices []struct {
			Message struct{ Content string }
		}
		Usage struct{ PromptTokens, CompletionTokens, TotalTokens int } `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	want := `[demo:big] reasoning on (chat_template_kwargs.thinking=true) — you said: "prove that 2+2=4"`
	if out.Object != "chat.completion" || out.Model != "big" || out.Choices[0].Message.Content != want {
		t.Fatalf("got %+v", out)
	}
	// Same request, same answer.
	resp2 := post(t, srv.Client(), srv.URL+"/chat/completions",
		`{"model":"big","messages":[{"role":"user","content":"prove that 2+2=4"}],"chat_template_kwargs":{"thinking":true}}`)
	defer resp2.Body.Close()
	if resp2.StatusCode != 200 {
		t.Fatalf("/chat/completions: %d", resp2.StatusCode)
	}
}

func TestDescribeReasoning(t *testing.T) {
	for body, want := range map[string]string{
		`{"chat_template_kwargs":{"enable_thinking":false}}`: "reasoning off (chat_template_kwargs.enable_thinking=false)",
		`{"reasoning_effort":"high"}`:                        "reasoning on (reasoning_effort=high)",
		`{}`:                                                 "reasoning not set",
	} {
		var r request
		_ = json.Unmarshal([]byte(body), &r)
		if got := describeReasoning(&r); got != want {
			t.Errorf("%s: got %q want %q", body, got, want)
		}
	}
}

func TestEchoIsTruncated(t *testing.T) {
	long := strings.Repeat("é", 500)
	a := answer(&request{Model: "m", Messages: []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}{{Role: "user", Content: json.RawMessage(`"` + long + `"`)}}})
	if strings.Count(a.text, "é") != echoLimit || !strings.HasSuffix(a.text, `…"`) {
		t.Fatalf("echo not truncated to %d runes: %q", echoLimit, a.text)
	}
}

// readEvents reads SSE data lines until [DONE] or EOF.
func readEvents(t *testing.T, r io.Reader) (events []map[string]any, done bool, err error) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			return events, true, nil
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("bad chunk %q: %v", data, err)
		}
		events = append(events, ev)
	}
	return events, false, sc.Err()
}

func TestStreamWithUsage(t *testing.T) {
	for name, c := range map[string]*http.Client{
		"socket":     nil,
		"in-process": {Transport: NewRoundTripper(Options{})},
	} {
		t.Run(name, func(t *testing.T) {
			url := "http://demo/v1/chat/completions"
			if c == nil {
				srv := httptest.NewServer(New(Options{}))
				defer srv.Close()
				c, url = srv.Client(), srv.URL+"/v1/chat/completions"
			}
			resp := post(t, c, url, `{"model":"small","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`)
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("content type %q", ct)
			}
			events, done, err := readEvents(t, resp.Body)
			if err != nil || !done {
				t.Fatalf("done=%v err=%v", done, err)
			}
			if len(events) < 5 {
				t.Fatalf("only %d chunks", len(events))
			}
			var text strings.Builder
			for _, ev := range events {
				for _, ch := range ev["choices"].([]any) {
					if s, ok := ch.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
						text.WriteString(s)
					}
				}
			}
			if !strings.HasPrefix(text.String(), "[demo:small] reasoning not set") {
				t.Fatalf("text %q", text.String())
			}
			last := events[len(events)-1]
			if last["usage"] == nil || len(last["choices"].([]any)) != 0 {
				t.Fatalf("last chunk is not the usage chunk: %v", last)
			}
		})
	}
}

func TestStreamWithoutUsageHasNoUsageChunk(t *testing.T) {
	c := &http.Client{Transport: NewRoundTripper(Options{})}
	resp := post(t, c, "http://demo/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	events, _, _ := readEvents(t, resp.Body)
	for _, ev := range events {
		if ev["usage"] != nil {
			t.Fatal("usage sent without include_usage")
		}
	}
}

func TestStatusOption(t *testing.T) {
	c := &http.Client{Transport: NewRoundTripper(Options{Status: 503})}
	resp := post(t, c, "http://demo/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || !strings.Contains(string(b), `"error"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func TestFailAfterChunks(t *testing.T) {
	for name, mk := range map[string]func() (*http.Client, string, func()){
		"socket": func() (*http.Client, string, func()) {
			srv := httptest.NewServer(New(Options{FailAfterChunks: 2}))
			return srv.Client(), srv.URL, srv.Close
		},
		"in-process": func() (*http.Client, string, func()) {
			return &http.Client{Transport: NewRoundTripper(Options{FailAfterChunks: 2})}, "http://demo", func() {}
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, base, stop := mk()
			defer stop()
			resp := post(t, c, base+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			defer resp.Body.Close()
			events, done, err := readEvents(t, resp.Body)
			if done || err == nil || len(events) != 2 {
				t.Fatalf("events=%d done=%v err=%v; want 2 events then an error", len(events), done, err)
			}
		})
	}
}

func TestInProcessCancellationStopsHandler(t *testing.T) {
	stopped := make(chan struct{})
	inner := New(Options{ChunkDelay: time.Hour})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(stopped)
		inner.ServeHTTP(w, r)
	})
	c := &http.Client{Transport: &RoundTripper{Handler: h}}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://demo/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // the first chunk arrived
		t.Fatal(err)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("handler still running after cancellation")
	}
	if _, err := io.ReadAll(br); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v, want context.Canceled", err)
	}
}

func TestModels(t *testing.T) {
	c := &http.Client{Transport: NewRoundTripper(Options{Models: []string{"a", "b"}})}
	resp, err := c.Get("http://demo/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Object string
		Data   []struct{ ID string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if out.Object != "list" || len(out.Data) != 2 || out.Data[1].ID != "b" {
		t.Fatalf("%+v", out)
	}
}
