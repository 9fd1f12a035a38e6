package envoytest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// kind names the answer a message expects.
type kind int

const (
	kRequestHeaders kind = iota
	kRequestBody
	kRequestTrailers
	kResponseHeaders
	kResponseBody
	kResponseTrailers
)

var kindNames = []string{"request_headers", "request_body", "request_trailers", "response_headers", "response_body", "response_trailers"}

// expect receives the answer to a message of kind k: the matching answer's
// common part, or an immediate response (imm set).
func (s *Stream) expect(k kind) (cr *extprocv3.CommonResponse, r *extprocv3.ProcessingResponse, imm *extprocv3.ImmediateResponse, err error) {
	r, err = s.Recv()
	if err != nil {
		return nil, r, nil, err
	}
	if i := r.GetImmediateResponse(); i != nil {
		return nil, r, i, nil
	}
	var got kind = -1
	switch x := r.GetResponse().(type) {
	case *extprocv3.ProcessingResponse_RequestHeaders:
		got, cr = kRequestHeaders, x.RequestHeaders.GetResponse()
	case *extprocv3.ProcessingResponse_RequestBody:
		got, cr = kRequestBody, x.RequestBody.GetResponse()
	case *extprocv3.ProcessingResponse_RequestTrailers:
		got = kRequestTrailers
	case *extprocv3.ProcessingResponse_ResponseHeaders:
		got, cr = kResponseHeaders, x.ResponseHeaders.GetResponse()
	case *extprocv3.ProcessingResponse_ResponseBody:
		got, cr = kResponseBody, x.ResponseBody.GetResponse()
	case *extprocv3.ProcessingResponse_ResponseTrailers:
		got = kResponseTrailers
	}
	if got != k {
		name := "nothing"
		if got >= 0 {
			name = kindNames[got]
		}
		return nil, r, nil, fmt.Errorf("envoytest: spurious answer: waiting for %s, got %s", kindNames[k], name)
	}
	if cr == nil {
		cr = &extprocv3.CommonResponse{}
	}
	return cr, r, nil, nil
}

// override applies a mode override the way the filter does.
func (s *Stream) override(r *extprocv3.ProcessingResponse) *filterv3.ProcessingMode {
	o := r.GetModeOverride()
	if o == nil {
		return nil
	}
	if !s.cfg.AllowModeOverride || s.cfg.SendBodyWithoutWaiting {
		s.Ignored = append(s.Ignored, "mode_override (not allowed)")
		return o
	}
	if o.ResponseHeaderMode != filterv3.ProcessingMode_DEFAULT {
		s.mode.ResponseHeaderMode = o.ResponseHeaderMode
	}
	if o.RequestTrailerMode != filterv3.ProcessingMode_DEFAULT {
		s.mode.RequestTrailerMode = o.RequestTrailerMode
	}
	if o.ResponseTrailerMode != filterv3.ProcessingMode_DEFAULT {
		s.mode.ResponseTrailerMode = o.ResponseTrailerMode
	}
	s.mode.RequestBodyMode = o.RequestBodyMode
	s.mode.ResponseBodyMode = o.ResponseBodyMode
	return o
}

// applyHeaders applies a header mutation to h under Envoy's default
// mutation rules (x-envoy-* allowed with Config.AllowEnvoyHeaders).
func (s *Stream) applyHeaders(h Headers, m *extprocv3.HeaderMutation) Headers {
	for _, o := range m.GetSetHeaders() {
		k := o.GetHeader().GetKey()
		v := string(o.GetHeader().GetRawValue())
		if v == "" {
			v = o.GetHeader().GetValue()
		}
		if k != strings.ToLower(k) || k == "host" || k == ":authority" || k == ":scheme" || k == ":method" ||
			(strings.HasPrefix(k, "x-envoy-") && !s.cfg.AllowEnvoyHeaders) {
			s.Rejected = append(s.Rejected, "set "+k)
			continue
		}
		// Envoy still honours the deprecated append field over append_action
		// when a filter sets it, so this stand-in reads it too.
		//lint:ignore SA1019 see above
		legacy := o.GetAppend()
		appendValue := o.GetAppendAction() == corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
		if legacy != nil {
			appendValue = legacy.GetValue()
		}
		switch {
		case o.GetAppendAction() == corev3.HeaderValueOption_ADD_IF_ABSENT && legacy == nil:
			if !h.Has(k) {
				h = append(h, Header{k, v})
			}
		case o.GetAppendAction() == corev3.HeaderValueOption_OVERWRITE_IF_EXISTS && legacy == nil:
			if h.Has(k) {
				h = h.set(k, v)
			}
		case appendValue:
			h = append(h, Header{k, v})
		default:
			h = h.set(k, v)
		}
	}
	for _, k := range m.GetRemoveHeaders() {
		if strings.HasPrefix(k, ":") || k == "host" {
			s.Rejected = append(s.Rejected, "remove "+k)
			continue
		}
		h = h.del(k)
	}
	return h
}

