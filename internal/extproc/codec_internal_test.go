package extproc

import (
	"context"
	"net/http"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/junction-router/junction/internal/dataplane"
)

// codecBytes is what c sends for v.
func codecBytes(t *testing.T, c encoding.CodecV2, v any) []byte {
	t.Helper()
	data, err := c.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Free()
	return data.Materialize()
}

// TestCodecOthers: every message but a wireReply goes through gRPC's
// protobuf codec unchanged, both ways, and a message it refuses is refused.
func TestCodecOthers(t *testing.T) {
	grpcCodec := encoding.GetCodecV2(protocodec.Name)
	msgs := []proto.Message{
		immediateResponse(dataplane.ErrorAnswer(dataplane.NewError(400, dataplane.TypeInvalidRequest, "no"), http.Header{"X-Request-Id": {"r1"}}), "junction_400"),
		trailersResponse(true),
		&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":path", RawValue: []byte("/v1/chat/completions")}}}}}},
	}
	for _, m := range msgs {
		want := codecBytes(t, grpcCodec, m)
		if got := codecBytes(t, serverCodec, m); string(got) != string(want) {
			t.Errorf("%T: %x, gRPC's codec %x", m, got, want)
		}
		back := m.ProtoReflect().New().Interface()
		if err := serverCodec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, back); err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if again := codecBytes(t, grpcCodec, back); string(again) != string(want) {
			t.Errorf("%T: unmarshalled and marshalled again %x, want %x", m, again, want)
		}
	}
	bad := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{
		Headers: &extprocv3.HeaderMutation{RemoveHeaders: []string{"x-\xff"}}}}}
	if _, err := serverCodec.Marshal(bad); err == nil {
		t.Error("a header name that is not UTF-8 was marshalled")
	}
	if serverCodec.Name() != protocodec.Name {
		t.Errorf("name %q", serverCodec.Name())
	}
}

// sendStream records how a reply was handed to gRPC.
type sendStream struct {
	grpc.ServerStream
	sent, sentMsg int
	last          any
}

func (s *sendStream) Context() context.Context { return context.Background() }
func (s *sendStream) Send(r *extprocv3.ProcessingResponse) error {
	s.sent++
	s.last = r
	return nil
}
func (s *sendStream) SendMsg(m any) error {
	s.sentMsg++
	s.last = m
	return nil
}
func (s *sendStream) Recv() (*extprocv3.ProcessingRequest, error) { panic("not received") }

// TestSendReply: on a stream of NewGRPCServer's (wire) a reply goes as its
// bytes; elsewhere, and for a reply built as messages, as the message; in
// observability mode not at all.
func TestSendReply(t *testing.T) {
	for _, wire := range []bool{false, true} {
		st := &sendStream{}
		x := &exchange{stream: st, ctx: st.Context(), wire: wire}
		var m mutation
		m.put("x-selected-model", "small", false)
		if err := x.sendReply(x.headersResponse(false, &m, true)); err != nil {
			t.Fatal(err)
		}
		if wire {
			w, ok := st.last.(*wireReply)
			if st.sentMsg != 1 || !ok || w.ProcessingResponse != &x.replies.r[0].pr {
				t.Errorf("wire: sent %d, as bytes %d (%T)", st.sent, st.sentMsg, st.last)
			}
		} else if st.sent != 1 || st.sentMsg != 0 {
			t.Errorf("not wire: sent %d, as bytes %d", st.sent, st.sentMsg)
		}
		var bad mutation
		bad.put("x-\xff", "1", false)
		st.sent, st.sentMsg = 0, 0
		if err := x.sendReply(x.bodyResponse(false).headers(&bad)); err != nil {
			t.Fatal(err)
		}
		if st.sent != 1 || st.sentMsg != 0 {
			t.Errorf("wire %v, messages: sent %d, as bytes %d", wire, st.sent, st.sentMsg)
		}
		x.observe = true
		st.sent, st.sentMsg = 0, 0
		if err := x.sendReply(x.bodyResponse(true)); err != nil || st.sent+st.sentMsg != 0 {
			t.Errorf("observability mode: sent %d, as bytes %d (%v)", st.sent, st.sentMsg, err)
		}
	}
}
