package extproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/translate"
)

// Body send modes, shorter.
const (
	modeNone       = filterv3.ProcessingMode_NONE
	modeStreamed   = filterv3.ProcessingMode_STREAMED
	modeBuffered   = filterv3.ProcessingMode_BUFFERED
	modePartial    = filterv3.ProcessingMode_BUFFERED_PARTIAL
	modeFullDuplex = filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
)

// phase is where a stream's request is.
type phase uint8

const (
	// phaseStart: nothing received yet.
	phaseStart phase = iota
	// phaseRequestBody: the request headers were seen; the body is being
	// collected.
	phaseRequestBody
	// phaseForwarded: the request went upstream; its answer has not begun.
	phaseForwarded
	// phaseResponseBody: the answer's headers were seen; its body is arriving.
	phaseResponseBody
	// phaseDone: answered by Junction, or the answer is complete.
	phaseDone
	// phasePassthrough: not a request Junction handles (another path); every
	// message is let through unchanged.
	phasePassthrough
)

var phaseNames = [...]string{"start", "request_body", "forwarded", "response_body", "done", "passthrough"}

// exchange is one stream: one HTTP request, its answer and its metrics.
type exchange struct {
	s      *Server
	stream extprocv3.ExternalProcessor_ProcessServer
	ctx    context.Context
	start  time.Time
	end    time.Time
	phase  phase
	seen   bool
	proto  *extprocv3.ProtocolConfiguration
	// observe: Envoy runs the filter in observability mode and ignores
	// answers, so none are sent.
	observe bool

	id        string
	endpoint  string
	gen       *engine.Generation
	reqHeader http.Header // the request's headers as Envoy holds them
	path      string      // :path as Envoy holds it

	// The request body.
	early        mutation // header changes made before the body is seen
	deferHeaders bool     // the headers' answer waits for the body
	body         []byte
	chunks       int // body messages received
	replied      int // body messages answered
	bodyDeadline time.Time

	out       dataplane.Outcome // the request phase's outcome, once decided
	category  string
	model     string // metrics label
	forwarded time.Time

	// The answer.
	status     int
	sse        bool
	rewriteSSE bool
	scan       dataplane.EventScanner
	scanOff    bool
	first      time.Time
	usage      *cost.Usage
	usageDone  bool
	doneSeen   bool
	respBuf    []byte
	respPieces int
	respTooBig bool
	respHeld   bool // full duplex: the pieces so far are held, not yet answered
	// streamAns collects an event stream's chunks for the decision's
	// response-phase plugins (nil when none has one); streamEnded: it was
	// handed over (or dropped) once.
	streamAns   *dataplane.StreamAnswer
	streamEnded bool

	// Translation (internal/translate): responsesAPI marks a POST
	// /v1/responses, translated to a chat completion (responsesReq) on the
	// way in; anthropic marks a model behind the Messages API. Their answers
	// are translated back on the way out: whole (holdJSON, errBody) or event
	// by event (aStream, rStream).
	responsesAPI bool
	responsesReq *translate.ResponsesRequest
	anthropic    bool
	holdJSON     bool // a 2xx JSON answer to translate: held until complete
	errBody      bool // an error answer in the Messages API's shape to translate
	aStream      *translate.AnthropicStream
	rStream      *translate.ResponsesStream

	mu       sync.Mutex // held by whichever goroutine works on the exchange
	timer    *time.Timer
	deadline time.Time
	closed   bool // the handler ended the stream; the worker must stop

	complete  bool // nothing more is needed: answered, or the answer ended
	quiet     bool // messages after complete are expected (an override Envoy may ignore)
	cancelled bool // the request was cancelled and counted as such
	recorded  bool
}

func (s *Server) newExchange(stream extprocv3.ExternalProcessor_ProcessServer) *exchange {
	return &exchange{
		s: s, stream: stream, ctx: stream.Context(), start: time.Now(),
		endpoint: dataplane.EndpointOther, category: metrics.CategoryDefault, model: metrics.UnknownModel,
	}
}

