package extproc

import (
	"errors"
	"io"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The ProcessingResponse messages an exchange sends Envoy. Each is
// allocated as one block with the messages it is made of (headersReply,
// bodyReply): one allocation per message sent instead of five to eight. A
// reply is sent once and not changed after, so the first of each kind a
// stream sends (request and response headers, request and response body:
// a buffered request's four) is kept in the exchange (replySlots), allocated
// with it; the others are allocated as they are sent.

// replySlots are an exchange's first replies of each kind.
type replySlots struct {
	headers [2]headersReply // request, response
	body    [2]bodyReply
	used    uint8 // bit i: headers[i] was handed out; bit 2+i: body[i]
}

// slot is the index of a request's (0) or response's (1) reply.
func slot(response bool) uint8 {
	if response {
		return 1
	}
	return 0
}

// headersResponse is a headers reply; see headersReply.fill.
func (x *exchange) headersResponse(response bool, m *mutation, clearRoute bool) *extprocv3.ProcessingResponse {
	var r *headersReply
	if i := slot(response); x.replies.used&(1<<i) == 0 {
		x.replies.used |= 1 << i
		r = &x.replies.headers[i]
	} else {
		r = &headersReply{}
	}
	return r.fill(response, m, clearRoute)
}

// bodyResponse is a body reply to fill; see bodyReply.
func (x *exchange) bodyResponse(response bool) *bodyReply {
	var r *bodyReply
	if i := slot(response); x.replies.used&(1<<(2+i)) == 0 {
		x.replies.used |= 1 << (2 + i)
		r = &x.replies.body[i]
	} else {
		r = &bodyReply{}
	}
	return r.init(response)
}

// headersReply is a headers answer and its parts.
type headersReply struct {
	pr   extprocv3.ProcessingResponse
	req  extprocv3.ProcessingResponse_RequestHeaders
	resp extprocv3.ProcessingResponse_ResponseHeaders
	hr   extprocv3.HeadersResponse
	cr   extprocv3.CommonResponse
	hm   extprocv3.HeaderMutation
}

// fill makes r (zero) the answer to the request's or the response's
// headers, with m's changes (none when m is nil or empty).
func (r *headersReply) fill(response bool, m *mutation, clearRoute bool) *extprocv3.ProcessingResponse {
	if (m != nil && !m.empty()) || clearRoute {
		r.cr.ClearRouteCache = clearRoute
		if m != nil {
			r.cr.HeaderMutation = m.fill(&r.hm)
		}
		r.hr.Response = &r.cr
	}
	if response {
		r.resp.ResponseHeaders = &r.hr
		r.pr.Response = &r.resp
	} else {
		r.req.RequestHeaders = &r.hr
		r.pr.Response = &r.req
	}
	return &r.pr
}

// bodyReply is a body answer and its parts: its CommonResponse is always
// sent (empty: CONTINUE with the piece as it is); clear, replace and stream
// set its body mutation, headers its header mutation.
type bodyReply struct {
	pr       extprocv3.ProcessingResponse
	req      extprocv3.ProcessingResponse_RequestBody
	resp     extprocv3.ProcessingResponse_ResponseBody
	br       extprocv3.BodyResponse
	cr       extprocv3.CommonResponse
	hm       extprocv3.HeaderMutation
	bm       extprocv3.BodyMutation
	body     extprocv3.BodyMutation_Body
	clear    extprocv3.BodyMutation_ClearBody
	streamed extprocv3.BodyMutation_StreamedResponse
	sbr      extprocv3.StreamedBodyResponse
}

// init makes r (zero) the answer to a request or response body piece.
func (r *bodyReply) init(response bool) *bodyReply {
	r.br.Response = &r.cr
	if response {
		r.resp.ResponseBody = &r.br
		r.pr.Response = &r.resp
	} else {
		r.req.RequestBody = &r.br
		r.pr.Response = &r.req
	}
	return r
}

// msg is the message to send.
func (r *bodyReply) msg() *extprocv3.ProcessingResponse { return &r.pr }

// clearBody empties the piece.
func (r *bodyReply) clearBody() *bodyReply {
	r.clear.ClearBody = true
	r.bm.Mutation = &r.clear
	r.cr.BodyMutation = &r.bm
	return r
}

// replace replaces the piece with body.
func (r *bodyReply) replace(body []byte) *bodyReply {
	r.body.Body = body
	r.bm.Mutation = &r.body
	r.cr.BodyMutation = &r.bm
	return r
}

// stream sends body as the piece (full duplex), ending the body with eos.
func (r *bodyReply) stream(body []byte, eos bool) *bodyReply {
	r.sbr.Body, r.sbr.EndOfStream = body, eos
	r.streamed.StreamedResponse = &r.sbr
	r.bm.Mutation = &r.streamed
	r.cr.BodyMutation = &r.bm
	return r
}

// headers adds m's header changes (none when m is empty).
func (r *bodyReply) headers(m *mutation) *bodyReply {
	r.cr.HeaderMutation = m.fill(&r.hm)
	return r
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
func (x *exchange) bodyReply(response bool, body []byte, changed, eos bool) *bodyReply {
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
func (x *exchange) continueBody(b *extprocv3.HttpBody, response bool) *extprocv3.ProcessingResponse {
	return x.bodyReply(response, b.GetBody(), false, b.GetEndOfStream()).msg()
}

func (x *exchange) send(r *extprocv3.ProcessingResponse) error {
	if x.observe {
		return nil
	}
	if err := x.stream.Send(r); err != nil {
		// Envoy is gone; finish counts an unfinished request as cancelled.
		if errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || x.ctx.Err() != nil {
			return nil
		}
		return err
	}
	return nil
}
