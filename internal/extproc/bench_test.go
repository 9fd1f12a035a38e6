package extproc_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/plugin/native"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/extproc"
	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/recipes"
)

const benchBody = `{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"What is the capital of France? Answer in one word, please."}],"max_tokens":16}`

func benchServer(b *testing.B) (*extproc.Server, *engine.Generation) {
	b.Helper()
	doc, err := recipes.Parse([]byte(extproc.BenchConfig + recipes.BenchRecipesYAML()))
	if err != nil {
		b.Fatal(err)
	}
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return extproc.New(extproc.Options{
		Runtime: engine.NewRuntime(gen), Metrics: metrics.New(prometheus.NewRegistry()),
		Plugins: native.Stage(), Logger: slog.New(slog.DiscardHandler),
	}), gen
}

// BenchmarkDecision is the request phase alone, in process: parse, route,
// plugins, rewrite. It is what ext_proc wraps in gRPC.
func BenchmarkDecision(b *testing.B) {
	_, gen := benchServer(b)
	p := dataplane.New(dataplane.Config{Metrics: metrics.New(prometheus.NewRegistry()), Plugins: native.Stage()})
	b.ReportAllocs()
	for b.Loop() {
		out := p.Run(context.Background(), &dataplane.Request{Gen: gen, ID: "bench", Start: time.Now(), Body: []byte(benchBody)})
		if out.Answer != nil {
			b.Fatal(string(out.Answer.Body))
		}
	}
}

// BenchmarkExtprocDecision is the routing decision round trip as Envoy
// makes it over loopback TCP: open a stream, request headers, the buffered
// body, the answer with the mutations; then the answer's headers and body
// and the stream's end, as a complete request.
func BenchmarkExtprocDecision(b *testing.B) {
	srv, _ := benchServer(b)
	gs, _, err := extproc.NewGRPCServer(srv, extproc.GRPCOptions{})
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := extprocv3.NewExternalProcessorClient(conn)
	msgs := RoundTripMessages([]byte(benchBody))
	b.ReportAllocs()
	for b.Loop() {
		if err := RoundTrip(context.Background(), client, msgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtprocEmpty is BenchmarkExtprocDecision against an ext_proc
// server that answers every message at once with an empty answer and does
// nothing else (cmd/junction-extproc-bench's floor): what the protocol and
// grpc-go cost, client and server, in the same process. Junction's own
// share of an exchange is BenchmarkExtprocDecision minus this. It keeps
// stream workers as Junction's server does, so that a stream's goroutine
// stack growth, which Junction's kept workers do not pay, is not counted in
// the floor.
func BenchmarkExtprocEmpty(b *testing.B) {
	gs := grpc.NewServer(grpc.NumStreamWorkers(uint32(extproc.DefaultStreamWorkers())))
	extprocv3.RegisterExternalProcessorServer(gs, extproc.EmptyProcessor{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := extprocv3.NewExternalProcessorClient(conn)
	msgs := RoundTripMessages([]byte(benchBody))
	b.ReportAllocs()
	for b.Loop() {
		if err := RoundTrip(context.Background(), client, msgs); err != nil {
			b.Fatal(err)
		}
	}
}

// Messages is one request's ext_proc messages, as Envoy sends them with
// the example configuration.
type Messages struct {
	Headers, Body, RespHeaders, RespBody *extprocv3.ProcessingRequest
}

// RoundTripMessages builds the messages for a chat completion body.
func RoundTripMessages(body []byte) Messages {
	cfg := envoytest.Standard
	answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":1,"total_tokens":21}}`)
	return Messages{
		Headers: &extprocv3.ProcessingRequest{
			ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: cfg.RequestBody, ResponseBodyMode: cfg.ResponseBody},
			Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: envoytest.H(
				":method", "POST", ":path", "/v1/chat/completions", ":authority", "localhost:8801", ":scheme", "http",
				"content-type", "application/json", "content-length", strconv.Itoa(len(body)), "x-request-id", "bench").Proto()}},
		},
		Body: &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}},
		RespHeaders: &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: envoytest.H(
			":status", "200", "content-type", "application/json", "content-length", strconv.Itoa(len(answer))).Proto()}}},
		RespBody: &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: answer, EndOfStream: true}}},
	}
}

// RoundTrip plays one request's messages on a new stream.
func RoundTrip(ctx context.Context, c extprocv3.ExternalProcessorClient, m Messages) error {
	s, err := c.Process(ctx)
	if err != nil {
		return err
	}
	for _, req := range []*extprocv3.ProcessingRequest{m.Headers, m.Body, m.RespHeaders, m.RespBody} {
		if err := s.Send(req); err != nil {
			return err
		}
		if _, err := s.Recv(); err != nil {
			return err
		}
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	if _, err := s.Recv(); err != io.EOF {
		return err
	}
	return nil
}