// serve runs the stream. Messages are received and answered on one worker
// goroutine (receiving and answering on the same goroutine keeps a message's
// round trip free of handoffs); this goroutine, the stream's handler, only
// watches the time: the body's deadline (answered 408) and the idle bound
// (the stream is ended). Both goroutines take mu to touch the exchange, and
// once closed is set the worker leaves it alone.
func (x *exchange) serve() error {
	x.timer = time.NewTimer(x.s.opts.IdleTimeout)
	defer x.timer.Stop()
	x.mu.Lock()
	x.arm()
	x.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- x.work() }()
	for {
		select {
		case err := <-done:
			return err
		case <-x.timer.C:
			x.mu.Lock()
			if time.Now().Before(x.deadline) {
				x.mu.Unlock() // re-armed by a message meanwhile
				continue
			}
			err, end := x.timedOut()
			if end {
				x.closed = true
			} else {
				x.arm()
			}
			x.mu.Unlock()
			if end {
				return err
			}
		}
	}
}

// work receives and answers messages until the stream ends.
func (x *exchange) work() error {
	for {
		req, rerr := x.stream.Recv()
		x.mu.Lock()
		if x.closed || rerr != nil {
			// io.EOF: Envoy closed its side; anything else: the stream was
			// reset (the client went away) or the connection failed. Either
			// way there is nobody to answer; finish tells them apart.
			x.mu.Unlock()
			return nil
		}
		x.seen = true
		err := x.handleSafely(req)
		x.arm()
		x.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// handleSafely handles one message, turning a panic into the end of the
// stream (Envoy answers 500) and an unknown error, so one bad request
// cannot take the server down.
func (x *exchange) handleSafely(req *extprocv3.ProcessingRequest) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if rp, ok := p.(*dataplane.RoutedPanic); ok && x.out.Result == nil {
				// It panicked after routing: label it with the decision.
				x.category, x.model = metrics.Category(rp.Result), metrics.ModelLabel(rp.Result)
			}
			x.s.log.Error("panic serving ext_proc stream", "request_id", x.id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			x.failed(metrics.ReasonUnknown)
			err = status.Errorf(codes.Internal, "internal error while processing the request (request id %s)", x.id)
		}
	}()
	return x.handle(req)
}

// arm sets the timer for the current wait: the body's deadline while the
// body is awaited, the idle bound otherwise. Called with mu held.
func (x *exchange) arm() {
	wait := x.s.opts.IdleTimeout
	if x.phase == phaseRequestBody {
		wait = time.Until(x.bodyDeadline)
	}
	x.deadline = time.Now().Add(wait)
	x.timer.Reset(wait)
}

func (x *exchange) handle(req *extprocv3.ProcessingRequest) error {
	if pc := req.GetProtocolConfig(); pc != nil && x.proto == nil {
		x.proto = pc
	}
	x.observe = req.GetObservabilityMode()
	switch r := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return x.requestHeaders(r.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		return x.requestBody(r.RequestBody)
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return x.requestTrailers()
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return x.responseHeaders(r.ResponseHeaders)
	case *extprocv3.ProcessingRequest_ResponseBody:
		return x.responseBody(r.ResponseBody)
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return x.responseTrailers()
	}
	// A message without a request (flow control only) or of a kind this
	// server does not know: there is nothing to answer.
	x.stray("empty")
	return nil
}

// timedOut handles the expiry of the current wait; end says the stream is
// to be ended with err.
func (x *exchange) timedOut() (err error, end bool) {
	switch x.phase {
	case phaseRequestBody:
		x.s.metrics.Error(metrics.UnknownModel, metrics.ReasonTimeout)
		e := dataplane.NewError(http.StatusRequestTimeout, dataplane.TypeInvalidRequest,
			fmt.Sprintf("the request body did not arrive within %s", x.s.opts.BodyTimeout)).WithCode("request_timeout")
		return x.answer(dataplane.ErrorAnswer(e, x.idHeader())), false
	case phaseForwarded, phaseResponseBody:
		x.s.metrics.Error(x.model, metrics.ReasonTimeout)
		x.status = http.StatusGatewayTimeout
		x.markComplete()
		x.s.log.Warn("ext_proc stream idle", "request_id", x.id, "phase", phaseNames[x.phase], "idle", x.s.opts.IdleTimeout)
		return status.Errorf(codes.DeadlineExceeded, "junction ext_proc: no message from Envoy for %s while the request was %s",
			x.s.opts.IdleTimeout, phaseNames[x.phase]), true
	}
	return nil, true
}

// ---- request ---------------------------------------------------------------

