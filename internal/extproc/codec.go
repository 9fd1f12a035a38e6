package extproc

import (
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// codec is the gRPC codec NewGRPCServer installs (grpc.ForceServerCodecV2):
// gRPC's protobuf codec, except for a reply this package already wrote as
// its wire bytes (wireReply, replies.go), which is sent as those bytes.
// gRPC's codec would size and marshal the ProcessingResponse carrying them
// (protobuf-go walks its dozen fields to find them empty, then copies the
// unknown fields into a new buffer): about 1,250 instructions and three
// allocations per reply for bytes that are already there. Every other
// message (the local replies and trailers answers, health, reflection, and
// everything received) is gRPC's codec's.
type codec struct{ proto encoding.CodecV2 }

// serverCodec is the codec NewGRPCServer installs.
var serverCodec = codec{proto: encoding.GetCodecV2(protocodec.Name)}

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if w, ok := v.(*wireReply); ok {
		// The buffer and the slice of it are the reply's own: a reply is
		// sent once and never changed, and gRPC only reads what it is given
		// (SliceBuffer's Ref and Free do nothing).
		w.bufs[0] = &w.buf
		return w.bufs[:], nil
	}
	return c.proto.Marshal(v)
}

// Unmarshal decodes Envoy's ProcessingRequest itself (decodeRequest) from
// one copy of the message, which the message's strings and bytes then
// share; whatever decodeRequest leaves, and every other message, is
// protobuf-go's, as gRPC's codec does it.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*extprocv3.ProcessingRequest)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	b := data.Materialize() // gRPC reuses its buffers once this returns
	m.Reset()
	if decodeRequest(b, m) {
		return nil
	}
	return proto.Unmarshal(b, m)
}

// Name is the protobuf codec's: the content subtype is the same.
func (codec) Name() string { return protocodec.Name }

// wireReply is a reply as sent on a stream of NewGRPCServer's (exchange.wire):
// the bytes msg wrote, which codec sends as they are, and the
// ProcessingResponse carrying them as its unknown fields, which is what
// the value is to anything else that reads it (a stats handler, another
// codec: it is a proto.Message marshalled to the same bytes).
type wireReply struct {
	*extprocv3.ProcessingResponse
	buf  mem.SliceBuffer
	bufs [1]mem.Buffer
}
