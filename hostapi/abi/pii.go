package abi

// Personal-data spans: what the router's pii signals detected in the request,
// placed in its messages. A guest asks for them with ImportPIISpans; they are
// not part of the Request record, so modules that never ask pay nothing and
// modules built before revision 1 keep working unchanged.

// MaxPIISpans is the most spans the host hands a plugin for one request.
// Past it the host sends those of the newest messages (the one being sent
// now first), still sorted by (message, part, start), and sets PIITruncated:
// a plugin that must mask everything should refuse the request (fail) rather
// than send the rest upstream.
const MaxPIISpans = 256

// NoPart is PIISpan.Part when the message's content is a string.
const NoPart = ^uint32(0)

// Flags of a PIISpans record.
const (
	// PIIUnscanned: part of the user text was not scanned (it was over the
	// pii signal's scan budget, or the signal ran past its deadline), so
	// personal data may be present where no span says so.
	PIIUnscanned uint8 = 1 << 0
	// PIITruncated: the router detected more than MaxPIISpans spans; the
	// list holds MaxPIISpans of them (see MaxPIISpans).
	PIITruncated uint8 = 1 << 1
)

// PIISpan is one piece of personal data: where it is and what it is.
//
// Message is the index in the request's messages (as this plugin sees them,
// after earlier plugins' edits). Part is the index in that message's content
// array of the text part holding the span, or NoPart when the content is a
// string. Start and End (exclusive) are byte offsets into the UTF-8 text of
// that string or part: the JSON-decoded text, not the escaped JSON. Type is
// the entity type (EMAIL, PHONE, CREDIT_CARD, SSN, IP_ADDRESS, IBAN, PERSON,
// LOCATION) and Score the detector's confidence in [0,1].
type PIISpan struct {
	Message uint32
	Part    uint32
	Start   uint32
	End     uint32
	Type    string
	Score   float32
}

// PIISpans (pii_spans's answer): u8 flags (PIIUnscanned, PIITruncated), then
// a list of {u32 message, u32 part, u32 start, u32 end, str type, f32 score},
// sorted by message, part and start, not overlapping.
type PIISpans struct {
	Flags uint8
	Spans []PIISpan
}

// piiSpanMinSize is the smallest encoded PIISpan: four u32, an empty str and
// an f32.
const piiSpanMinSize = 4*4 + 4 + 4

// Append encodes p onto b.
func (p *PIISpans) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.U8(p.Flags)
	e.U32(uint32(len(p.Spans)))
	for _, s := range p.Spans {
		e.U32(s.Message)
		e.U32(s.Part)
		e.U32(s.Start)
		e.U32(s.End)
		e.Str(s.Type)
		e.F32(s.Score)
	}
	return e.B
}

// Size is the length of p's record.
func (p *PIISpans) Size() int {
	n := 1 + 4
	for _, s := range p.Spans {
		n += piiSpanMinSize + len(s.Type)
	}
	return n
}

// DecodePIISpans reads a PIISpans record, refusing trailing bytes.
func DecodePIISpans(b []byte) (PIISpans, error) {
	d := Decoder{B: b}
	p := PIISpans{Flags: d.U8()}
	if n := d.Count(piiSpanMinSize); n > 0 {
		p.Spans = make([]PIISpan, n)
		for i := range p.Spans {
			p.Spans[i] = PIISpan{Message: d.U32(), Part: d.U32(), Start: d.U32(), End: d.U32(), Type: d.Str(), Score: d.F32()}
		}
	}
	if d.Err() == nil && len(d.B) > 0 {
		return p, errTrailing
	}
	return p, d.Err()
}
