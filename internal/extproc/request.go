package extproc

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
)

// The request half of an exchange: Envoy's request headers, body pieces
// (in each body mode) and trailers, collected and handed to the data plane
// (dataplane.Exchange.Run), and its outcome given back to Envoy as header and
// body mutations or an immediate response.

func (x *exchange) requestHeaders(h *extprocv3.HttpHeaders) error {
	if x.phase != phaseStart {
		return x.protocolError("request_headers", "a second request_headers message on one stream")
	}
	ri := parseHeaders(h.GetHeaders(), x.headerVals[:0])
	x.reqHeader, x.path = ri.header, ri.path
	x.id = dataplane.RequestID(ri.header.Get(dataplane.HeaderRequestID))
	if x.s.opts.Runtime != nil {
		x.gen = x.s.opts.Runtime.Current()
	}
	path := ri.path
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	x.startSpan(ri.method, path)
	switch {
	case path == "/v1/chat/completions":
		x.endpoint = dataplane.EndpointChat
		if ri.method != http.MethodPost {
			return x.methodNotAllowed(ri.method, path, http.MethodPost)
		}
		return x.chatHeaders(h, ri)
	case path == "/v1/models":
		x.endpoint = dataplane.EndpointModels
		if ri.method != http.MethodGet {
			return x.methodNotAllowed(ri.method, path, http.MethodGet)
		}
		return x.answer(dataplane.ModelList(x.gen, x.s.started, x.idHeader()))
	case strings.HasPrefix(path, "/v1/models/"):
		x.endpoint = dataplane.EndpointModels
		if ri.method != http.MethodGet {
			return x.methodNotAllowed(ri.method, path, http.MethodGet)
		}
		return x.answer(dataplane.Model(x.gen, strings.TrimPrefix(path, "/v1/models/"), x.s.started, x.idHeader()))
	case path == "/v1/responses":
		x.endpoint = dataplane.EndpointResponses
		if ri.method != http.MethodPost {
			return x.methodNotAllowed(ri.method, path, http.MethodPost)
		}
		x.responsesAPI = true
		return x.chatHeaders(h, ri)
	case strings.HasPrefix(path, "/v1/responses/"):
		x.endpoint = dataplane.EndpointResponses
		allow := []string{http.MethodGet, http.MethodDelete}
		if strings.HasSuffix(path, "/input_items") {
			allow = allow[:1]
		}
		for _, m := range allow {
			if ri.method == m {
				id, sub := dataplane.StoredResponsePath(path)
				var query url.Values
				if _, raw, ok := strings.Cut(ri.path, "?"); ok {
					query, _ = url.ParseQuery(raw)
				}
				return x.answer(x.s.plane.StoredResponse(x.ctx, ri.method, id, sub, query, x.idHeader()))
			}
		}
		return x.methodNotAllowed(ri.method, path, strings.Join(allow, ", "))
	}
	x.span = nil // not Junction's request: its span is never ended, so never sent
	return x.passthrough()
}

func (x *exchange) methodNotAllowed(method, path, allow string) error {
	h := x.idHeader()
	h.Set("Allow", allow)
	return x.answer(dataplane.ErrorAnswer(dataplane.MethodNotAllowed(method, path, allow), h))
}

// passthrough lets a request Junction does not serve go on untouched, and
// asks Envoy (mode override) not to send the rest of it.
func (x *exchange) passthrough() error {
	x.phase = phasePassthrough
	return x.send(&extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}},
		ModeOverride: &filterv3.ProcessingMode{
			RequestBodyMode:     modeNone,
			ResponseHeaderMode:  filterv3.ProcessingMode_SKIP,
			ResponseBodyMode:    modeNone,
			RequestTrailerMode:  filterv3.ProcessingMode_SKIP,
			ResponseTrailerMode: filterv3.ProcessingMode_SKIP,
		},
	})
}

