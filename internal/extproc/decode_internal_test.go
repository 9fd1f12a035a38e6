package extproc

import (
	"math/rand/v2"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// randHeaderMap is a header map as Envoy sends one (names and raw values),
// now and then with value set, an empty value, or a name that is not ASCII.
func randHeaderMap(rng *rand.Rand) *corev3.HeaderMap {
	names := []string{":method", ":path", ":status", "content-type", "x-request-id", "", "x-é", "accept-encoding", "x-日本"}
	values := []string{"POST", "/v1/chat/completions", "200", "application/json", "", "caf\xc3\xa9", "\xff\xfe", "a long value with spaces"}
	hm := &corev3.HeaderMap{}
	n := rng.IntN(12)
	if rng.IntN(8) == 0 {
		n = 0
	}
	for range n {
		h := &corev3.HeaderValue{Key: names[rng.IntN(len(names))]}
		switch rng.IntN(6) {
		case 0:
			h.Value = values[rng.IntN(6)] // value is a string: valid UTF-8 only
		case 1:
			h.Value, h.RawValue = "v", []byte(values[rng.IntN(len(values))])
		case 2:
			h.RawValue = []byte{} // not sent
		default:
			h.RawValue = []byte(values[rng.IntN(len(values))])
		}
		hm.Headers = append(hm.Headers, h)
	}
	return hm
}

// randRequest is a ProcessingRequest of any kind Envoy sends, sometimes
// with fields decodeRequest leaves to protobuf-go.
func randRequest(rng *rand.Rand) *extprocv3.ProcessingRequest {
	m := &extprocv3.ProcessingRequest{ObservabilityMode: rng.IntN(4) == 0}
	headers := func() *extprocv3.HttpHeaders {
		h := &extprocv3.HttpHeaders{EndOfStream: rng.IntN(2) == 0}
		if rng.IntN(10) > 0 {
			h.Headers = randHeaderMap(rng)
		}
		if rng.IntN(20) == 0 {
			// Deprecated, but an older Envoy may still send it: the decoder
			// must leave it to proto.Unmarshal.
			//lint:ignore SA1019 the field is what the test sends
			h.Attributes = map[string]*structpb.Struct{"a": {}}
		}
		return h
	}
	body := func() *extprocv3.HttpBody {
		b := &extprocv3.HttpBody{EndOfStream: rng.IntN(2) == 0}
		switch rng.IntN(4) {
		case 0:
		case 1:
			b.Body = make([]byte, 20000)
			for i := range b.Body {
				b.Body[i] = byte(rng.IntN(256))
			}
		default:
			b.Body = []byte(`{"model":"MoM","messages":[]}`)
		}
		if rng.IntN(10) == 0 {
			b.EndOfStreamWithoutMessage, b.GrpcMessageCompressed, b.DrainComplete = rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0
		}
		return b
	}
	trailers := func() *extprocv3.HttpTrailers {
		t := &extprocv3.HttpTrailers{}
		if rng.IntN(2) == 0 {
			t.Trailers = randHeaderMap(rng)
		}
		return t
	}
	switch rng.IntN(7) {
	case 0:
		m.Request = &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: headers()}
	case 1:
		m.Request = &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: headers()}
	case 2:
		m.Request = &extprocv3.ProcessingRequest_RequestBody{RequestBody: body()}
	case 3:
		m.Request = &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: body()}
	case 4:
		m.Request = &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: trailers()}
	case 5:
		m.Request = &extprocv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: trailers()}
	}
	if rng.IntN(3) == 0 {
		modes := []int32{0, 1, 2, 3, 4, 5, 6, 99, -1}
		m.ProtocolConfig = &extprocv3.ProtocolConfiguration{
			RequestBodyMode:                         filterv3.ProcessingMode_BodySendMode(modes[rng.IntN(len(modes))]),
			ResponseBodyMode:                        filterv3.ProcessingMode_BodySendMode(modes[rng.IntN(len(modes))]),
			SendBodyWithoutWaitingForHeaderResponse: rng.IntN(2) == 0,
		}
	}
	switch rng.IntN(30) {
	case 0:
		m.Attributes = map[string]*structpb.Struct{"envoy.filters.http.ext_proc": {}}
	case 1:
		m.MetadataContext = &corev3.Metadata{}
	case 2:
		m.FlowControlInit = &extprocv3.ProcessingRequest_FlowControlInit{}
	case 3:
		m.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
	}
	return m
}

