package extproc_test

import (
	"context"
	"io"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/recipes"
)

// TestClientAbort: Envoy resets the stream when the client goes away; a
// request that had not finished is counted as cancelled (499).
func TestClientAbort(t *testing.T) {
	e := newEnv(t)
	// Mid-stream: the answer had begun.
	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(userBody("hello", `"stream":true`)))
	if err != nil {
		t.Fatal(err)
	}
	_ = out
	if err := s.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: envoytest.H(":status", "200", "content-type", "text/event-stream").Proto()}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
		Body: []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	s.Abort()
	eventually(t, "the abort to be recorded", func() bool {
		return e.scalar("router_requests_total", map[string]string{"status": "499", "category": "general"}) == 1
	})
	if v := e.scalar("llm_request_errors_total", map[string]string{"model": "small", "reason": "cancellation"}); v != 1 {
		t.Errorf("cancellation %v", v)
	}
	if v := e.scalar("llm_model_ttft_seconds", map[string]string{"model": "small"}); v != 1 {
		t.Errorf("ttft %v", v)
	}

	// While the body was still arriving.
	s = e.open(envoytest.Config{RequestBody: envoytest.Streamed, ResponseBody: envoytest.Buffered})
	if err := s.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: envoytest.H(":method", "POST", ":path", "/v1/chat/completions").Proto()}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	s.Abort()
	eventually(t, "the second abort", func() bool {
		return e.scalar("llm_request_errors_total", map[string]string{"model": "unknown", "reason": "cancellation"}) == 1
	})
}

// TestUnexpectedMessages: what Envoy never sends in a correct deployment.
// A message that would let an unrouted request through ends the stream with
// FAILED_PRECONDITION (Envoy then fails the request, unless the operator set
// failure_mode_allow); one that can be answered safely is, and is counted.
func TestUnexpectedMessages(t *testing.T) {
	e := newEnv(t)
	rejected := func(name string, msgs ...*extprocv3.ProcessingRequest) {
		t.Helper()
		s := e.open(envoytest.Standard)
		defer s.Abort()
		var err error
		for _, m := range msgs {
			if err = s.Send(m); err != nil {
				break
			}
			if _, err = s.Recv(); err != nil {
				break
			}
		}
		if status.Code(err) != codes.FailedPrecondition {
			t.Errorf("%s: stream ended with %v, want FailedPrecondition", name, err)
		}
	}
	hdrs := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: envoytest.H(":method", "POST", ":path", "/v1/chat/completions").Proto()}}}
	body := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{
		Body: []byte(userBody("hi")), EndOfStream: true}}}
	respHdrs := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: envoytest.H(":status", "200").Proto()}}}
	rejected("body before headers", body)
	rejected("headers twice", hdrs, hdrs)
	rejected("response headers first", respHdrs)
	rejected("request body after it was forwarded", hdrs, body, body)
	eventually(t, "rejections counted", func() bool {
		return e.scalar("router_requests_total", map[string]string{"status": "500"}) == 4
	})
	for _, m := range []string{"request_body", "request_headers", "response_headers"} {
		want := 1.0
		if m == "request_body" {
			want = 2
		}
		if v := e.scalar("junction_extproc_unexpected_messages_total", map[string]string{"action": "rejected", "message": m}); v != want {
			t.Errorf("rejected %s: %v", m, v)
		}
	}

	// Tolerated: an empty message (nothing to answer), a body after an
	// immediate answer (let through).
	s := e.open(envoytest.Standard)
	if err := s.Send(&extprocv3.ProcessingRequest{}); err != nil {
		t.Fatal(err)
	}
	out, err := s.SendRequest(envoytest.Request{Method: "GET", Path: "/v1/models"})
	if err != nil || out.Immediate == nil {
		t.Fatalf("%v %v", out, err)
	}
	if err := s.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil || r.GetResponseBody() == nil {
		t.Fatalf("stray body: %v %v", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "tolerated messages counted", func() bool {
		return e.scalar("junction_extproc_unexpected_messages_total", map[string]string{"action": "ignored"}) == 2
	})

	// Envoy answered the request itself (its own buffer limit) before the
	// body reached Junction: let it through, count its status.
	s = e.open(envoytest.Standard)
	if err := s.Send(hdrs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: envoytest.H(":status", "413").Proto(), EndOfStream: true}}}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Recv(); err != nil || r.GetResponseHeaders() == nil {
		t.Fatalf("%v %v", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the local reply counted", func() bool {
		return e.scalar("router_requests_total", map[string]string{"status": "413"}) == 1
	})
}

