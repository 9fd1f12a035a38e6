package sdk

import (
	"unsafe"

	"github.com/junction-router/junction/hostapi/abi"
)

// decodeRequest reads a request record into r without copying: strings and
// byte slices point into b (the buffer junction_alloc gave the host), and r's
// slices are reused from call to call. This is why a Request is valid only
// during the handler call.
func decodeRequest(b []byte, r *abi.Request) error {
	d := abi.Decoder{B: b}
	if v := d.U32(); d.Err() == nil && v != abi.Version {
		return abi.ErrVersion
	}
	r.Phase = abi.Phase(d.U8())
	r.Mode = abi.Mode(d.U8())
	d.U8()
	d.U8()
	r.Decision = view(d.Bytes())
	r.Model = view(d.Bytes())
	n := d.Count(8)
	r.Headers = resize(r.Headers, n)
	for i := range r.Headers {
		r.Headers[i] = abi.Header{Name: view(d.Bytes()), Value: view(d.Bytes())}
	}
	n = d.Count(8)
	r.Messages = resize(r.Messages, n)
	for i := range r.Messages {
		r.Messages[i] = abi.Message{Role: view(d.Bytes()), Content: view(d.Bytes())}
	}
	n = d.Count(8)
	r.Signals = resize(r.Signals, n)
	for i := range r.Signals {
		r.Signals[i] = abi.Signal{Kind: view(d.Bytes()), Name: view(d.Bytes())}
	}
	r.Body = d.Bytes()
	r.Status = d.U32()
	r.ResponseBody = d.Bytes()
	return d.Err()
}

func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
