package extproc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/junction-router/junction/internal/extproc/envoytest"
)

// FuzzMessageSequences sends arbitrary sequences of ext_proc messages, in
// any order, with arbitrary bodies: the server must answer or end each
// stream, never panic, and never hang.
func FuzzMessageSequences(f *testing.F) {
	logs := &lockedBuffer{}
	e := newEnv(f, func(o *envOptions) {
		o.opts.BodyTimeout = 200 * time.Millisecond
		o.opts.IdleTimeout = 200 * time.Millisecond
		o.logs = logs
	})
	f.Add([]byte{0, 1, 3, 4}, []byte(`{"model":"MoM","messages":[{"role":"user","content":"hi"}],"stream":true}`))
	f.Add([]byte{1, 0, 0, 2, 5, 4}, []byte(`{"model":"MoM"`))
	f.Add([]byte{0, 7, 1, 9, 3, 4, 4, 5}, []byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\n"))
	f.Add([]byte{6, 8, 0, 1}, []byte(`[]`))
	f.Fuzz(func(t *testing.T, seq []byte, body []byte) {
		if len(seq) > 12 {
			seq = seq[:12]
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := e.client.Open(ctx, envoytest.Config{RequestBody: envoytest.Buffered, ResponseBody: envoytest.Buffered, NoProtocolConfig: len(seq) > 0 && seq[0]%2 == 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range seq {
			if err := s.Send(message(b, body)); err != nil {
				break
			}
			if b%10 == 8 {
				continue // an empty message gets no answer
			}
			if _, err := s.Recv(); err != nil {
				break
			}
		}
		s.Abort()
		if strings.Contains(logs.String(), "panic") {
			t.Fatalf("the server panicked:\n%s", logs.String())
		}
		if ctx.Err() != nil {
			t.Fatal("the stream hung")
		}
	})
}

// message makes one ext_proc message of the kind b selects.
func message(b byte, body []byte) *extprocv3.ProcessingRequest {
	eos := b >= 128
	switch b % 10 {
	case 0:
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: envoytest.H(":method", "POST", ":path", "/v1/chat/completions").Proto(), EndOfStream: eos}}}
	case 1:
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: !eos}}}
	case 2:
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{}}}
	case 3:
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: envoytest.H(":status", "200", "content-type", "text/event-stream").Proto(), EndOfStream: eos}}}
	case 4:
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: body, EndOfStream: eos}}}
	case 5:
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: &extprocv3.HttpTrailers{}}}
	case 6:
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: envoytest.H(":method", "GET", ":path", "/v1/models").Proto(), EndOfStream: true}}}
	case 7:
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: envoytest.H(":status", "502", "content-type", "application/json").Proto(), EndOfStream: eos}}}
	case 8:
		return &extprocv3.ProcessingRequest{}
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte("{}"), EndOfStream: true}}}
}
