package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/junction-router/junction/internal/pluginsys"
)

// streamUpstream answers every request with the same event stream, in
// memory, as fixedUpstream does a chat.completion.
type streamUpstream struct{ events []byte }

func (f streamUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(f.events)),
		Request:    req,
	}, nil
}

// benchEvents is a 200-token streamed answer as vLLM sends it: a role
// chunk, a chunk a token, a finish chunk, [DONE].
func benchEvents() []byte {
	const head = `data: {"id":"chatcmpl-8f3a2c1d9e7b4a60","object":"chat.completion.chunk","created":1700000000,"model":"small","choices":[{"index":0,"delta":`
	var b bytes.Buffer
	b.WriteString(head + `{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, head+`{"content":" word%d"},"finish_reason":null}]}`+"\n\n", i)
	}
	b.WriteString(head + `{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkGatewayStream is the gateway's CPU and allocations per streamed
// request (ServeHTTP with an in-memory upstream, as BenchmarkGatewayHandler):
// live relays the stream event by event; held is a decision whose response
// check holds the stream (hold_stream, the lexical hallucination check) until
// the whole answer was checked.
func BenchmarkGatewayStream(b *testing.B) {
	events := benchEvents()
	body := []byte(`{"model":"MoM","stream":true,"messages":[{"role":"user","content":"What is the capital of France? Answer in one word, please."}],"max_tokens":256}`)
	for _, run := range []struct{ name, plugins string }{
		{"live", ""},
		{"held", "\n        plugins: [{type: hallucination, configuration: {detector: lexical, action: annotate, hold_stream: true}}]"},
	} {
		b.Run(run.name, func(b *testing.B) {
			o, doc := benchOptions(b, benchProviders+`
recipes:
  - name: default
    decisions:
      - name: general
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: small}]`+run.plugins+"\n", UpstreamOptions{Demo: streamUpstream{events: events}})
			ctx := context.Background()
			sys, err := pluginsys.New(ctx, pluginsys.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer sys.Close()
			if err := sys.Prepare(ctx, doc); err != nil {
				b.Fatal(err)
			}
			o.Plugins = sys
			gw := New(o)
			b.ReportAllocs()
			b.SetBytes(int64(len(events)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := &http.Request{
					Method: http.MethodPost, URL: &url.URL{Path: "/v1/chat/completions"},
					Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: "gateway",
					Header:        http.Header{"Content-Type": {"application/json"}},
					Body:          io.NopCloser(bytes.NewReader(body)),
					ContentLength: int64(len(body)),
				}
				req = req.WithContext(ctx)
				w := &countingWriter{header: http.Header{}}
				gw.ServeHTTP(w, req)
				if w.status != http.StatusOK || w.n < len(events)/2 {
					b.Fatalf("status %d, %d bytes", w.status, w.n)
				}
				if held := run.plugins != ""; held != (w.flushes == 1) {
					b.Fatalf("held %t, but %d flushes", held, w.flushes)
				}
			}
		})
	}
}

// countingWriter is a ResponseWriter and Flusher that counts what it is
// given and drops it.
type countingWriter struct {
	header    http.Header
	status, n int
	flushes   int
}

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(b)
	return len(b), nil
}

func (w *countingWriter) Flush() { w.flushes++ }
