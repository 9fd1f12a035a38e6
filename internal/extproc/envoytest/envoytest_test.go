package envoytest

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// scripted answers each message with the next function's answer.
type scripted struct {
	extprocv3.UnimplementedExternalProcessorServer
	answers []func(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse
}

func (s *scripted) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	for _, a := range s.answers {
		req, err := stream.Recv()
		if err != nil {
			return nil
		}
		if err := stream.Send(a(req)); err != nil {
			return err
		}
	}
	_, _ = stream.Recv()
	return nil
}

func client(t *testing.T, srv extprocv3.ExternalProcessorServer) *Client {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///x",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return New(conn)
}

func headersOK(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}}
}

func setHeader(k, v string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD}
}

func TestMutationRulesAndContentLength(t *testing.T) {
	body := func(newBody string, cl string) func(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
		return func(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
			return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{
				Response: &extprocv3.CommonResponse{
					HeaderMutation: &extprocv3.HeaderMutation{
						SetHeaders:    []*corev3.HeaderValueOption{setHeader(":authority", "evil"), setHeader("x-envoy-upstream", "x"), setHeader("content-length", cl), setHeader("x-a", "1")},
						RemoveHeaders: []string{":path", "x-b"},
					},
					BodyMutation:    &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: []byte(newBody)}},
					ClearRouteCache: true,
				},
			}}}
		}
	}
	// Envoy's defaults: x-envoy-* refused (Standard allows them, as
	// examples/envoy/envoy.yaml's mutation_rules do).
	defaults := Standard
	defaults.AllowEnvoyHeaders = false
	c := client(t, &scripted{answers: []func(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse{headersOK, body("hello", "5")}})
	s, err := c.Open(context.Background(), defaults)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.SendRequest(Request{Method: "POST", Path: "/p", Headers: H("x-b", "2", "content-length", "3"), Body: []byte("abc")})
	if err != nil {
		t.Fatal(err)
	}
	up := out.Upstream
	if string(up.Body) != "hello" || up.Headers.Get("x-a") != "1" || up.Headers.Has("x-b") || up.Headers.Get(":path") != "/p" ||
		up.Headers.Get(":authority") != "envoytest.local" || !out.ClearRouteCache {
		t.Errorf("upstream %+v", up)
	}
	if strings.Join(s.Rejected, ";") != "set :authority;set x-envoy-upstream;remove :path" {
		t.Errorf("rejected %v", s.Rejected)
	}
	if s.Sent[0].GetProtocolConfig().GetRequestBodyMode() != Buffered {
		t.Error("protocol_config missing from the first message")
	}

	c = client(t, &scripted{answers: []func(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse{headersOK, body("hello", "3")}})
	s, _ = c.Open(context.Background(), Standard)
	if _, err := s.SendRequest(Request{Method: "POST", Path: "/p", Headers: H("content-length", "3"), Body: []byte("abc")}); !errors.Is(err, ErrContentLength) {
		t.Errorf("a wrong content-length went unnoticed: %v", err)
	}
}

func TestSpuriousAnswer(t *testing.T) {
	c := client(t, &scripted{answers: []func(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse{
		func(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
			return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}}
		},
	}})
	s, _ := c.Open(context.Background(), Standard)
	_, err := s.SendRequest(Request{Method: "GET", Path: "/"})
	if err == nil || !strings.Contains(err.Error(), "spurious") {
		t.Errorf("a response_headers answer to request_headers was accepted: %v", err)
	}
}

func TestStreamedResponsePieces(t *testing.T) {
	respHeaders := func(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}}
	}
	upper := func(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
		b := strings.ToUpper(string(req.GetResponseBody().GetBody()))
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{
			Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: []byte(b)}}}}}}
	}
	c := client(t, &scripted{answers: []func(*extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse{respHeaders, upper, upper}})
	s, _ := c.Open(context.Background(), Config{ResponseBody: Streamed})
	out, err := s.SendResponse(Response{Status: 200, Headers: H("content-length", "6"), Pieces: [][]byte{[]byte("abc"), []byte("def")}})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Downstream.Body) != "ABCDEF" || len(out.Downstream.Pieces) != 2 || out.Downstream.Headers.Has("content-length") {
		t.Errorf("%+v", out.Downstream)
	}
}