// chatHeaders starts a chat completion: bounds it, decides whether the
// headers can be answered now, and strips what must not reach a backend.
func (x *exchange) chatHeaders(h *extprocv3.HttpHeaders, ri requestInfo) error {
	if x.gen == nil {
		return x.answer(dataplane.ErrorAnswer(dataplane.NoGeneration(), x.idHeader()))
	}
	if h.GetEndOfStream() {
		return x.decide(false) // no body: answered as the empty body it is
	}
	if cl := ri.header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n > x.s.opts.MaxBodyBytes {
			return x.tooLarge()
		}
	}
	mode := x.proto.GetRequestBodyMode()
	if x.proto != nil && mode == modeNone {
		// Envoy will forward the request without ever showing Junction its
		// body: routing (and every safety check) would be skipped. Refuse.
		x.s.log.Error("Envoy's ext_proc filter sends no request body (request_body_mode NONE); Junction cannot route; set request_body_mode: BUFFERED",
			"request_id", x.id)
		x.dp.Error(metrics.ReasonUnknown)
		e := dataplane.NewError(http.StatusInternalServerError, dataplane.TypeServer,
			"the router is misconfigured: it is not shown request bodies, so it cannot route (request id "+x.id+")").WithCode("extproc_misconfigured")
		return x.answer(dataplane.ErrorAnswer(e, x.idHeader()))
	}
	x.deferHeaders = x.proto != nil && (mode == modeFullDuplex ||
		(mode == modeStreamed && x.proto.GetSendBodyWithoutWaitingForHeaderResponse()))
	x.phase = phaseRequestBody
	x.bodyDeadline = x.start.Add(x.s.opts.BodyTimeout)

	// The answer is read by Junction, so it must not be compressed; hop-by-hop
	// headers never reach a backend; the request id is the one Junction uses.
	// parseHeaders noted which are there as it read the names (a lookup per
	// name, or a pass over the map, costs more); they are removed in
	// requestHopHeaders' order, then accept-encoding.
	hop := ri.hop // bit i: requestHopHeaders[i]; bit len(requestHopHeaders): Accept-Encoding
	for i := 0; hop != 0; i++ {
		if hop&(1<<i) == 0 {
			continue
		}
		hop &^= 1 << i
		delete(x.reqHeader, hopCanonical[i])
		if i < len(requestHopHeaders) {
			x.early.remove = append(x.early.remove, requestHopHeaders[i])
		} else {
			x.early.remove = append(x.early.remove, "accept-encoding")
		}
	}
	if got := x.reqHeader[dataplane.HeaderRequestID]; len(got) != 1 || got[0] != x.id {
		x.early.put("x-request-id", x.id, false)
		x.reqHeader[dataplane.HeaderRequestID] = []string{x.id}
	}
	delete(x.reqHeader, "Content-Length") // set from the body Junction sends
	if x.deferHeaders {
		return nil
	}
	err := x.sendReply(x.headersResponse(false, &x.early, false))
	x.early.reset()
	return err
}

func (x *exchange) requestBody(b *extprocv3.HttpBody) error {
	switch x.phase {
	case phaseRequestBody:
	case phasePassthrough:
		return x.sendReply(x.continueBody(b, false))
	case phaseDone:
		x.stray("request_body")
		return x.sendReply(x.continueBody(b, false))
	default:
		return x.protocolError("request_body", "a request body arrived while the request was "+phaseNames[x.phase])
	}
	chunk := b.GetBody()
	x.chunks++
	if int64(len(x.body))+int64(len(chunk)) > x.s.opts.MaxBodyBytes {
		return x.tooLarge()
	}
	if b.GetEndOfStream() {
		if x.body == nil {
			// The whole body in one message (BUFFERED): parsed where it lies.
			// The message is this exchange's (gRPC decodes each into bytes of
			// its own) and is not read again.
			x.body = chunk
		} else {
			x.body = append(x.body, chunk...)
		}
		return x.decide(false)
	}
	x.body = append(x.body, chunk...)
	mode := x.proto.GetRequestBodyMode()
	if mode == modePartial {
		// BUFFERED_PARTIAL sends what fitted Envoy's buffer and lets the rest
		// pass: a body Junction cannot read whole cannot be routed.
		return x.tooLarge()
	}
	if !x.deferHeaders && mode != modeBuffered && mode != modeFullDuplex {
		// STREAMED after the headers were answered: each piece is answered in
		// order, emptied; the whole rewritten body goes with the last one.
		x.replied++
		return x.sendReply(x.bodyResponse(false).clearBody())
	}
	return nil
}

func (x *exchange) requestTrailers() error {
	switch x.phase {
	case phaseRequestBody:
		if x.chunks == x.replied && !x.deferHeaders {
			// Every body piece is already answered, so the rewritten body has
			// nowhere to go.
			x.dp.Error(metrics.ReasonParseError)
			e := dataplane.NewError(http.StatusBadRequest, dataplane.TypeInvalidRequest,
				"request trailers are not supported by this router when the request body is streamed")
			return x.answer(dataplane.ErrorAnswer(e, x.idHeader()))
		}
		return x.decide(true)
	case phaseStart:
		return x.protocolError("request_trailers", "request trailers before request headers")
	case phasePassthrough:
	default:
		x.stray("request_trailers")
	}
	return x.send(trailersResponse(false))
}