func (x *exchange) requestHeaders(h *extprocv3.HttpHeaders) error {
	if x.phase != phaseStart {
		return x.protocolError("request_headers", "a second request_headers message on one stream")
	}
	ri := parseHeaders(h.GetHeaders())
	x.reqHeader, x.path = ri.header, ri.path
	x.id = dataplane.RequestID(ri.header.Get(dataplane.HeaderRequestID))
	if x.s.opts.Runtime != nil {
		x.gen = x.s.opts.Runtime.Current()
	}
	path := ri.path
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
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
				return x.answer(dataplane.ErrorAnswer(dataplane.NoResponseStore(), x.idHeader()))
			}
		}
		return x.methodNotAllowed(ri.method, path, strings.Join(allow, ", "))
	}
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
		x.s.metrics.Error(metrics.UnknownModel, metrics.ReasonUnknown)
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
	for _, k := range requestHopHeaders {
		if _, ok := x.reqHeader[http.CanonicalHeaderKey(k)]; ok {
			x.early.remove = append(x.early.remove, k)
			delete(x.reqHeader, http.CanonicalHeaderKey(k))
		}
	}
	if _, ok := x.reqHeader["Accept-Encoding"]; ok {
		x.early.remove = append(x.early.remove, "accept-encoding")
		delete(x.reqHeader, "Accept-Encoding")
	}
	if got := x.reqHeader[dataplane.HeaderRequestID]; len(got) != 1 || got[0] != x.id {
		x.early.put("x-request-id", x.id, false)
		x.reqHeader[dataplane.HeaderRequestID] = []string{x.id}
	}
	delete(x.reqHeader, "Content-Length") // set from the body Junction sends
	if x.deferHeaders {
		return nil
	}
	m := x.early
	x.early = mutation{}
	return x.send(headersResponse(false, &m, false))
}

func (x *exchange) requestBody(b *extprocv3.HttpBody) error {
	switch x.phase {
	case phaseRequestBody:
	case phasePassthrough:
		return x.send(x.continueBody(b, false))
	case phaseDone:
		x.stray("request_body")
		return x.send(x.continueBody(b, false))
	default:
		return x.protocolError("request_body", "a request body arrived while the request was "+phaseNames[x.phase])
	}
	chunk := b.GetBody()
	x.chunks++
	if int64(len(x.body))+int64(len(chunk)) > x.s.opts.MaxBodyBytes {
		return x.tooLarge()
	}
	x.body = append(x.body, chunk...)
	if b.GetEndOfStream() {
		return x.decide(false)
	}
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
		return x.send(bodyResponse(false, &extprocv3.CommonResponse{BodyMutation: clearBody()}))
	}
	return nil
}

