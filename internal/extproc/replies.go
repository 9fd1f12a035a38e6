package extproc

import (
	"errors"
	"io"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The headers and body answers an exchange sends Envoy. A reply is kept as
// what it says (its header changes, what becomes of the body piece, a route
// cache clear, a mode override) and written once, when it is sent (msg), as
// the bytes proto.Marshal writes for the ProcessingResponse it stands for:
// the message carries them as its unknown fields, which marshalling copies
// out as they are; on a stream of NewGRPCServer's the server's codec sends
// the bytes themselves (codec.go, sendReply). Building the five to eight nested messages of a reply
// (two oneofs for a body) for protobuf-go's marshalling to walk cost about
// 2,000 instructions per reply more; TestReplyEncode holds the bytes to
// protobuf-go's for the same messages (messages builds them). A reply is
// sent once and not changed after, so the first of each kind a stream sends
// (request and response headers, request and response body: a buffered
// request's four) is kept in the exchange (replySlots), allocated with it;
// the others are allocated as they are sent.

// replySlots are an exchange's first replies of each kind.
type replySlots struct {
	r    [4]reply // request headers, response headers, request body, response body
	used uint8    // bit i: r[i] was handed out
}

// reply is a headers or a body answer.
type reply struct {
	pr extprocv3.ProcessingResponse
	// answer is ProcessingResponse's field the answer goes in
	// (fieldRequestHeaders … fieldResponseBody).
	answer protowire.Number
	// common: the CommonResponse is sent (a body reply's always is, empty
	// meaning CONTINUE with the piece as it is; a headers reply's only when
	// it changes something).
	common bool
	// m's first n headers put and first nremove removals are the header
	// changes (m nil: none): those there when the reply was given them, as
	// when the changes were copied into messages then.
	m          *mutation
	n, nremove int
	op         bodyOp
	body       []byte // replaced or streamed body
	eos        bool   // streamed: the body ends with this piece
	clearRoute bool
	mode       *filterv3.ProcessingMode // mode_override; nil: none
	// w is what msg wrote, as sent through Junction's codec (codec.go);
	// its ProcessingResponse is nil when msg built the messages instead.
	w wireReply
	// small holds msg's bytes when they fit (a headers reply that changes
	// nothing is two bytes): no allocation for them.
	small [8]byte
}

// bodyOp is what a body reply does with the piece.
type bodyOp uint8

const (
	bodyKeep    bodyOp = iota // let it through as it is
	bodyClear                 // empty it
	bodyReplace               // replace it with body
	bodyStream                // full duplex: send body as the piece
)

// The ProcessingResponse fields msg writes (envoy.service.ext_proc.v3);
// the header mutation's are in headers.go.
const (
	fieldRequestHeaders  protowire.Number = 1 // ProcessingResponse.request_headers (HeadersResponse)
	fieldResponseHeaders protowire.Number = 2 // ProcessingResponse.response_headers
	fieldRequestBody     protowire.Number = 3 // ProcessingResponse.request_body (BodyResponse)
	fieldResponseBody    protowire.Number = 4 // ProcessingResponse.response_body
	fieldModeOverride    protowire.Number = 9 // ProcessingResponse.mode_override
	fieldCommon          protowire.Number = 1 // HeadersResponse.response, BodyResponse.response (CommonResponse)
	fieldHeaderMutation  protowire.Number = 2 // CommonResponse.header_mutation
	fieldBodyMutation    protowire.Number = 3 // CommonResponse.body_mutation
	fieldClearRouteCache protowire.Number = 5 // CommonResponse.clear_route_cache
	fieldBody            protowire.Number = 1 // BodyMutation.body
	fieldClearBody       protowire.Number = 2 // BodyMutation.clear_body
	fieldStreamed        protowire.Number = 3 // BodyMutation.streamed_response (StreamedBodyResponse)
	fieldStreamedBody    protowire.Number = 1 // StreamedBodyResponse.body
	fieldStreamedEnd     protowire.Number = 2 // StreamedBodyResponse.end_of_stream
)

// newReply is a reply for ProcessingResponse's field answer: the
// exchange's slot for the first of its kind, else a new one.
func (x *exchange) newReply(answer protowire.Number) *reply {
	var r *reply
	if i := answer - fieldRequestHeaders; x.replies.used&(1<<i) == 0 {
		x.replies.used |= 1 << i
		r = &x.replies.r[i]
	} else {
		r = &reply{}
	}
	r.answer = answer
	return r
}

// Indexes of exchange.answerMuts.
const (
	answerHeadersMut = iota // the answer's headers reply (responseHeaders)
	answerBodyMut           // the reply to the answer's whole body (jsonBody, heldBody)
)

// answerMutation is an empty mutation for the answer's headers or body
// reply: the exchange's own the first time, else a new one.
func (x *exchange) answerMutation(i int) *mutation {
	if x.answerUsed&(1<<i) == 0 {
		x.answerUsed |= 1 << i
		return &x.answerMuts[i]
	}
	return &mutation{}
}

// headersResponse is the answer to the request's or the response's
// headers, with m's changes (none when m is nil or empty).
func (x *exchange) headersResponse(response bool, m *mutation, clearRoute bool) *reply {
	answer := fieldRequestHeaders
	if response {
		answer = fieldResponseHeaders
	}
	r := x.newReply(answer)
	if (m != nil && !m.empty()) || clearRoute {
		r.common, r.clearRoute = true, clearRoute
		r.headers(m)
	}
	return r
}

// bodyResponse is the answer to a request or response body piece, to be
// filled: as it is, it lets the piece through unchanged.
func (x *exchange) bodyResponse(response bool) *reply {
	answer := fieldRequestBody
	if response {
		answer = fieldResponseBody
	}
	r := x.newReply(answer)
	r.common = true
	return r
}

// clearBody empties the piece.
func (r *reply) clearBody() *reply {
	r.op = bodyClear
	return r
}

// replace replaces the piece with body.
func (r *reply) replace(body []byte) *reply {
	r.op, r.body = bodyReplace, body
	return r
}

// stream sends body as the piece (full duplex), ending the body with eos.
func (r *reply) stream(body []byte, eos bool) *reply {
	r.op, r.body, r.eos = bodyStream, body, eos
	return r
}

// headers adds m's header changes so far (none when m is nil or empty).
func (r *reply) headers(m *mutation) *reply {
	if m != nil && !m.empty() {
		r.m, r.n, r.nremove = m, m.n, len(m.remove)
	}
	return r
}

// changes is a copy of the reply's header mutation: m as it was when
// given.
func (r *reply) changes() *mutation {
	c := *r.m
	c.n, c.remove = r.n, c.remove[:r.nremove:r.nremove]
	return &c
}

// msg is the message to send: the reply's bytes as the unknown fields of a
// ProcessingResponse; the messages themselves (messages) when a header
// name is not valid UTF-8, which marshalling then refuses as it always did.
func (r *reply) msg() *extprocv3.ProcessingResponse {
	hm := 0
	if r.m != nil {
		var ok bool
		if hm, ok = r.m.wireSize(r.n, r.nremove); !ok {
			return r.messages()
		}
	}
	bm := 0
	switch r.op {
	case bodyClear:
		bm = protowire.SizeTag(fieldClearBody) + protowire.SizeVarint(1)
	case bodyReplace:
		bm = protowire.SizeTag(fieldBody) + protowire.SizeBytes(len(r.body))
	case bodyStream:
		bm = protowire.SizeTag(fieldStreamed) + protowire.SizeBytes(r.streamedSize())
	}
	cr := 0
	if hm > 0 {
		cr += protowire.SizeTag(fieldHeaderMutation) + protowire.SizeBytes(hm)
	}
	if r.op != bodyKeep {
		cr += protowire.SizeTag(fieldBodyMutation) + protowire.SizeBytes(bm)
	}
	if r.clearRoute {
		cr += protowire.SizeTag(fieldClearRouteCache) + protowire.SizeVarint(1)
	}
	answer := 0
	if r.common {
		answer = protowire.SizeTag(fieldCommon) + protowire.SizeBytes(cr)
	}
	size := protowire.SizeTag(r.answer) + protowire.SizeBytes(answer)
	mode := 0
	if r.mode != nil {
		mode = proto.Size(r.mode)
		size += protowire.SizeTag(fieldModeOverride) + protowire.SizeBytes(mode)
	}

	var b []byte
	if size <= len(r.small) {
		b = r.small[:0:size]
	} else {
		b = make([]byte, 0, size)
	}
	if r.mode != nil {
		// protobuf-go writes a oneof (the answer) after the other fields.
		b = appendTag(b, fieldModeOverride, protowire.BytesType)
		b = appendVarint(b, uint64(mode))
		var err error
		if b, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(b, r.mode); err != nil {
			return r.messages() // enums only: cannot happen; marshalling reports it if it does
		}
	}
	b = appendTag(b, r.answer, protowire.BytesType)
	b = appendVarint(b, uint64(answer))
	if r.common {
		b = appendTag(b, fieldCommon, protowire.BytesType)
		b = appendVarint(b, uint64(cr))
		if hm > 0 {
			b = appendTag(b, fieldHeaderMutation, protowire.BytesType)
			b = appendVarint(b, uint64(hm))
			b = r.m.appendWire(b, r.n, r.nremove)
		}
		if r.op != bodyKeep {
			b = appendTag(b, fieldBodyMutation, protowire.BytesType)
			b = appendVarint(b, uint64(bm))
			switch r.op {
			case bodyClear:
				b = appendTag(b, fieldClearBody, protowire.VarintType)
				b = appendVarint(b, 1)
			case bodyReplace:
				b = appendTag(b, fieldBody, protowire.BytesType)
				b = append(appendVarint(b, uint64(len(r.body))), r.body...)
			case bodyStream:
				b = appendTag(b, fieldStreamed, protowire.BytesType)
				b = appendVarint(b, uint64(r.streamedSize()))
				if len(r.body) > 0 {
					b = appendTag(b, fieldStreamedBody, protowire.BytesType)
					b = append(appendVarint(b, uint64(len(r.body))), r.body...)
				}
				if r.eos {
					b = appendTag(b, fieldStreamedEnd, protowire.VarintType)
					b = appendVarint(b, 1)
				}
			}
		}
		if r.clearRoute {
			b = appendTag(b, fieldClearRouteCache, protowire.VarintType)
			b = appendVarint(b, 1)
		}
	}
	r.pr.ProtoReflect().SetUnknown(b)
	r.w.ProcessingResponse, r.w.buf = &r.pr, b
	return &r.pr
}

// streamedSize is the size of a streamed piece's StreamedBodyResponse.
func (r *reply) streamedSize() int {
	n := 0
	if len(r.body) > 0 {
		n += protowire.SizeTag(fieldStreamedBody) + protowire.SizeBytes(len(r.body))
	}
	if r.eos {
		n += protowire.SizeTag(fieldStreamedEnd) + protowire.SizeVarint(1)
	}
	return n
}

// messages is the reply as Envoy's messages, for what msg cannot write as
// bytes; TestReplyEncode holds msg's bytes to these.
func (r *reply) messages() *extprocv3.ProcessingResponse {
	var cr *extprocv3.CommonResponse
	if r.common {
		cr = &extprocv3.CommonResponse{ClearRouteCache: r.clearRoute}
		if r.m != nil {
			cr.HeaderMutation = r.changes().fillMessages(&extprocv3.HeaderMutation{})
		}
		switch r.op {
		case bodyClear:
			cr.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{ClearBody: true}}
		case bodyReplace:
			cr.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: r.body}}
		case bodyStream:
			cr.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_StreamedResponse{
				StreamedResponse: &extprocv3.StreamedBodyResponse{Body: r.body, EndOfStream: r.eos}}}
		}
	}
	pr := &extprocv3.ProcessingResponse{ModeOverride: r.mode}
	switch r.answer {
	case fieldRequestHeaders:
		pr.Response = &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: cr}}
	case fieldResponseHeaders:
		pr.Response = &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{Response: cr}}
	case fieldRequestBody:
		pr.Response = &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: cr}}
	case fieldResponseBody:
		pr.Response = &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: cr}}
	}
	return pr
}

