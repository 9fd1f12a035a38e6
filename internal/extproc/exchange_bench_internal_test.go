package extproc

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/recipes"
)

// BenchConfig is the providers section the extproc benchmarks route with
// (cmd/junction-bench's models), followed by recipes.BenchRecipesYAML();
// exported for bench_test.go, which is in the external test package.
const BenchConfig = `version: v1
providers:
  defaults: {default_model: small}
  reasoning_families:
    qwen3: {type: chat_template_kwargs, parameter: enable_thinking}
  models:
    - name: small
      reasoning_family: qwen3
      pricing: {currency: USD, prompt_per_1m: 0.10, completion_per_1m: 0.40}
      backend_refs: [{base_url: "http://127.0.0.1:18001/v1", provider: openai}]
    - name: big
      backend_refs: [{base_url: "http://127.0.0.1:18002/v1", provider: openai}]
`

// memStream is an ext_proc stream without a transport: it hands the
// handler messages decoded from their wire bytes and marshals what it
// sends, both with the codec NewGRPCServer installs, as gRPC would.
type memStream struct {
	grpc.ServerStream
	ctx  context.Context
	in   [][]byte
	next int
	out  int // bytes sent
}

func (s *memStream) Context() context.Context { return s.ctx }
func (s *memStream) Recv() (*extprocv3.ProcessingRequest, error) {
	if s.next == len(s.in) {
		return nil, io.EOF
	}
	m := &extprocv3.ProcessingRequest{}
	if err := serverCodec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(s.in[s.next])}, m); err != nil {
		return nil, err
	}
	s.next++
	return m, nil
}
func (s *memStream) Send(r *extprocv3.ProcessingResponse) error { return s.SendMsg(r) }
func (s *memStream) SendMsg(m any) error {
	data, err := serverCodec.Marshal(m)
	if err != nil {
		return err
	}
	s.out += data.Len()
	data.Free()
	return nil
}
func (s *memStream) SetHeader(metadata.MD) error  { return nil }
func (s *memStream) SendHeader(metadata.MD) error { return nil }
func (s *memStream) SetTrailer(metadata.MD)       {}

func hdrs(kv ...string) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	for i := 0; i < len(kv); i += 2 {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return m
}

// BenchmarkExtprocHandler is BenchmarkExtprocDecision's exchange without
// gRPC's transport: the server's own work per stream, with the messages
// unmarshalled as gRPC's codec does and marshalled as NewGRPCServer's does. No goroutine switches
// either, so callgrind's inclusive costs per function are meaningful here
// (they are not across grpc-go's goroutines).
func BenchmarkExtprocHandler(b *testing.B) {
	doc, err := recipes.Parse([]byte(BenchConfig + recipes.BenchRecipesYAML()))
	if err != nil {
		b.Fatal(err)
	}
	gen, err := engine.Compile(doc, recipes.Hash(doc), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	srv := New(Options{Runtime: engine.NewRuntime(gen), Metrics: metrics.New(prometheus.NewRegistry()),
		Plugins: native.Stage(), Logger: slog.New(slog.DiscardHandler)})
	body := []byte(`{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"What is the capital of France? Answer in one word, please."}],"max_tokens":16}`)
	answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":1,"total_tokens":21}}`)
	msgs := []*extprocv3.ProcessingRequest{
		{ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: filterv3.ProcessingMode_BUFFERED, ResponseBodyMode: filterv3.ProcessingMode_BUFFERED},
			Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: hdrs(
				":method", "POST", ":path", "/v1/chat/completions", ":authority", "localhost:8801", ":scheme", "http",
				"content-type", "application/json", "content-length", strconv.Itoa(len(body)), "x-request-id", "bench")}}},
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}},
		{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: hdrs(
			":status", "200", "content-type", "application/json", "content-length", strconv.Itoa(len(answer)))}}},
		{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: answer, EndOfStream: true}}},
	}
	var in [][]byte
	for _, m := range msgs {
		w, err := proto.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		in = append(in, w)
	}
	st := &memStream{in: in}
	b.ReportAllocs()
	for b.Loop() {
		ctx, _ := streamTap(context.Background(), &tap.Info{FullMethodName: processMethod})
		st.ctx, st.next = ctx, 0
		if err := srv.Process(st); err != nil {
			b.Fatal(err)
		}
	}
}