func (x *exchange) requestTrailers() error {
	switch x.phase {
	case phaseRequestBody:
		if x.chunks == x.replied && !x.deferHeaders {
			// Every body piece is already answered, so the rewritten body has
			// nowhere to go.
			x.s.metrics.Error(metrics.UnknownModel, metrics.ReasonParseError)
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
	x.s.metrics.Error(metrics.UnknownModel, metrics.ReasonParseError)
	return x.answer(dataplane.ErrorAnswer(dataplane.TooLarge(x.s.opts.MaxBodyBytes), x.idHeader()))
}

// decide runs the request phase on the whole body and gives Envoy the
// outcome: the request to forward (header and body mutations, in the shape
// the body mode needs), or an immediate answer.
func (x *exchange) decide(trailers bool) error {
	if x.responsesAPI {
		chatBody, req, err := translate.ResponsesToChat(x.body)
		if err != nil {
			x.s.metrics.Error(metrics.UnknownModel, metrics.ReasonParseError)
			e := dataplane.NewError(http.StatusBadRequest, dataplane.TypeInvalidRequest, err.Error())
			var te *translate.Error
			if errors.As(err, &te) && te.Param != "" {
				e = e.WithParam(te.Param)
			}
			return x.answer(dataplane.ErrorAnswer(e, x.idHeader()))
		}
		x.body, x.responsesReq = chatBody, req
	}
	x.out = x.s.plane.Run(x.ctx, &dataplane.Request{
		Gen: x.gen, Recipe: x.s.opts.Recipe, ID: x.id, Start: x.start, Body: x.body, Header: x.reqHeader.Clone(),
	})
	out := &x.out
	x.body = nil // parsed in place; out holds what it needs
	x.category, x.model = out.Category(), out.ModelLabel()
	if out.Cancelled {
		x.cancelled = true // counted by Run
		x.phase = phaseDone
		x.markComplete()
		return nil
	}
	if out.Answer != nil {
		if x.responsesReq != nil && out.Answer.Status/100 == 2 {
			stream := dataplane.IsEventStream(out.Answer.Header.Get("Content-Type"))
			if b, err := translate.ResponsesBody(out.Answer.Body, stream, x.responsesReq, time.Now().Unix()); err == nil {
				out.Answer.Body = b
			}
		}
		return x.answer(out.Answer)
	}
	x.anthropic = dataplane.IsAnthropic(out.Model.APIFormat)

	x.s.metrics.ModelRequest(out.Model.Name)
	x.forwarded = time.Now()
	x.phase = phaseForwarded

	m := x.early
	x.early = mutation{}
	m.diff(x.reqHeader, out.Header)
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
		if err := x.send(headersResponse(false, &m, true)); err != nil {
			return err
		}
		x.replied = x.chunks
		err := x.send(bodyResponse(false, &extprocv3.CommonResponse{BodyMutation: streamedBody(out.Body, !trailers)}))
		if err != nil || !trailers {
			return err
		}
	case x.deferHeaders:
		// STREAMED, sent without waiting for the headers' answer: answer the
		// headers, then every piece in order, the last carrying the body.
		if err := x.send(headersResponse(false, &m, true)); err != nil {
			return err
		}
		if err := x.answerPieces(pending, out.Body); err != nil || !trailers {
			return err
		}
	case pending == 1 && (mode == modeBuffered || mode == modePartial || (x.proto == nil && x.chunks == 1)):
		// BUFFERED: Envoy holds the headers until this answer, so they change
		// with the body and the route is picked again on them.
		err := x.send(bodyResponse(false, &extprocv3.CommonResponse{
			HeaderMutation: m.proto(), BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: out.Body}},
			ClearRouteCache: true,
		}))
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
		bm := clearBody()
		if i == n-1 {
			bm = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: body}}
		}
		if err := x.send(bodyResponse(false, &extprocv3.CommonResponse{BodyMutation: bm})); err != nil {
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

// ---- response --------------------------------------------------------------

func (x *exchange) responseHeaders(h *extprocv3.HttpHeaders) error {
	switch x.phase {
	case phaseForwarded:
	case phasePassthrough:
		return x.send(headersResponse(true, nil, false))
	case phaseRequestBody:
		// Envoy answered before Junction had the whole request (its own
		// buffer limit, a timeout, an upstream that answered early): count it
		// with that status and let it through.
		x.status, _ = responseStatus(h.GetHeaders())
		x.phase = phaseDone
		x.quiet = true
		x.markComplete()
		var m mutation
		m.put("x-request-id", x.id, false)
		return x.send(headersResponse(true, &m, false))
	case phaseDone:
		if !x.quiet {
			x.stray("response_headers")
		}
		return x.send(headersResponse(true, nil, false))
	default:
		return x.protocolError("response_headers", "response headers arrived while the request was "+phaseNames[x.phase])
	}
	st, ct := responseStatus(h.GetHeaders())
	x.status = st
	if st >= 400 {
		reason := metrics.ReasonUpstream4xx
		if st >= 500 {
			reason = metrics.ReasonUpstream5xx
		}
		x.s.metrics.Error(x.model, reason)
	}
	var m mutation
	x.out.Routing.EachClientHeader(func(k, v string) { m.put(lowerKey(k), v, false) })
	m.put("x-request-id", x.id, false) // the client's id, not the backend's
	x.sse = x.out.Stream && st < 400 && dataplane.IsEventStream(ct)
	if x.sse {
		m.put("cache-control", "no-cache", false)
		m.put("x-accel-buffering", "no", false) // tell nginx-style proxies in front not to buffer
	}
	translating := x.anthropic || x.responsesReq != nil
	if translating && !h.GetEndOfStream() && (st/100 == 2 || (st >= 400 && x.anthropic)) {
		// The body changes length as it is translated.
		m.remove = append(m.remove, "content-length")
	}
	resp := headersResponse(true, &m, false)
	switch {
	case h.GetEndOfStream():
		x.phase = phaseDone
		x.markComplete()
	case st >= 400 && x.anthropic:
		// A Messages API error: read whole, given to the client in the
		// OpenAI shape.
		x.phase = phaseResponseBody
		x.errBody = true
		resp.ModeOverride = x.responseMode(modeBuffered)
	case st >= 400 || st < 200:
		// An error is relayed as the backend sent it: its body is not needed.
		x.phase = phaseDone
		x.quiet = true
		x.markComplete()
		resp.ModeOverride = x.responseMode(modeNone)
	case x.sse:
		x.phase = phaseResponseBody
		x.rewriteSSE = x.out.DropUsage || translating
		x.startStreams()
		resp.ModeOverride = x.responseMode(modeStreamed)
	default:
		x.phase = phaseResponseBody
		x.holdJSON = translating
		resp.ModeOverride = x.responseMode(modeBuffered)
	}
	return x.send(resp)
}

// responseMode is the mode override that makes Envoy send the answer's body
// as want, or nil when the configured mode already suits: an event stream
// is read as it streams; a JSON answer is read whole (to add
// routing_metadata) unless the filter is configured to stream answers.
func (x *exchange) responseMode(want filterv3.ProcessingMode_BodySendMode) *filterv3.ProcessingMode {
	if x.proto != nil {
		cur := x.proto.GetResponseBodyMode()
		if cur == want || cur == modeFullDuplex {
			return nil
		}
		if want == modeBuffered && cur == modeStreamed {
			return nil
		}
	}
	return &filterv3.ProcessingMode{ResponseBodyMode: want}
}

// startStreams prepares the event translators the answer needs.
func (x *exchange) startStreams() {
	x.streamAns = x.s.plane.NewStreamAnswer(&x.out)
	now := time.Now().Unix()
	if x.anthropic {
		x.aStream = translate.NewAnthropicStream(now)
	}
	if x.responsesReq != nil {
		x.rStream = translate.NewResponsesStream(x.responsesReq, now)
	}
}

func (x *exchange) respFullDuplex() bool {
	return x.proto.GetResponseBodyMode() == modeFullDuplex
}

func (x *exchange) responseBody(b *extprocv3.HttpBody) error {
	switch x.phase {
	case phaseResponseBody:
	case phaseForwarded:
		// The answer's headers were not sent to Junction
		// (response_header_mode SKIP): read what the body says.
		x.status = http.StatusOK
		x.sse = x.out.Stream && looksLikeEvents(b.GetBody())
		translating := x.anthropic || x.responsesReq != nil
		x.rewriteSSE = x.sse && (x.out.DropUsage || translating)
		x.holdJSON = !x.sse && translating
		if x.sse {
			x.startStreams()
		}
		x.phase = phaseResponseBody
	case phasePassthrough:
		return x.send(x.continueBody(b, true))
	case phaseDone:
		if !x.quiet {
			x.stray("response_body")
		}
		return x.send(x.continueBody(b, true))
	default:
		return x.protocolError("response_body", "a response body arrived while the request was "+phaseNames[x.phase])
	}
	if x.sse {
		return x.eventsBody(b)
	}
	return x.jsonBody(b)
}

func looksLikeEvents(b []byte) bool {
	return len(b) > 0 && (b[0] == ':' || strings.HasPrefix(string(b[:min(len(b), 5)]), "data:") ||
		strings.HasPrefix(string(b[:min(len(b), 6)]), "event:"))
}

// eventsBody relays one piece of an event stream: it observes the first
// token (TTFT) and the usage, drops the usage-only event when only Junction
// asked for it (rewriting the piece), and ends the stream with [DONE] when
// the backend did not.
func (x *exchange) eventsBody(b *extprocv3.HttpBody) error {
	chunk, eos := b.GetBody(), b.GetEndOfStream()
	var out []byte
	changed := false
	rewrite := x.rewriteSSE && !x.scanOff
	switch {
	case x.scanOff:
		out = chunk
	case len(x.scan.Pending())+len(chunk) > dataplane.MaxEventBytes:
		// An event larger than any chat chunk: stop reading the stream and
		// relay what is held and the rest as it comes.
		if rewrite {
			out = append(append(out, x.scan.Pending()...), chunk...)
			changed = true
		} else {
			out = chunk
		}
		x.scanOff, x.scan = true, dataplane.EventScanner{}
		x.streamAns.TooLarge()
	default:
		_ = x.scan.Feed(chunk, func(ev, data []byte) bool {
			out = x.upstreamEvent(ev, data, rewrite, out)
			return true
		})
		if rewrite {
			changed = true
		} else {
			out = chunk
		}
	}
	if eos {
		if !x.scanOff {
			tail := x.scan.Pending()
			if !rewrite && !x.doneSeen && len(tail) > 0 {
				// Close the unfinished last event before [DONE] is added.
				out = append(append([]byte(nil), out...), '\n')
				if tail[len(tail)-1] != '\n' {
					out = append(out, '\n')
				}
				changed = true
			}
			if ev, data, ok := x.scan.Flush(); ok {
				out = x.upstreamEvent(ev, data, rewrite, out)
			}
		}
		x.recordUsage()
		upstreamDone := x.doneSeen // before Junction adds its own [DONE]
		if !x.doneSeen {
			if rewrite {
				out = x.event(dataplane.DoneEvent, doneData, true, out)
			} else {
				out = append(append([]byte(nil), out...), dataplane.DoneEvent...)
			}
			changed = true
		}
		x.phase = phaseDone
		x.markComplete()
		err := x.send(x.bodyReply(true, out, changed, eos))
		x.endStream(upstreamDone && err == nil)
		return err
	}
	return x.send(x.bodyReply(true, out, changed, eos))
}

// endStream hands a collected event stream to the response phase once its
// last piece went back to Envoy (complete: the upstream's [DONE] was in it),
// beside the stream so that Envoy is not kept waiting; an incomplete stream
// is only counted.
func (x *exchange) endStream(complete bool) {
	if x.streamAns == nil || x.streamEnded {
		return
	}
	x.streamEnded = true
	out, st, sa := x.out, x.status, x.streamAns
	if st == 0 {
		st = http.StatusOK
	}
	if !complete {
		x.s.plane.StreamEnded(x.ctx, &out, st, sa, false)
		return
	}
	go x.s.plane.StreamEnded(context.WithoutCancel(x.ctx), &out, st, sa, true)
}

var doneData = []byte("[DONE]")

// upstreamEvent handles one event as the backend sent it: a Messages API
// event becomes the chat chunks it stands for, each handled by event.
func (x *exchange) upstreamEvent(ev, data []byte, rewrite bool, out []byte) []byte {
	if x.aStream == nil {
		return x.event(ev, data, rewrite, out)
	}
	if data == nil || x.doneSeen {
		return out
	}
	chunks, err := x.aStream.Event(data)
	if err != nil {
		x.s.metrics.Error(x.model, metrics.ReasonUpstream5xx)
		chunks = [][]byte{dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream,
			"the backend's event stream could not be translated: "+err.Error()).Body(), doneData}
	}
	for _, c := range chunks {
		raw := append(append(append([]byte(nil), "data: "...), c...), '\n', '\n')
		out = x.event(raw, c, true, out)
	}
	return out
}

