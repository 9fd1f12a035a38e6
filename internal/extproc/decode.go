package extproc

import (
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/encoding/protowire"
)

// decodeRequest fills m, a reset ProcessingRequest, with what b encodes, for
// the messages Envoy sends: the request oneof (headers, body, trailers),
// observability_mode and protocol_config, each field once, with their
// wire types, and strings that are valid UTF-8. Anything else (another
// field, an unknown one, a field repeated, a malformed message) returns
// false with m partly filled: the caller then resets it and leaves it to
// proto.Unmarshal, so a message decodes to what proto.Unmarshal makes of it
// either way (TestDecodeRequest, FuzzDecodeRequest).
//
// protobuf-go's generic decoding cost about 9,000 instructions and
// about 25 allocations for one request's headers (a reflective allocation
// per message and oneof wrapper, a copy per header name and value); here
// the bytes are the caller's own copy of the message, taken once, which the
// strings and byte slices share (a received message is never written to,
// and each byte slice's capacity is its length, so an append copies), and a
// header map's values are one allocation.
func decodeRequest(b []byte, m *extprocv3.ProcessingRequest) bool {
	var seen uint16 // bit n: field n was read
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 15 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		if typ == protowire.VarintType && num == 10 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			m.ObservabilityMode = protowire.DecodeBool(v)
			b = b[n:]
			continue
		}
		if typ != protowire.BytesType {
			return false
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num >= 2 && num <= 7 && m.Request != nil {
			return false // a second member of the oneof
		}
		switch num {
		case 2, 3:
			h := &extprocv3.HttpHeaders{}
			if !decodeHeaders(v, h) {
				return false
			}
			if num == 2 {
				m.Request = &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: h}
			} else {
				m.Request = &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: h}
			}
		case 4, 5:
			h := &extprocv3.HttpBody{}
			if !decodeBody(v, h) {
				return false
			}
			if num == 4 {
				m.Request = &extprocv3.ProcessingRequest_RequestBody{RequestBody: h}
			} else {
				m.Request = &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: h}
			}
		case 6, 7:
			t := &extprocv3.HttpTrailers{}
			if !decodeTrailers(v, t) {
				return false
			}
			if num == 6 {
				m.Request = &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: t}
			} else {
				m.Request = &extprocv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: t}
			}
		case 11:
			pc := &extprocv3.ProtocolConfiguration{}
			if !decodeProtocol(v, pc) {
				return false
			}
			m.ProtocolConfig = pc
		default:
			return false
		}
	}
	return true
}

func decodeHeaders(b []byte, h *extprocv3.HttpHeaders) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 7 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			h.Headers = &corev3.HeaderMap{}
			if !decodeHeaderMap(v, h.Headers) {
				return false
			}
		case num == 3 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			h.EndOfStream = protowire.DecodeBool(v)
		default:
			return false
		}
	}
	return true
}

func decodeTrailers(b []byte, t *extprocv3.HttpTrailers) bool {
	if len(b) == 0 {
		return true
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return false
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return false // malformed, or a field after the map
	}
	t.Trailers = &corev3.HeaderMap{}
	return decodeHeaderMap(v, t.Trailers)
}

// decodeHeaderMap decodes the map's entries into one array of values, the
// map's list pointing into it.
func decodeHeaderMap(b []byte, hm *corev3.HeaderMap) bool {
	count := 0
	for rest := b; len(rest) > 0; count++ {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			return false
		}
		_, m := protowire.ConsumeBytes(rest[n:])
		if m < 0 {
			return false
		}
		rest = rest[n+m:]
	}
	if count == 0 {
		return true
	}
	vals := make([]corev3.HeaderValue, count)
	hm.Headers = make([]*corev3.HeaderValue, count)
	for i := range vals {
		_, _, n := protowire.ConsumeTag(b)
		v, m := protowire.ConsumeBytes(b[n:])
		b = b[n+m:]
		if !decodeHeaderValue(v, &vals[i]) {
			return false
		}
		hm.Headers[i] = &vals[i]
	}
	return true
}

func decodeHeaderValue(b []byte, h *corev3.HeaderValue) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 3 || typ != protowire.BytesType || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
		switch num {
		case 1, 2:
			if !validUTF8Bytes(v) {
				return false
			}
			if num == 1 {
				h.Key = unsafeString(v)
			} else {
				h.Value = unsafeString(v)
			}
		case 3:
			h.RawValue = ownBytes(v)
		default:
			return false
		}
	}
	return true
}

func decodeBody(b []byte, h *extprocv3.HttpBody) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 7 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		if num == 1 {
			if typ != protowire.BytesType {
				return false
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			h.Body = ownBytes(v)
			continue
		}
		if typ != protowire.VarintType {
			return false
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case 2:
			h.EndOfStream = protowire.DecodeBool(v)
		case 3:
			h.EndOfStreamWithoutMessage = protowire.DecodeBool(v)
		case 4:
			h.GrpcMessageCompressed = protowire.DecodeBool(v)
		case 5:
			h.DrainComplete = protowire.DecodeBool(v)
		default:
			return false
		}
	}
	return true
}

func decodeProtocol(b []byte, pc *extprocv3.ProtocolConfiguration) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 7 || typ != protowire.VarintType || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		v, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
		switch num {
		case 1:
			pc.RequestBodyMode = filterv3.ProcessingMode_BodySendMode(int32(v))
		case 2:
			pc.ResponseBodyMode = filterv3.ProcessingMode_BodySendMode(int32(v))
		case 3:
			pc.SendBodyWithoutWaitingForHeaderResponse = protowire.DecodeBool(v)
		default:
			return false
		}
	}
	return true
}

// ownBytes is a bytes field as protobuf-go sets it: nil when empty.
func ownBytes(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return v[:len(v):len(v)]
}

func validUTF8Bytes(v []byte) bool {
	for _, c := range v {
		if c >= utf8.RuneSelf {
			return utf8.Valid(v)
		}
	}
	return true
}
