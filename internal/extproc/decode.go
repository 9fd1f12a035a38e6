package extproc

import (
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
// and each byte slice's capacity is its length, so an append copies), a
// header map's values are one allocation, and a headers or body message's
// few messages another.
func decodeRequest(b []byte, m *extprocv3.ProcessingRequest) bool {
	var seen uint16 // bit n: field n was read
	for len(b) > 0 {
		num, typ, x, v, n := nextField(b)
		if n < 0 || num > 15 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		if typ == protowire.VarintType {
			if num != 10 {
				return false
			}
			m.ObservabilityMode = protowire.DecodeBool(x)
			continue
		}
		if num >= 2 && num <= 7 && m.Request != nil {
			return false // a second member of the oneof
		}
		switch num {
		case 2, 3:
			hs := &headersMessage{}
			if !hs.decode(v) {
				return false
			}
			if num == 2 {
				hs.req.RequestHeaders = &hs.h
				m.Request = &hs.req
			} else {
				hs.resp.ResponseHeaders = &hs.h
				m.Request = &hs.resp
			}
		case 4, 5:
			bm := &bodyMessage{}
			if !decodeBody(v, &bm.b) {
				return false
			}
			if num == 4 {
				bm.req.RequestBody = &bm.b
				m.Request = &bm.req
			} else {
				bm.resp.ResponseBody = &bm.b
				m.Request = &bm.resp
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

// headersMessage is a headers message's messages, allocated together: the
// oneof's wrapper (one of the two), the headers, their map and the map's
// list when it fits.
type headersMessage struct {
	req  extprocv3.ProcessingRequest_RequestHeaders
	resp extprocv3.ProcessingRequest_ResponseHeaders
	h    extprocv3.HttpHeaders
	hm   corev3.HeaderMap
	list [16]*corev3.HeaderValue
}

func (hs *headersMessage) decode(b []byte) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, x, v, n := nextField(b)
		if n < 0 || num > 7 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			hs.h.Headers = &hs.hm
			if !decodeHeaderMap(v, &hs.hm, hs.list[:0]) {
				return false
			}
		case num == 3 && typ == protowire.VarintType:
			hs.h.EndOfStream = protowire.DecodeBool(x)
		default:
			return false
		}
	}
	return true
}

// bodyMessage is a body message's messages, allocated together.
type bodyMessage struct {
	req  extprocv3.ProcessingRequest_RequestBody
	resp extprocv3.ProcessingRequest_ResponseBody
	b    extprocv3.HttpBody
}

func decodeTrailers(b []byte, t *extprocv3.HttpTrailers) bool {
	if len(b) == 0 {
		return true
	}
	num, typ, _, v, n := nextField(b)
	if n < 0 || num != 1 || typ != protowire.BytesType || n != len(b) {
		return false // malformed, or a field after the map
	}
	t.Trailers = &corev3.HeaderMap{}
	return decodeHeaderMap(v, t.Trailers, nil)
}

// decodeHeaderMap decodes the map's entries into one array of values, the
// map's list pointing into it; the list is list's room when it fits.
func decodeHeaderMap(b []byte, hm *corev3.HeaderMap, list []*corev3.HeaderValue) bool {
	count := 0
	for rest := b; len(rest) > 0; count++ {
		num, typ, _, _, n := nextField(rest)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			return false
		}
		rest = rest[n:]
	}
	if count == 0 {
		return true
	}
	vals := make([]corev3.HeaderValue, count)
	if cap(list) < count {
		list = make([]*corev3.HeaderValue, count)
	}
	hm.Headers = list[:count:count]
	for i := range vals {
		_, _, _, v, n := nextField(b)
		b = b[n:]
		if !decodeHeaderValue(v, &vals[i]) {
			return false
		}
		hm.Headers[i] = &vals[i]
	}
	return true
}

func decodeHeaderValue(b []byte, h *corev3.HeaderValue) bool {
	// The shape Envoy sends: the key, then raw_value, each shorter than 128
	// bytes (a tag and a one-byte length each), read without nextField.
	if len(b) >= 4 && b[0] == 1<<3|byte(protowire.BytesType) && b[1] < 0x80 {
		k := 2 + int(b[1])
		if k+2 <= len(b) && b[k] == 3<<3|byte(protowire.BytesType) && b[k+1] < 0x80 && k+2+int(b[k+1]) == len(b) {
			key := unsafeString(b[2:k])
			if !validUTF8(key) {
				return false
			}
			h.Key, h.RawValue = key, ownBytes(b[k+2:])
			return true
		}
	}
	var seen uint8
	for len(b) > 0 {
		num, typ, _, v, n := nextField(b)
		if n < 0 || num > 3 || typ != protowire.BytesType || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		switch num {
		case 1, 2:
			s := unsafeString(v)
			if !validUTF8(s) {
				return false
			}
			if num == 1 {
				h.Key = s
			} else {
				h.Value = s
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
		num, typ, x, v, n := nextField(b)
		if n < 0 || num > 7 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		if num == 1 {
			if typ != protowire.BytesType {
				return false
			}
			h.Body = ownBytes(v)
			continue
		}
		if typ != protowire.VarintType {
			return false
		}
		switch num {
		case 2:
			h.EndOfStream = protowire.DecodeBool(x)
		case 3:
			h.EndOfStreamWithoutMessage = protowire.DecodeBool(x)
		case 4:
			h.GrpcMessageCompressed = protowire.DecodeBool(x)
		case 5:
			h.DrainComplete = protowire.DecodeBool(x)
		default:
			return false
		}
	}
	return true
}

func decodeProtocol(b []byte, pc *extprocv3.ProtocolConfiguration) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, x, _, n := nextField(b)
		if n < 0 || num > 7 || typ != protowire.VarintType || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		b = b[n:]
		switch num {
		case 1:
			pc.RequestBodyMode = filterv3.ProcessingMode_BodySendMode(int32(x))
		case 2:
			pc.ResponseBodyMode = filterv3.ProcessingMode_BodySendMode(int32(x))
		case 3:
			pc.SendBodyWithoutWaitingForHeaderResponse = protowire.DecodeBool(x)
		default:
			return false
		}
	}
	return true
}

// nextField reads the field at b's start: its number and wire type, and
// its value, x for a varint, v for bytes; n is the field's length in b,
// negative when it is malformed or of another wire type (which no message
// here has). One-byte tags and lengths, all of Envoy's but a body's
// length, are read inline: protowire's functions cost a call each.
func nextField(b []byte) (num protowire.Number, typ protowire.Type, x uint64, v []byte, n int) {
	if len(b) >= 2 && b[0] < 0x80 && b[1] < 0x80 {
		num, typ = protowire.Number(b[0]>>3), protowire.Type(b[0]&7)
		switch typ {
		case protowire.VarintType:
			return num, typ, uint64(b[1]), nil, 2
		case protowire.BytesType:
			if l := int(b[1]); 2+l <= len(b) {
				return num, typ, 0, b[2 : 2+l], 2 + l
			}
			return 0, 0, 0, nil, -1
		}
		return 0, 0, 0, nil, -1
	}
	num, typ, n = protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, 0, nil, n
	}
	var m int
	switch typ {
	case protowire.VarintType:
		x, m = protowire.ConsumeVarint(b[n:])
	case protowire.BytesType:
		v, m = protowire.ConsumeBytes(b[n:])
	default:
		return 0, 0, 0, nil, -1
	}
	if m < 0 {
		return 0, 0, 0, nil, m
	}
	return num, typ, x, v, n + m
}

// ownBytes is a bytes field as protobuf-go sets it: nil when empty.
func ownBytes(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return v[:len(v):len(v)]
}
