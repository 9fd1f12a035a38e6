package dataplane_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/dataplane"
)

// forward runs a request through a new exchange up to the upstream call.
func (e *env) forward(body string) *dataplane.Exchange {
	e.t.Helper()
	x := e.plane.NewExchange(time.Now())
	out := x.Run(context.Background(), &dataplane.Request{Gen: e.gen, ID: "req-1", Start: x.Start(), Body: []byte(body)})
	if out.Answer != nil || out.Model == nil {
		e.t.Fatalf("not forwarded: %+v", out.Answer)
	}
	x.Forwarded()
	return &x
}

func TestExchangeJSONAnswer(t *testing.T) {
	e := newEnv(t, nil)
	x := e.forward(userBody("hello"))
	body := []byte(`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
	out, changed, err := x.JSONAnswer(body, false)
	if err != nil || !changed || !strings.Contains(string(out), `"routing_metadata":`) {
		t.Fatalf("answer %s changed %v err %v", out, changed, err)
	}
	if got := e.counter("llm_model_prompt_tokens_total", map[string]string{"model": "small"}); got != 3 {
		t.Errorf("prompt tokens %v, want 3", got)
	}
	if got := e.counter("llm_model_requests_total", map[string]string{"model": "small"}); got != 1 {
		t.Errorf("model requests %v, want 1", got)
	}
	x.Record(dataplane.EndpointChat, http.StatusOK, time.Millisecond)
	if got := e.counter("router_requests_total", map[string]string{"status": "200"}); got != 1 {
		t.Errorf("router requests %v, want 1", got)
	}
}

// TestExchangeStream: the usage-only chunk Junction asked for is metered and
// dropped, usage is metered once, and a stream closed without [DONE] gets one.
func TestExchangeStream(t *testing.T) {
	e := newEnv(t, nil)
	x := e.forward(userBody("hello", `"stream":true`))
	if !x.Out.DropUsage {
		t.Fatal("include_usage was not forced")
	}
	x.StartStream()
	var dst []byte
	for _, data := range []string{
		`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}}`,
	} {
		var err error
		dst, err = x.Event(dst, []byte("data: "+data+"\n\n"), []byte(data), true)
		if err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(string(dst), "usage") || !strings.Contains(string(dst), `"hi"`) {
		t.Fatalf("relayed %s", dst)
	}
	dst = x.EndStream(dst, true)
	x.RecordUsage()
	if !x.Done() || !strings.HasSuffix(string(dst), "data: [DONE]\n\n") {
		t.Fatalf("relayed %s", dst)
	}
	if got := e.counter("llm_model_prompt_tokens_total", map[string]string{"model": "small"}); got != 4 {
		t.Errorf("prompt tokens %v, want 4 (once)", got)
	}
}

func TestExchangeResponsesAPI(t *testing.T) {
	e := newEnv(t, nil)
	x := e.plane.NewExchange(time.Now())
	chatBody, a := x.ResponsesRequest(context.Background(), []byte(`{"model":"MoM","input":"hello"}`), nil)
	if a != nil {
		t.Fatalf("refused: %s", a.Body)
	}
	out := x.Run(context.Background(), &dataplane.Request{Gen: e.gen, ID: "req-1", Start: x.Start(), Body: chatBody})
	if out.Answer != nil || !x.Translating() {
		t.Fatalf("not forwarded for translation: %+v", out.Answer)
	}
	x.Forwarded()
	body, _, err := x.JSONAnswer([]byte(`{"model":"small","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`), true)
	if err != nil || !strings.Contains(string(body), `"object":"response"`) {
		t.Fatalf("answer %s err %v", body, err)
	}
	if _, a := x.ResponsesRequest(context.Background(), []byte(`{"model":"MoM","input":"hi","background":true}`), nil); a == nil || a.Status != http.StatusBadRequest {
		t.Fatalf("background was not refused: %+v", a)
	}
}