// applyBody applies a body mutation to one body (or piece).
func applyBody(b []byte, m *extprocv3.BodyMutation) []byte {
	switch x := m.GetMutation().(type) {
	case *extprocv3.BodyMutation_Body:
		return x.Body
	case *extprocv3.BodyMutation_ClearBody:
		if x.ClearBody {
			return nil
		}
	case *extprocv3.BodyMutation_StreamedResponse:
		return x.StreamedResponse.GetBody()
	}
	return b
}

func checkContentLength(h Headers, body []byte) error {
	if cl := h.Get("content-length"); cl != "" {
		if n, err := strconv.Atoi(cl); err != nil || n != len(body) {
			return fmt.Errorf("%w: content-length %s, body %d bytes", ErrContentLength, cl, len(body))
		}
	}
	return nil
}

// SendRequest plays req through the filter: headers, then the body as the
// configured mode sends it, and returns the request as Envoy would forward
// it, or the processor's immediate answer.
func (s *Stream) SendRequest(req Request) (*RequestOutcome, error) {
	ps := pieces(req.Body, req.Pieces)
	trailers := req.Trailers != nil && s.mode.RequestTrailerMode == filterv3.ProcessingMode_SEND
	hasBody := len(ps) > 0 || req.Trailers != nil
	out := &RequestOutcome{}
	s.request = append(Headers{{":method", req.Method}, {":path", req.Path}, {":authority", "envoytest.local"}, {":scheme", "http"}}, req.Headers...)
	if err := s.Send(requestHeaders(req, !hasBody)); err != nil {
		return nil, err
	}
	mode := s.mode.RequestBodyMode
	noWait := hasBody && (mode == FullDuplex || (mode == Streamed && s.cfg.SendBodyWithoutWaiting))
	if noWait {
		// The body goes out as it arrives, without waiting for the headers'
		// answer.
		if err := s.sendRequestBody(ps, mode, req.Trailers, trailers); err != nil {
			return nil, err
		}
	}
	cr, r, imm, err := s.expect(kRequestHeaders)
	if err != nil {
		return nil, err
	}
	if imm != nil {
		out.Immediate = imm
		return out, nil
	}
	s.request = s.applyHeaders(s.request, cr.GetHeaderMutation())
	out.ClearRouteCache = cr.GetClearRouteCache()
	if cr.GetBodyMutation() != nil && cr.GetStatus() != extprocv3.CommonResponse_CONTINUE_AND_REPLACE {
		s.Ignored = append(s.Ignored, "body_mutation in a headers answer without CONTINUE_AND_REPLACE")
	}
	s.override(r)
	body := join(ps)
	if !hasBody {
		out.Upstream = &Message{Headers: s.request}
		return out, nil
	}
	mode = s.mode.RequestBodyMode
	if !noWait {
		if mode == None {
			out.Upstream = &Message{Headers: s.request, Body: body}
			return out, nil
		}
		if err := s.sendRequestBody(ps, mode, req.Trailers, trailers); err != nil {
			return nil, err
		}
	}
	if mode == Streamed || mode == FullDuplex {
		s.request = s.request.del("content-length")
	}
	msg := &Message{}
	switch mode {
	case Buffered, Partial:
		send := body
		if mode == Partial && s.cfg.BufferLimit > 0 && len(send) > s.cfg.BufferLimit {
			send = send[:s.cfg.BufferLimit]
		}
		cr, _, imm, err := s.expect(kRequestBody)
		if err != nil {
			return nil, err
		}
		if imm != nil {
			out.Immediate = imm
			return out, nil
		}
		s.request = s.applyHeaders(s.request, cr.GetHeaderMutation())
		out.ClearRouteCache = out.ClearRouteCache || cr.GetClearRouteCache()
		msg.Body = applyBody(send, cr.GetBodyMutation())
		if len(send) < len(body) {
			msg.Body = append(msg.Body, body[len(send):]...)
		}
		if cr.GetBodyMutation() != nil {
			if err := checkContentLength(s.request, msg.Body); err != nil {
				return nil, err
			}
		}
	case Streamed:
		for _, p := range ps {
			cr, _, imm, err := s.expect(kRequestBody)
			if err != nil {
				return nil, err
			}
			if imm != nil {
				out.Immediate = imm
				return out, nil
			}
			if cr.GetHeaderMutation() != nil || cr.GetClearRouteCache() {
				s.Ignored = append(s.Ignored, "header mutation or clear_route_cache in a streamed body answer")
			}
			np := applyBody(p, cr.GetBodyMutation())
			msg.Pieces = append(msg.Pieces, np)
			msg.Body = append(msg.Body, np...)
		}
	case FullDuplex:
		for done := false; !done; {
			cr, _, imm, err := s.expect(kRequestBody)
			if err != nil {
				return nil, err
			}
			if imm != nil {
				out.Immediate = imm
				return out, nil
			}
			sr := cr.GetBodyMutation().GetStreamedResponse()
			if sr == nil {
				return nil, errors.New("envoytest: full duplex body answer without a streamed_response")
			}
			msg.Pieces = append(msg.Pieces, sr.GetBody())
			msg.Body = append(msg.Body, sr.GetBody()...)
			done = sr.GetEndOfStream() || trailers
		}
	}
	if trailers {
		if _, _, imm, err := s.expect(kRequestTrailers); err != nil {
			return nil, err
		} else if imm != nil {
			out.Immediate = imm
			return out, nil
		}
	}
	msg.Headers = s.request
	out.Upstream = msg
	return out, nil
}

