package abi

import "errors"

// Request is what a handler reads: the routed request (and, in the response
// phase, the upstream answer). Record layout, in order:
//
//	u32   version        Version
//	u8    phase          Phase
//	u8    mode           Mode
//	u16   reserved       0
//	u32   headers_at     offset of the headers list from the record's start
//	u32   messages_at    offset of the messages list
//	u32   signals_at     offset of the signals list
//	u32   body_at        offset of body
//	u32   status_at      offset of status
//	str   decision       the matched decision's name
//	str   model          the selected model ("" when none)
//	list  headers        of {str name, str value}; names in canonical form
//	list  messages       of {str role, str content}; content flattened to text
//	list  signals        of {str kind, str name}; the signals that matched
//	bytes body           the request body as it will be sent upstream (JSON)
//	u32   status         response phase: the upstream HTTP status, else 0
//	bytes response_body  response phase: the upstream answer's body, else empty
//
// The offsets let a guest read only what it uses (a header plugin need not
// walk the messages); a guest may also ignore them and read in order.
type Request struct {
	Phase    Phase
	Mode     Mode
	Decision string
	Model    string
	Headers  []Header
	Messages []Message
	Signals  []Signal
	Body     []byte
	// Status and ResponseBody are set in the response phase only.
	Status       uint32
	ResponseBody []byte
	// PII is what the router's pii signals detected, nil when none scanned
	// the request. It is not part of the record: the host serves it to the
	// guests that ask, through ImportPIISpans.
	PII *PIISpans
}

// RequestFixedSize is the size of a request record's fixed part: version,
// phase, mode, reserved and the five offsets.
const RequestFixedSize = 28

// Header is one request header value.
type Header struct{ Name, Value string }

// Message is one chat message: its role and its content flattened to text
// (content parts' text joined by newlines). The exact JSON is in Body.
type Message struct{ Role, Content string }

// Signal is a signal that matched: its kind ("keyword", "domain", …) and name.
type Signal struct{ Kind, Name string }

// Size is the length of r's record.
func (r *Request) Size() int {
	n := RequestFixedSize + 4 + len(r.Decision) + 4 + len(r.Model) + 4*3 + 4 + len(r.Body) + 4 + 4 + len(r.ResponseBody)
	for _, h := range r.Headers {
		n += 8 + len(h.Name) + len(h.Value)
	}
	for _, m := range r.Messages {
		n += 8 + len(m.Role) + len(m.Content)
	}
	for _, s := range r.Signals {
		n += 8 + len(s.Kind) + len(s.Name)
	}
	return n
}

// Append encodes r onto b.
func (r *Request) Append(b []byte) []byte {
	e := Encoder{B: b}
	start := len(e.B)
	e.U32(Version)
	e.U8(uint8(r.Phase))
	e.U8(uint8(r.Mode))
	e.U8(0)
	e.U8(0)
	table := len(e.B)
	for i := 0; i < 5; i++ {
		e.U32(0)
	}
	at := func(slot int) { putU32(e.B[table+4*slot:], uint32(len(e.B)-start)) }
	e.Str(r.Decision)
	e.Str(r.Model)
	at(0)
	e.U32(uint32(len(r.Headers)))
	for _, h := range r.Headers {
		e.Str(h.Name)
		e.Str(h.Value)
	}
	at(1)
	e.U32(uint32(len(r.Messages)))
	for _, m := range r.Messages {
		e.Str(m.Role)
		e.Str(m.Content)
	}
	at(2)
	e.U32(uint32(len(r.Signals)))
	for _, s := range r.Signals {
		e.Str(s.Kind)
		e.Str(s.Name)
	}
	at(3)
	e.Bytes(r.Body)
	at(4)
	e.U32(r.Status)
	e.Bytes(r.ResponseBody)
	return e.B
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// ErrVersion is returned when a record carries another ABI version.
var ErrVersion = errors.New("abi: record of another ABI version")

// ErrOffsets is returned when a record's offset table disagrees with its
// contents.
var ErrOffsets = errors.New("abi: request record offsets do not match its contents")

// DecodeRequest reads a Request record in order, checking its offset table.
// Body and ResponseBody alias b.
func DecodeRequest(b []byte) (Request, error) {
	d := Decoder{B: b}
	var r Request
	if v := d.U32(); d.Err() == nil && v != Version {
		return r, ErrVersion
	}
	r.Phase = Phase(d.U8())
	r.Mode = Mode(d.U8())
	d.U8()
	d.U8()
	var table [5]uint32
	for i := range table {
		table[i] = d.U32()
	}
	pos := func(slot int) bool { return d.Err() != nil || int(table[slot]) == len(b)-len(d.B) }
	r.Decision = d.Str()
	r.Model = d.Str()
	if !pos(0) {
		return r, ErrOffsets
	}
	if n := d.Count(8); n > 0 {
		r.Headers = make([]Header, n)
		for i := range r.Headers {
			r.Headers[i] = Header{d.Str(), d.Str()}
		}
	}
	if !pos(1) {
		return r, ErrOffsets
	}
	if n := d.Count(8); n > 0 {
		r.Messages = make([]Message, n)
		for i := range r.Messages {
			r.Messages[i] = Message{d.Str(), d.Str()}
		}
	}
	if !pos(2) {
		return r, ErrOffsets
	}
	if n := d.Count(8); n > 0 {
		r.Signals = make([]Signal, n)
		for i := range r.Signals {
			r.Signals[i] = Signal{d.Str(), d.Str()}
		}
	}
	if !pos(3) {
		return r, ErrOffsets
	}
	r.Body = d.Bytes()
	if !pos(4) {
		return r, ErrOffsets
	}
	r.Status = d.U32()
	r.ResponseBody = d.Bytes()
	return r, d.Err()
}