// event handles one complete event of the answer; when rewriting, the
// events to relay are appended to out (as response.* events for a
// Responses API request).
func (x *exchange) event(ev, data []byte, rewrite bool, out []byte) []byte {
	if x.doneSeen {
		return out // the gateway relays nothing after [DONE]
	}
	if data != nil {
		x.streamAns.Chunk(data)
		if string(data) == "[DONE]" {
			x.doneSeen = true
			x.recordUsage()
		} else {
			if x.first.IsZero() {
				x.first = time.Now()
				x.s.metrics.TTFT(x.out.Model.Name, x.first.Sub(x.start))
			}
			if u, usageOnly := dataplane.ChunkUsage(data); u != nil {
				x.usage = u
				if usageOnly && rewrite && x.out.DropUsage {
					return out
				}
			}
		}
	}
	if !rewrite {
		return out
	}
	if x.rStream != nil {
		if data == nil {
			return out
		}
		events, err := x.rStream.Chunk(data)
		if err != nil {
			return out // not a chunk: nothing a response stream can say
		}
		return translate.AppendEvents(out, events)
	}
	return append(out, ev...)
}

// recordUsage meters a stream's usage once: at [DONE], at its end, or when
// it broke off after its usage chunk, as the gateway does.
func (x *exchange) recordUsage() {
	if x.usageDone || x.usage == nil || x.out.Model == nil {
		return
	}
	x.usageDone = true
	m := x.out.Model
	x.s.metrics.Usage(m.Name, m.Pricing, *x.usage)
	if !x.first.IsZero() {
		x.s.metrics.TPOT(m.Name, time.Since(x.first), x.usage.CompletionTokens)
	}
}