// sameDecode says whether b decodes through the server's codec to what
// proto.Unmarshal makes of it: the same error, or equal messages whose
// bytes fields are nil in the same places.
func sameDecode(t *testing.T, b []byte) {
	t.Helper()
	got, want := &extprocv3.ProcessingRequest{}, &extprocv3.ProcessingRequest{}
	gerr := serverCodec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got)
	werr := proto.Unmarshal(b, want)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%x: error %v, proto.Unmarshal's %v", b, gerr, werr)
	}
	if werr != nil {
		return
	}
	if !proto.Equal(got, want) {
		t.Fatalf("%x:\n got %v\nwant %v", b, got, want)
	}
	if g, w := nilBytes(got), nilBytes(want); g != w {
		t.Fatalf("%x: nil bytes fields %q, proto.Unmarshal's %q", b, g, w)
	}
}

// nilBytes lists, in order, whether each bytes field and header list of m
// is nil.
func nilBytes(m *extprocv3.ProcessingRequest) string {
	var s []byte
	mark := func(isNil bool) {
		if isNil {
			s = append(s, 'n')
		} else {
			s = append(s, 'v')
		}
	}
	hm := func(h *corev3.HeaderMap) {
		mark(h.GetHeaders() == nil)
		for _, v := range h.GetHeaders() {
			mark(v.RawValue == nil)
		}
	}
	hm(m.GetRequestHeaders().GetHeaders())
	hm(m.GetResponseHeaders().GetHeaders())
	hm(m.GetRequestTrailers().GetTrailers())
	hm(m.GetResponseTrailers().GetTrailers())
	mark(m.GetRequestBody().GetBody() == nil)
	mark(m.GetResponseBody().GetBody() == nil)
	return string(s)
}

// TestDecodeRequest: every message, whole or damaged, decodes through the
// server's codec as protobuf-go decodes it; the messages Envoy sends take
// decodeRequest's path.
func TestDecodeRequest(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	fast := 0
	for i := range 5000 {
		m := randRequest(rng)
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		sameDecode(t, b)
		plain := m.Attributes == nil && m.MetadataContext == nil && m.FlowControlInit == nil &&
			len(m.ProtoReflect().GetUnknown()) == 0 && !headerAttributes(m)
		if ok := decodeRequest(b, &extprocv3.ProcessingRequest{}); ok != plain {
			t.Fatalf("%v: decodeRequest %v", m, ok)
		}
		if plain {
			fast++
		}
		// Damaged: a byte changed, the message cut short, or two messages
		// in one (fields repeated, merged by protobuf-go).
		d := append([]byte(nil), b...)
		switch i % 3 {
		case 0:
			if len(d) > 0 {
				d[rng.IntN(len(d))] ^= byte(1 + rng.IntN(255))
			}
		case 1:
			d = d[:rng.IntN(len(d)+1)]
		case 2:
			o, _ := proto.Marshal(randRequest(rng))
			d = append(d, o...)
		}
		sameDecode(t, d)
	}
	if fast < 4000 {
		t.Errorf("%d of 5000 messages decoded by decodeRequest", fast)
	}
	// What protobuf-go refuses or treats apart: invalid UTF-8 in a name or
	// a value, a field repeated, a wrong wire type, field 0, a bool as a
	// long varint, an enum beyond int32; and empty bytes fields, which
	// proto.Marshal does not write but a peer may (they decode to nil).
	hv := func(fields ...[]byte) []byte {
		var v []byte
		for _, f := range fields {
			v = append(v, f...)
		}
		hm := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), v)
		hh := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), hm)
		return protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), hh)
	}
	str := func(n protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, n, protowire.BytesType), s)
	}
	for _, b := range [][]byte{
		hv(str(1, "x-\xff")),
		hv(str(1, "k"), str(3, "")),
		hv(str(1, ""), str(2, "")),
		protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), str(1, "")),
		protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), append(str(1, "{}"), 0x10, 0x01)),
		hv(str(2, "\xc3")),
		hv(str(3, "\xff")),
		hv(str(1, "k"), str(1, "k2")),
		hv(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)),
		{0x00, 0x01},
		protowire.AppendVarint(protowire.AppendTag(nil, 10, protowire.VarintType), 1<<63),
		protowire.AppendBytes(protowire.AppendTag(nil, 10, protowire.BytesType), nil),
		protowire.AppendBytes(protowire.AppendTag(nil, 11, protowire.BytesType),
			protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1<<40+2)),
		{},
	} {
		sameDecode(t, b)
	}
}

// FuzzDecodeRequest: any bytes decode through the server's codec as
// protobuf-go decodes them.
func FuzzDecodeRequest(f *testing.F) {
	rng := rand.New(rand.NewPCG(18, 2))
	for range 20 {
		b, _ := proto.Marshal(randRequest(rng))
		if len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameDecode(t, b) })
}

// headerAttributes reports whether m's headers carry the deprecated
// attributes field, which the decoder leaves to proto.Unmarshal.
func headerAttributes(m *extprocv3.ProcessingRequest) bool {
	//lint:ignore SA1019 the test checks the field's handling
	return m.GetRequestHeaders().GetAttributes() != nil || m.GetResponseHeaders().GetAttributes() != nil
}
