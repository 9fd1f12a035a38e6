package sdk

import (
	"unsafe"

	"github.com/junction-router/junction/hostapi/abi"
)

// The request view reads the record lazily, through its offset table: a
// plugin that never asks for the messages never walks them. Every function
// call costs a Go guest dozens of wasm instructions and this runs on every
// request, so the helpers are small enough to be inlined. Strings are views
// of the record (no copies), which is why a Request is valid only during
// its handler call.

// load prepares r to read the record b: the fixed part, the offset table
// (each offset in order and inside b), decision, model, body and status.
func (r *Request) load(b []byte) error {
	*r = Request{b: b, headers: r.headers[:0], messages: r.messages[:0], signals: r.signals[:0]}
	if len(b) < abi.RequestFixedSize {
		return abi.ErrTruncated
	}
	if le32(b, 0) != abi.Version {
		return abi.ErrVersion
	}
	r.phase, r.mode = abi.Phase(b[4]), abi.Mode(b[5])
	prev := abi.RequestFixedSize
	for i := range r.at {
		at := int(le32(b, 8+4*i))
		if at < prev || at+4 > len(b) {
			return abi.ErrOffsets
		}
		r.at[i], prev = at, at
	}
	var ok bool
	p := abi.RequestFixedSize
	if r.decision, p, ok = str(b, p); !ok {
		return abi.ErrTruncated
	}
	if r.model, p, ok = str(b, p); !ok || p != r.at[0] {
		return abi.ErrOffsets
	}
	var body, resp string
	if body, p, ok = str(b, r.at[3]); !ok || p != r.at[4] {
		return abi.ErrOffsets
	}
	r.body = unsafe.Slice(unsafe.StringData(body), len(body))
	r.status = le32(b, r.at[4])
	if resp, p, ok = str(b, r.at[4]+4); !ok || p != len(b) {
		return abi.ErrTruncated
	}
	r.respBody = unsafe.Slice(unsafe.StringData(resp), len(resp))
	return nil
}

func le32(b []byte, p int) uint32 {
	_ = b[p+3]
	return uint32(b[p]) | uint32(b[p+1])<<8 | uint32(b[p+2])<<16 | uint32(b[p+3])<<24
}

// str reads a length-prefixed string at p as a view of b.
func str(b []byte, p int) (string, int, bool) {
	if p < 0 || p+4 > len(b) {
		return "", p, false
	}
	n := int(le32(b, p))
	p += 4
	if n > len(b)-p {
		return "", p, false
	}
	if n == 0 {
		return "", p, true
	}
	return unsafe.String(&b[p], n), p + n, true
}

// count reads a list length at p, refusing one the rest of b cannot hold
// (every element is at least 8 bytes).
func count(b []byte, p int) (int, int, bool) {
	if p < 0 || p+4 > len(b) {
		return 0, p, false
	}
	n := int(le32(b, p))
	p += 4
	if n > (len(b)-p)/8 {
		return 0, p, false
	}
	return n, p, true
}

// decodeHeaders, decodeMessages and decodeSignals decode the list at p into
// dst; a malformed list gives what decoded before the fault (the host
// writes well-formed records; this only keeps a bad one from trapping).
func decodeHeaders(b []byte, p int, dst []abi.Header) []abi.Header {
	n, p, ok := count(b, p)
	for i := 0; ok && i < n; i++ {
		var h abi.Header
		if h.Name, p, ok = str(b, p); ok {
			if h.Value, p, ok = str(b, p); ok {
				dst = append(dst, h)
			}
		}
	}
	return dst
}

func decodeMessages(b []byte, p int, dst []abi.Message) []abi.Message {
	n, p, ok := count(b, p)
	for i := 0; ok && i < n; i++ {
		var m abi.Message
		if m.Role, p, ok = str(b, p); ok {
			if m.Content, p, ok = str(b, p); ok {
				dst = append(dst, m)
			}
		}
	}
	return dst
}

func decodeSignals(b []byte, p int, dst []abi.Signal) []abi.Signal {
	n, p, ok := count(b, p)
	for i := 0; ok && i < n; i++ {
		var s abi.Signal
		if s.Kind, p, ok = str(b, p); ok {
			if s.Name, p, ok = str(b, p); ok {
				dst = append(dst, s)
			}
		}
	}
	return dst
}