func trailersResponse(response bool) *extprocv3.ProcessingResponse {
	if response {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}}
}

// bodyReply answers a body piece: in full duplex the piece to pass on is
// always sent back (whatever is not sent is dropped); otherwise a changed
// piece replaces the original and an unchanged one continues as it is.
func (x *exchange) bodyReply(response bool, body []byte, changed, eos bool) *reply {
	full := x.respFullDuplex()
	if !response {
		full = x.proto.GetRequestBodyMode() == modeFullDuplex
	}
	r := x.bodyResponse(response)
	switch {
	case full:
		r.stream(body, eos)
	case changed && len(body) == 0:
		r.clearBody()
	case changed:
		r.replace(body)
	}
	return r
}

// continueBody lets a body piece Junction has no business with go on.
func (x *exchange) continueBody(b *extprocv3.HttpBody, response bool) *reply {
	return x.bodyReply(response, b.GetBody(), false, b.GetEndOfStream())
}

func (x *exchange) send(r *extprocv3.ProcessingResponse) error {
	if x.observe {
		return nil
	}
	return x.sent(x.stream.Send(r))
}

// sendReply sends r: on a stream of NewGRPCServer's (x.wire), as the bytes
// msg wrote, which Junction's codec sends as they are; elsewhere as the
// message carrying them, which any protobuf codec marshals to the same
// bytes.
func (x *exchange) sendReply(r *reply) error {
	if x.observe {
		return nil
	}
	m := r.msg()
	if x.wire && r.w.ProcessingResponse != nil {
		return x.sent(x.stream.SendMsg(&r.w))
	}
	return x.sent(x.stream.Send(m))
}

// sent is a send's outcome: nil when Envoy is gone (finish counts an
// unfinished request as cancelled).
func (x *exchange) sent(err error) error {
	if err != nil && (errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || x.ctx.Err() != nil) {
		return nil
	}
	return err
}