func (s *Stream) sendRequestBody(ps [][]byte, mode filterv3.ProcessingMode_BodySendMode, t Headers, trailers bool) error {
	endWithBody := t == nil
	switch mode {
	case Buffered, Partial:
		body := join(ps)
		end := endWithBody
		if mode == Partial && s.cfg.BufferLimit > 0 && len(body) > s.cfg.BufferLimit {
			body, end = body[:s.cfg.BufferLimit], false
		}
		if err := s.Send(bodyMsg(false, body, end)); err != nil {
			return err
		}
	default:
		for i, p := range ps {
			if err := s.Send(bodyMsg(false, p, endWithBody && i == len(ps)-1)); err != nil {
				return err
			}
		}
	}
	if trailers {
		return s.Send(trailersMsg(false, t))
	}
	return nil
}

// SendResponse plays the upstream answer resp through the filter and
// returns what the client receives.
func (s *Stream) SendResponse(resp Response) (*ResponseOutcome, error) {
	ps := pieces(resp.Body, resp.Pieces)
	hasBody := len(ps) > 0 || resp.EmptyEnd
	trailers := resp.Trailers != nil && s.mode.ResponseTrailerMode == filterv3.ProcessingMode_SEND
	out := &ResponseOutcome{}
	s.response = append(Headers{{":status", strconv.Itoa(resp.Status)}}, resp.Headers...)
	if s.mode.ResponseHeaderMode != filterv3.ProcessingMode_SKIP {
		if err := s.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
			ResponseHeaders: &extprocv3.HttpHeaders{Headers: s.response.Proto(), EndOfStream: !hasBody && resp.Trailers == nil},
		}}); err != nil {
			return nil, err
		}
		cr, r, imm, err := s.expect(kResponseHeaders)
		if err != nil {
			return nil, err
		}
		if imm != nil {
			out.Immediate = imm
			return out, nil
		}
		s.response = s.applyHeaders(s.response, cr.GetHeaderMutation())
		out.Override = s.override(r)
	}
	msg := &Message{}
	mode := s.mode.ResponseBodyMode
	if mode == Streamed || mode == FullDuplex {
		s.response = s.response.del("content-length")
	}
	switch {
	case !hasBody:
	case mode == None:
		msg.Body = join(ps)
	case mode == Buffered || mode == Partial:
		body := join(ps)
		if err := s.Send(bodyMsg(true, body, resp.Trailers == nil)); err != nil {
			return nil, err
		}
		if trailers {
			if err := s.Send(trailersMsg(true, resp.Trailers)); err != nil {
				return nil, err
			}
		}
		cr, _, imm, err := s.expect(kResponseBody)
		if err != nil {
			return nil, err
		}
		if imm != nil {
			out.Immediate = imm
			return out, nil
		}
		s.response = s.applyHeaders(s.response, cr.GetHeaderMutation())
		msg.Body = applyBody(body, cr.GetBodyMutation())
		if cr.GetBodyMutation() != nil {
			if err := checkContentLength(s.response, msg.Body); err != nil {
				return nil, err
			}
		}
	case mode == Streamed:
		if resp.EmptyEnd {
			ps = append(ps, nil)
		}
		for i, p := range ps {
			if err := s.Send(bodyMsg(true, p, resp.Trailers == nil && i == len(ps)-1)); err != nil {
				return nil, err
			}
			cr, _, imm, err := s.expect(kResponseBody)
			if err != nil {
				return nil, err
			}
			if imm != nil {
				out.Immediate = imm
				return out, nil
			}
			if cr.GetHeaderMutation() != nil {
				s.Ignored = append(s.Ignored, "header mutation in a streamed body answer")
			}
			np := applyBody(p, cr.GetBodyMutation())
			msg.Pieces = append(msg.Pieces, np)
			msg.Body = append(msg.Body, np...)
		}
		if trailers {
			if err := s.Send(trailersMsg(true, resp.Trailers)); err != nil {
				return nil, err
			}
		}
	case mode == FullDuplex:
		if resp.EmptyEnd {
			ps = append(ps, nil)
		}
		for i, p := range ps {
			if err := s.Send(bodyMsg(true, p, resp.Trailers == nil && i == len(ps)-1)); err != nil {
				return nil, err
			}
		}
		if trailers {
			if err := s.Send(trailersMsg(true, resp.Trailers)); err != nil {
				return nil, err
			}
		}
		for done := false; !done; {
			cr, _, imm, err := s.expect(kResponseBody)
			if err != nil {
				return nil, err
			}
			if imm != nil {
				out.Immediate = imm
				return out, nil
			}
			sr := cr.GetBodyMutation().GetStreamedResponse()
			if sr == nil {
				return nil, errors.New("envoytest: full duplex body answer without a streamed_response")
			}
			msg.Pieces = append(msg.Pieces, sr.GetBody())
			msg.Body = append(msg.Body, sr.GetBody()...)
			done = sr.GetEndOfStream() || trailers
		}
	}
	if trailers && mode != None {
		if _, _, imm, err := s.expect(kResponseTrailers); err != nil {
			return nil, err
		} else if imm != nil {
			out.Immediate = imm
			return out, nil
		}
	}
	msg.Headers = s.response
	out.Downstream = msg
	return out, nil
}