// jsonBody reads a non-streamed answer: whole, it gains routing_metadata;
// in pieces (a filter configured to stream answers), it is relayed as it
// comes and only read for its usage.
func (x *exchange) jsonBody(b *extprocv3.HttpBody) error {
	if x.holdJSON || x.errBody {
		return x.heldBody(b)
	}
	chunk, eos := b.GetBody(), b.GetEndOfStream()
	if x.respPieces == 0 && eos {
		out, changed := x.finishJSON(chunk, true)
		resp := x.bodyReply(true, out, changed, true)
		if changed && !x.respFullDuplex() {
			var m mutation
			m.put("content-length", strconv.Itoa(len(out)), false)
			resp.GetResponseBody().Response.HeaderMutation = m.proto()
		}
		return x.send(resp)
	}
	x.respPieces++
	if !x.respTooBig {
		if len(x.respBuf)+len(chunk) > dataplane.MaxUpstreamBody {
			x.respTooBig = true
		} else {
			x.respBuf = append(x.respBuf, chunk...)
		}
	}
	if x.respFullDuplex() {
		// Full duplex: hold the pieces and answer once with the whole body,
		// unless it grows past the bound: then relay what is held and go on.
		if !x.respTooBig && !eos {
			x.respHeld = true
			return nil
		}
		if !x.respTooBig {
			out, _ := x.finishJSON(x.respBuf, true)
			x.respBuf = nil
			return x.send(x.bodyReply(true, out, true, true))
		}
		out := chunk
		if x.respHeld {
			out = append(x.respBuf, chunk...)
			x.respHeld, x.respBuf = false, nil
		}
		if eos {
			x.finishJSON(nil, false)
		}
		return x.send(x.bodyReply(true, out, true, eos))
	}
	if eos {
		if x.respTooBig {
			x.finishJSON(nil, false)
		} else {
			x.finishJSON(x.respBuf, false)
		}
		x.respBuf = nil
	}
	return x.send(x.bodyReply(true, chunk, false, eos))
}