// tooLarge answers 413 for a body over the limit, counted as the gateway
// counts it.
func (x *exchange) tooLarge() error {
	x.dp.Error(metrics.ReasonParseError)
	return x.answer(dataplane.ErrorAnswer(dataplane.TooLarge(x.s.opts.MaxBodyBytes), x.idHeader()))
}

// decide runs the request phase on the whole body and gives Envoy the
// outcome: the request to forward (header and body mutations, in the shape
// the body mode needs), or an immediate answer.
func (x *exchange) decide(trailers bool) error {
	if x.responsesAPI {
		chatBody, a := x.dp.ResponsesRequest(x.ctx, x.body, x.idHeader())
		if a != nil {
			return x.answer(a)
		}
		x.body = chatBody
	}
	// Run builds the forwarded headers on the request's own map; the
	// snapshot is what the mutation is computed against.
	var snapBuf [16]headerPair
	before := snapshot(snapBuf[:0], x.reqHeader)
	out := x.dp.Run(x.ctx, &dataplane.Request{
		Gen: x.gen, Recipe: x.s.opts.Recipe, ID: x.id, Start: x.start, Body: x.body, Header: x.reqHeader,
	})
	x.body = nil // parsed in place; out holds what it needs
	if out.Cancelled {
		x.cancelled = true // counted by Run
		x.phase = phaseDone
		x.markComplete()
		return nil
	}
	if out.Answer != nil {
		return x.answer(out.Answer) // in the client's protocol already
	}
	x.dp.Forwarded()
	x.phase = phaseForwarded
	x.startModelSpan()

	m := &x.early // the request's changes so far (nothing once sent), then the decision's
	m.diff(before, out.Header)
	x.reqHeader = out.Header // as Envoy will hold them
	putPolicyHeaders(m, out.Result.Policy)
	if p := out.Target.RequestURI(); p != x.path {
		m.put(":path", p, false)
		x.path = p
	}
	m.put("content-length", strconv.Itoa(len(out.Body)), false)

	pending := x.chunks - x.replied
	mode := x.proto.GetRequestBodyMode()
	switch {
	case x.deferHeaders && mode == modeFullDuplex:
		// The headers waited for the body; the rewritten body follows as one
		// streamed piece.
		if err := x.sendReply(x.headersResponse(false, m, true)); err != nil {
			return err
		}
		x.replied = x.chunks
		err := x.sendReply(x.bodyResponse(false).stream(out.Body, !trailers))
		if err != nil || !trailers {
			return err
		}
	case x.deferHeaders:
		// STREAMED, sent without waiting for the headers' answer: answer the
		// headers, then every piece in order, the last carrying the body.
		if err := x.sendReply(x.headersResponse(false, m, true)); err != nil {
			return err
		}
		if err := x.answerPieces(pending, out.Body); err != nil || !trailers {
			return err
		}
	case pending == 1 && (mode == modeBuffered || mode == modePartial || (x.proto == nil && x.chunks == 1)):
		// BUFFERED: Envoy holds the headers until this answer, so they change
		// with the body and the route is picked again on them.
		r := x.bodyResponse(false).headers(m).replace(out.Body)
		r.clearRoute = true
		err := x.sendReply(r)
		x.replied = x.chunks
		if err != nil || !trailers {
			return err
		}
	default:
		// STREAMED after the headers went upstream: only the body can change.
		x.s.log.Debug("request body streamed after its headers were forwarded: the body is rewritten, the headers (and so the route) cannot be",
			"request_id", x.id)
		if err := x.answerPieces(pending, out.Body); err != nil || !trailers {
			return err
		}
	}
	return x.send(trailersResponse(false))
}

// answerPieces answers n held body pieces in order: emptied, the last one
// replaced by body.
func (x *exchange) answerPieces(n int, body []byte) error {
	for i := 0; i < n; i++ {
		r := x.bodyResponse(false)
		if i == n-1 {
			r.replace(body)
		} else {
			r.clearBody()
		}
		if err := x.sendReply(r); err != nil {
			return err
		}
		x.replied++
	}
	return nil
}

// answer ends the request with a, as Envoy's local reply.
func (x *exchange) answer(a *dataplane.Answer) error {
	x.status = a.Status
	x.phase = phaseDone
	x.markComplete()
	return x.send(immediateResponse(a, "junction_"+strconv.Itoa(a.Status)))
}

func (x *exchange) idHeader() http.Header {
	return http.Header{dataplane.HeaderRequestID: {x.id}}
}