func TestUpstreamErrors(t *testing.T) {
	e := newEnv(t)
	for _, st := range []int{500, 429} {
		s := e.open(envoytest.Standard)
		out, err := s.SendRequest(chat(userBody("hi")))
		if err != nil {
			t.Fatal(err)
		}
		_ = out
		body := `{"error":{"message":"overloaded","type":"server_error"}}`
		resp, err := s.SendResponse(envoytest.Response{Status: st, Headers: envoytest.H("content-type", "application/json"), Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Override == nil || resp.Override.ResponseBodyMode != filterv3.ProcessingMode_NONE {
			t.Errorf("%d: override %v", st, resp.Override)
		}
		if string(resp.Downstream.Body) != body || resp.Downstream.Headers.Get("x-selected-model") != "small" {
			t.Errorf("%d: relayed %s %v", st, resp.Downstream.Body, resp.Downstream.Headers)
		}
		s.Close()
	}
	eventually(t, "upstream errors", func() bool {
		return e.scalar("llm_request_errors_total", map[string]string{"model": "small", "reason": "upstream_4xx"}) == 1
	})
	if v := e.scalar("llm_request_errors_total", map[string]string{"model": "small", "reason": "upstream_5xx"}); v != 1 {
		t.Errorf("upstream_5xx %v", v)
	}
	if v := e.scalar("router_requests_total", map[string]string{"status": "500", "category": "general"}); v != 1 {
		t.Errorf("status 500 %v", v)
	}
}

func TestTimeouts(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.opts.BodyTimeout = 50 * time.Millisecond
		o.opts.IdleTimeout = 100 * time.Millisecond
	})
	// The body does not arrive in time: 408.
	s := e.open(envoytest.Config{RequestBody: envoytest.Streamed, ResponseBody: envoytest.Buffered})
	hdrs := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: envoytest.H(":method", "POST", ":path", "/v1/chat/completions").Proto()}}}
	if err := s.Send(hdrs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil || r.GetImmediateResponse().GetStatus().GetCode() != 408 {
		t.Fatalf("%v %v", r, err)
	}
	s.Close()
	// Envoy goes silent after the request was forwarded: the stream is ended.
	s = e.open(envoytest.Standard)
	if _, err := s.SendRequest(chat(userBody("hi"))); err != nil {
		t.Fatal(err)
	}
	_, err = s.Recv()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("idle stream ended with %v", err)
	}
	eventually(t, "timeouts counted", func() bool {
		return e.scalar("llm_request_errors_total", map[string]string{"reason": "timeout", "model": "small"}) == 1
	})
	if v := e.scalar("llm_request_errors_total", map[string]string{"reason": "timeout", "model": "unknown"}); v != 1 {
		t.Errorf("body timeout %v", v)
	}
}

// TestTimeoutsOnPlainGRPCServer: a Server registered on a grpc.Server
// without NewGRPCServer's stream tap keeps both time bounds (the slower
// path, a goroutine watching each stream).
func TestTimeoutsOnPlainGRPCServer(t *testing.T) {
	e := newEnv(t, func(o *envOptions) {
		o.opts.BodyTimeout = 50 * time.Millisecond
		o.opts.IdleTimeout = 100 * time.Millisecond
		o.plainGRPC = true
	})
	s := e.open(envoytest.Config{RequestBody: envoytest.Streamed, ResponseBody: envoytest.Buffered})
	hdrs := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: envoytest.H(":method", "POST", ":path", "/v1/chat/completions").Proto()}}}
	if err := s.Send(hdrs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil || r.GetImmediateResponse().GetStatus().GetCode() != 408 {
		t.Fatalf("%v %v", r, err)
	}
	s.Close()
	s = e.open(envoytest.Standard)
	if _, err := s.SendRequest(chat(userBody("hi"))); err != nil {
		t.Fatal(err)
	}
	if _, err = s.Recv(); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("idle stream ended with %v", err)
	}
}

// TestOneGoroutinePerStream: with NewGRPCServer a stream waiting for
// Envoy's next message holds only its handler's goroutine (its time bounds
// are a timer), not a second one watching the time.
func TestOneGoroutinePerStream(t *testing.T) {
	e := newEnv(t)
	const n = 20
	for range n {
		s := e.open(envoytest.Standard)
		if _, err := s.SendRequest(chat(userBody("hi"))); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	var held int
	for range 50 {
		held = exchangeGoroutines()
		if held == n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if held != n {
		t.Fatalf("%d goroutines work on the %d open streams; want one each", held, n)
	}
}

// exchangeGoroutines counts the goroutines running an exchange's code.
func exchangeGoroutines() int {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "internal/extproc.(*exchange)") {
			n++
		}
	}
	return n
}