// heldBody collects an answer that is translated whole: each piece but the
// last is answered emptied (or, in full duplex, held unanswered); the last
// carries the translated answer.
func (x *exchange) heldBody(b *extprocv3.HttpBody) error {
	chunk, eos := b.GetBody(), b.GetEndOfStream()
	x.respPieces++
	if !x.respTooBig {
		if len(x.respBuf)+len(chunk) > dataplane.MaxUpstreamBody {
			x.respTooBig, x.respBuf = true, nil
		} else {
			x.respBuf = append(x.respBuf, chunk...)
		}
	}
	if !eos {
		if x.respFullDuplex() {
			return nil
		}
		return x.send(bodyResponse(true, &extprocv3.CommonResponse{BodyMutation: clearBody()}))
	}
	out, st := x.translateAnswer(x.respBuf)
	x.respBuf = nil
	resp := x.bodyReply(true, out, true, true)
	if x.respPieces == 1 && !x.respFullDuplex() {
		// Read whole (BUFFERED): Envoy still holds the answer's headers.
		var m mutation
		m.put("content-length", strconv.Itoa(len(out)), false)
		if st != 0 {
			m.put(":status", strconv.Itoa(st), false)
		}
		resp.GetResponseBody().Response.HeaderMutation = m.proto()
	}
	return x.send(resp)
}

// translateAnswer turns a complete answer into what the client asked for:
// a Messages API error or message into chat terms, a chat answer into a
// Responses API object; the chat answer is metered and gains
// routing_metadata on the way. status is the answer's new status, 0 when it
// stays.
func (x *exchange) translateAnswer(body []byte) ([]byte, int) {
	fail := func(msg string) ([]byte, int) {
		x.s.metrics.Error(x.model, metrics.ReasonUpstream5xx)
		x.status = http.StatusBadGateway
		x.phase = phaseDone
		x.markComplete()
		return dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream, msg).Body(), http.StatusBadGateway
	}
	if x.respTooBig {
		return fail(fmt.Sprintf("the backend's answer exceeds %d bytes and cannot be translated", dataplane.MaxUpstreamBody))
	}
	if x.errBody {
		x.phase = phaseDone
		x.markComplete()
		return translate.AnthropicErrorToChat(body), 0
	}
	if x.anthropic {
		chat, err := translate.AnthropicToChat(body, time.Now().Unix())
		if err != nil {
			return fail(fmt.Sprintf("upstream for model %q answered something that is not a Messages API answer: %v", x.out.Model.Name, err))
		}
		body = chat
	}
	out, _ := x.finishJSON(body, true)
	if x.responsesReq != nil {
		r, err := translate.ChatToResponse(out, x.responsesReq)
		if err != nil {
			return fail("the backend's answer could not be given as a response: " + err.Error())
		}
		out = r
	}
	return out, 0
}

