package extproc

import (
	"errors"
	"io"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The ProcessingResponse messages an exchange sends Envoy.

func headersResponse(response bool, m *mutation, clearRoute bool) *extprocv3.ProcessingResponse {
	hr := &extprocv3.HeadersResponse{}
	if (m != nil && !m.empty()) || clearRoute {
		hr.Response = &extprocv3.CommonResponse{ClearRouteCache: clearRoute}
		if m != nil {
			hr.Response.HeaderMutation = m.proto()
		}
	}
	if response {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: hr}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: hr}}
}

func bodyResponse(response bool, cr *extprocv3.CommonResponse) *extprocv3.ProcessingResponse {
	br := &extprocv3.BodyResponse{Response: cr}
	if response {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: br}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: br}}
}

func trailersResponse(response bool) *extprocv3.ProcessingResponse {
	if response {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}}
}

func clearBody() *extprocv3.BodyMutation {
	return &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{ClearBody: true}}
}

func streamedBody(body []byte, eos bool) *extprocv3.BodyMutation {
	return &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_StreamedResponse{
		StreamedResponse: &extprocv3.StreamedBodyResponse{Body: body, EndOfStream: eos},
	}}
}

// bodyReply answers a body piece: in full duplex the piece to pass on is
// always sent back (whatever is not sent is dropped); otherwise a changed
// piece replaces the original and an unchanged one continues as it is.
func (x *exchange) bodyReply(response bool, body []byte, changed, eos bool) *extprocv3.ProcessingResponse {
	full := x.respFullDuplex()
	if !response {
		full = x.proto.GetRequestBodyMode() == modeFullDuplex
	}
	cr := &extprocv3.CommonResponse{}
	switch {
	case full:
		cr.BodyMutation = streamedBody(body, eos)
	case changed && len(body) == 0:
		cr.BodyMutation = clearBody()
	case changed:
		cr.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: body}}
	}
	return bodyResponse(response, cr)
}

// continueBody lets a body piece Junction has no business with go on.
func (x *exchange) continueBody(b *extprocv3.HttpBody, response bool) *extprocv3.ProcessingResponse {
	return x.bodyReply(response, b.GetBody(), false, b.GetEndOfStream())
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
