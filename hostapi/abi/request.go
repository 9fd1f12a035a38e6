package abi

import "errors"

// Request is what a handler reads: the routed request (and, in the response
// phase, the upstream answer). Record layout, in order:
//
//	u32   version        Version
//	u8    phase          Phase
//	u8    mode           Mode
//	u16   reserved       0
//	str   decision       the matched decision's name
//	str   model          the selected model ("" when none)
//	list  headers        of {str name, str value}; names in canonical form
//	list  messages       of {str role, str content}; content flattened to text
//	list  signals        of {str kind, str name}; the signals that matched
//	bytes body           the request body as it will be sent upstream (JSON)
//	u32   status         response phase: the upstream HTTP status, else 0
//	bytes response_body  response phase: the upstream answer's body, else empty
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
}

// Header is one request header value.
type Header struct{ Name, Value string }

// Message is one chat message: its role and its content flattened to text
// (content parts' text joined by newlines). The exact JSON is in Body.
type Message struct{ Role, Content string }

// Signal is a signal that matched: its kind ("keyword", "domain", …) and name.
type Signal struct{ Kind, Name string }

// Size is the length of r's record.
func (r *Request) Size() int {
	n := 4 + 4 + 4 + len(r.Decision) + 4 + len(r.Model) + 4*3 + 4 + len(r.Body) + 4 + 4 + len(r.ResponseBody)
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
	e.U32(Version)
	e.U8(uint8(r.Phase))
	e.U8(uint8(r.Mode))
	e.U8(0)
	e.U8(0)
	e.Str(r.Decision)
	e.Str(r.Model)
	e.U32(uint32(len(r.Headers)))
	for _, h := range r.Headers {
		e.Str(h.Name)
		e.Str(h.Value)
	}
	e.U32(uint32(len(r.Messages)))
	for _, m := range r.Messages {
		e.Str(m.Role)
		e.Str(m.Content)
	}
	e.U32(uint32(len(r.Signals)))
	for _, s := range r.Signals {
		e.Str(s.Kind)
		e.Str(s.Name)
	}
	e.Bytes(r.Body)
	e.U32(r.Status)
	e.Bytes(r.ResponseBody)
	return e.B
}

// ErrVersion is returned when a record carries another ABI version.
var ErrVersion = errors.New("abi: record of another ABI version")

// DecodeRequest reads a Request record. Body and ResponseBody alias b.
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
	r.Decision = d.Str()
	r.Model = d.Str()
	if n := d.Count(8); n > 0 {
		r.Headers = make([]Header, n)
		for i := range r.Headers {
			r.Headers[i] = Header{d.Str(), d.Str()}
		}
	}
	if n := d.Count(8); n > 0 {
		r.Messages = make([]Message, n)
		for i := range r.Messages {
			r.Messages[i] = Message{d.Str(), d.Str()}
		}
	}
	if n := d.Count(8); n > 0 {
		r.Signals = make([]Signal, n)
		for i := range r.Signals {
			r.Signals[i] = Signal{d.Str(), d.Str()}
		}
	}
	r.Body = d.Bytes()
	r.Status = d.U32()
	r.ResponseBody = d.Bytes()
	return r, d.Err()
}