// finishJSON records a complete non-streamed answer (TTFT is the whole
// answer, TPOT the upstream latency per completion token, as the gateway
// measures them) and, when splice is set, returns it with routing_metadata.
func (x *exchange) finishJSON(body []byte, splice bool) ([]byte, bool) {
	m := x.out.Model
	x.s.metrics.TTFT(m.Name, time.Since(x.start))
	a := dataplane.ParseAnswer(body)
	if a.Usage != nil {
		x.s.metrics.Usage(m.Name, m.Pricing, *a.Usage)
		x.s.metrics.TPOT(m.Name, time.Since(x.forwarded), a.Usage.CompletionTokens)
	}
	x.usageDone = true
	x.phase = phaseDone
	x.markComplete()
	if a.Object && x.s.plane.WantsResponse(&x.out) {
		// The decision's plugins have a response phase (a response cache
		// storing the answer, say): it runs beside the stream, as on the
		// gateway, so that Envoy is not kept waiting, on its own copy.
		out, st, ctx := x.out, x.status, context.WithoutCancel(x.ctx)
		if st == 0 {
			st = http.StatusOK
		}
		answer := bytes.Clone(body)
		go x.s.plane.ResponsePhase(ctx, &out, st, answer)
	}
	if !splice || !a.Object {
		return body, false
	}
	return dataplane.WithRoutingMetadata(body, a, x.out.Routing.Metadata()), true
}

func (x *exchange) responseTrailers() error {
	switch x.phase {
	case phaseResponseBody:
		// The answer ended with trailers instead of an end-of-stream body.
		if x.sse {
			x.recordUsage()
		} else if !x.respTooBig && x.respBuf != nil {
			x.finishJSON(x.respBuf, false)
		}
		x.phase = phaseDone
		x.markComplete()
		if x.sse {
			err := x.send(trailersResponse(true))
			x.endStream(x.doneSeen && err == nil)
			return err
		}
	case phaseStart, phaseRequestBody:
		return x.protocolError("response_trailers", "response trailers arrived while the request was "+phaseNames[x.phase])
	case phaseForwarded:
		x.phase = phaseDone
		x.markComplete()
	}
	return x.send(trailersResponse(true))
}

// ---- replies -----------------------------------------------------------------

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

// ---- accounting ----------------------------------------------------------------

func (x *exchange) markComplete() {
	if !x.complete {
		x.complete = true
		x.end = time.Now()
	}
}

// stray counts a message that arrived where it was not expected but can be
// answered safely.
func (x *exchange) stray(message string) {
	x.s.unexpected.WithLabelValues(message, "ignored").Inc()
	x.s.log.Debug("unexpected ext_proc message, let through", "request_id", x.id, "message", message, "phase", phaseNames[x.phase])
}

// protocolError ends the stream on a message that cannot be answered
// without risking an unrouted request reaching a backend. Envoy then fails
// the request (or, with failure_mode_allow, lets it through: the operator's
// explicit choice).
func (x *exchange) protocolError(message, detail string) error {
	x.s.unexpected.WithLabelValues(message, "rejected").Inc()
	x.s.log.Warn("ext_proc protocol violation: ending the stream", "request_id", x.id, "message", message,
		"phase", phaseNames[x.phase], "detail", detail)
	x.failed(metrics.ReasonUnknown)
	return status.Errorf(codes.FailedPrecondition, "junction ext_proc: %s (phase %s)", detail, phaseNames[x.phase])
}

// failed counts a request Junction could not finish: Envoy answers it 500
// unless failure_mode_allow lets it through.
func (x *exchange) failed(reason string) {
	x.s.metrics.Error(x.model, reason)
	x.status = http.StatusInternalServerError
	x.markComplete()
}

// finish records the request once its stream is over: router_requests_total
// and its duration, a cancellation when the stream ended before the answer
// did, and the log line.
func (x *exchange) finish() {
	if !x.seen || x.phase == phasePassthrough || x.recorded {
		return
	}
	x.recorded = true
	if !x.complete && !x.cancelled {
		// The stream ended before the answer did: the client went away (or
		// the upstream broke off, which Envoy reports the same way).
		x.cancelled = true
		x.s.metrics.Error(x.model, metrics.ReasonCancellation)
	}
	x.recordUsage()
	x.endStream(false) // a stream that ended before its answer did
	st := x.status
	switch {
	case x.cancelled:
		st = dataplane.StatusClientClosed
	case st == 0:
		st = http.StatusOK
	}
	end := x.end
	if end.IsZero() {
		end = time.Now()
	}
	d := end.Sub(x.start)
	x.s.metrics.Request(x.endpoint, x.category, st, d)
	if !x.s.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := []any{"request_id", x.id, "endpoint", x.endpoint, "status", st, "duration_ms", d.Milliseconds(), "via", "ext_proc"}
	if x.out.Result != nil {
		attrs = append(attrs, "decision", x.category, "model", x.out.Result.Model, "reason_code", x.out.Result.ReasonCode)
	}
	x.s.log.Info("request", attrs...)
}