func TestObservabilityModeSendsNothing(t *testing.T) {
	e := newEnv(t)
	s := e.open(envoytest.Standard)
	req := &extprocv3.ProcessingRequest{ObservabilityMode: true, Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: envoytest.H(":method", "GET", ":path", "/v1/models").Proto(), EndOfStream: true}}}
	if err := s.Send(req); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("an answer was sent in observability mode: %v", err)
	}
}

func typeStatus(code int32) typev3.StatusCode { return typev3.StatusCode(code) }

// panicRunner stands in for a plugin runner with a bug.
type panicRunner struct{}

func (panicRunner) Request(context.Context, []recipes.PluginRef, *plugin.Request) (plugin.Outcome, error) {
	panic("plugin runner bug")
}

// TestPanicEndsOnlyItsStream: a panic while handling a message ends that
// stream with INTERNAL (Envoy answers 500), is counted with the request's
// model, and the server goes on serving.
func TestPanicEndsOnlyItsStream(t *testing.T) {
	logs := &lockedBuffer{}
	e := newEnv(t, func(o *envOptions) { o.opts.Plugins = panicRunner{}; o.logs = logs })
	s := e.open(envoytest.Standard)
	_, err := s.SendRequest(chat(userBody("prove it")))
	if status.Code(err) != codes.Internal {
		t.Fatalf("stream ended with %v", err)
	}
	eventually(t, "the panic counted", func() bool {
		return e.scalar("llm_request_errors_total", map[string]string{"model": "big", "reason": "unknown"}) == 1
	})
	if !strings.Contains(logs.String(), "plugin runner bug") {
		t.Errorf("the panic was not logged:\n%s", logs.String())
	}
	s = e.open(envoytest.Standard)
	if out, err := s.SendRequest(envoytest.Request{Method: "GET", Path: "/v1/models"}); err != nil || out.Immediate == nil {
		t.Fatalf("after a panic: %v %v", out, err)
	}
	s.Close()
}

// TestIdleBoundMovesOn: each message moves the idle bound on (the timer is
// not reset for it, the expiry sets it again for what remains): a stream
// whose messages come closer together than the bound lives longer than the
// bound, and goes on being bounded, also after a body timeout's 408; on a
// plain grpc.Server too (where a stream whose answer is complete ends OK,
// as it always did there).
func TestIdleBoundMovesOn(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "tap", true: "plain"}[plain], func(t *testing.T) {
			const idle = 300 * time.Millisecond
			e := newEnv(t, func(o *envOptions) {
				o.opts.BodyTimeout = 100 * time.Millisecond
				o.opts.IdleTimeout = idle
				o.plainGRPC = plain
			})
			s := e.open(envoytest.Standard)
			start := time.Now()
			if _, err := s.SendRequest(chat(userBody("hi"))); err != nil {
				t.Fatal(err)
			}
			answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}]}`)
			msgs := []*extprocv3.ProcessingRequest{
				{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: envoytest.H(
					":status", "200", "content-type", "application/json").Proto()}}},
				{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: answer, EndOfStream: true}}},
			}
			for _, m := range msgs {
				time.Sleep(idle * 2 / 3)
				if err := s.Send(m); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Recv(); err != nil {
					t.Fatalf("after %v: %v", time.Since(start), err)
				}
			}
			ended := func(err error) bool {
				if plain {
					return err == io.EOF
				}
				return status.Code(err) == codes.DeadlineExceeded
			}
			if _, err := s.Recv(); !ended(err) {
				t.Fatalf("idle stream ended with %v", err)
			}
			if d := time.Since(start); d < idle*2 {
				t.Fatalf("stream ended after %v, before its messages' bounds", d)
			}

			// After a body timeout's 408 the stream is still bounded.
			s = e.open(envoytest.Config{RequestBody: envoytest.Streamed, ResponseBody: envoytest.Buffered})
			hdrs := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
				Headers: envoytest.H(":method", "POST", ":path", "/v1/chat/completions").Proto()}}}
			if err := s.Send(hdrs); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Recv(); err != nil {
				t.Fatal(err)
			}
			if r, err := s.Recv(); err != nil || r.GetImmediateResponse().GetStatus().GetCode() != 408 {
				t.Fatalf("%v %v", r, err)
			}
			done := make(chan error, 1)
			go func() { _, err := s.Recv(); done <- err }()
			select {
			case err := <-done:
				if !ended(err) {
					t.Fatalf("idle stream after a 408 ended with %v", err)
				}
			case <-time.After(10 * idle):
				t.Fatal("idle stream after a 408 was not ended")
			}
		})
	}
}