// ImmediateHeaders returns an immediate response's headers as the client
// receives them (Envoy's defaults changed by the mutation).
func ImmediateHeaders(imm *extprocv3.ImmediateResponse) Headers {
	s := &Stream{}
	h := Headers{{":status", strconv.Itoa(int(imm.GetStatus().GetCode()))}, {"content-type", "text/plain"}}
	return s.applyHeaders(h, imm.GetHeaders())
}

// Smoke checks a running processor the way Envoy would use it: GET
// /v1/models is answered directly with MoM listed, and a chat completion
// for MoM is routed (x-selected-model set, the route cache cleared, the body
// naming the selected model).
func Smoke(ctx context.Context, c *Client) error {
	s, err := c.Open(ctx, Standard)
	if err != nil {
		return err
	}
	out, err := s.SendRequest(Request{Method: "GET", Path: "/v1/models"})
	if err != nil {
		return fmt.Errorf("GET /v1/models: %w", err)
	}
	if out.Immediate == nil || out.Immediate.GetStatus().GetCode() != 200 || !strings.Contains(string(out.Immediate.GetBody()), `"id":"MoM"`) {
		return fmt.Errorf("GET /v1/models was not answered with the model list: %v", out.Immediate)
	}
	if err := s.Close(); err != nil {
		return err
	}
	s, err = c.Open(ctx, Standard)
	if err != nil {
		return err
	}
	body := []byte(`{"model":"MoM","messages":[{"role":"user","content":"What is the capital of France?"}]}`)
	out, err = s.SendRequest(Request{Method: "POST", Path: "/v1/chat/completions",
		Headers: Headers{{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(body))}}, Body: body})
	if err != nil {
		return fmt.Errorf("POST /v1/chat/completions: %w", err)
	}
	if out.Immediate != nil {
		return fmt.Errorf("the chat completion was answered directly (status %d): %s", out.Immediate.GetStatus().GetCode(), out.Immediate.GetBody())
	}
	model := out.Upstream.Headers.Get("x-selected-model")
	if model == "" || !out.ClearRouteCache || !strings.Contains(string(out.Upstream.Body), `"model":"`+model+`"`) {
		return fmt.Errorf("the chat completion was not routed: x-selected-model %q, clear_route_cache %v, body %s",
			model, out.ClearRouteCache, out.Upstream.Body)
	}
	// Finish the exchange as an upstream would, so the processor records an
	// ordinary request rather than a cancelled one.
	answer := []byte(`{"id":"envoytest-smoke","object":"chat.completion","model":"` + model + `","choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`)
	resp, err := s.SendResponse(Response{Status: 200, Headers: H("content-type", "application/json", "content-length", strconv.Itoa(len(answer))), Body: answer})
	if err != nil {
		return fmt.Errorf("the answer: %w", err)
	}
	if resp.Downstream.Headers.Get("x-selected-model") != model {
		return fmt.Errorf("the answer lacks the routing headers: %v", resp.Downstream.Headers)
	}
	return s.Close()
}
