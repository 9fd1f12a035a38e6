package dataplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/translate"
)

// Exchange is one request's way through the data plane, both halves: the
// request phase's outcome, the protocol translation on both ways (a
// Responses API request, a Messages API backend), reading usage from the
// answer (JSON or event stream), every metric of the request, recorded once
// here, and the response phase (the answer handed to the decision's
// plugins). A front end creates one per request (Plane.NewExchange), feeds
// it the request body, then the answer's status and bytes as its wire
// delivers them, and relays what the exchange gives back. It does no I/O:
// it takes and gives bytes.
//
// An Exchange is used by one goroutine at a time; the response phase it
// starts runs beside the request on copies.
type Exchange struct {
	plane Plane
	start time.Time
	// Out is the request phase's outcome, once Run has run.
	Out Outcome

	category, model string // metric labels

	responses *translate.ResponsesRequest // a Responses API request, translated on the way in
	storeCtx  context.Context             // the request's context without its cancel, for keep
	kept      bool                        // the response went to the response store
	anthropic bool                        // the backend speaks the Messages API
	sent      time.Time                   // when the request went upstream

	// The answer.
	first        time.Time // first streamed token
	usage        *cost.Usage
	usageDone    bool
	usedTokens   int64  // prompt + completion tokens of the answer's usage
	usedKnown    bool   // the answer reported usage
	done         bool   // [DONE] was seen or added: nothing more is relayed
	upstreamDone bool   // that [DONE] came from the backend (EndStream did not add it)
	respBody     []byte // a complete answer kept for the response phase
	// The response gate (gate.go): the phase ran before the answer was
	// released; its header edits; whether it withheld the answer.
	gateRan     bool
	gateHeader  []plugin.HeaderEdit
	gateReplace *plugin.Immediate
	withheld    bool
	stream      *StreamAnswer
	streamEnded bool
	aStream     *translate.AnthropicStream
	rStream     *translate.ResponsesStream

	// trace is what the model call's span reports (see Trace); nil when
	// it does not record.
	trace *answerTrace
}

// NewExchange starts one request received at start. The exchange runs the
// plane's plugins; UsePlugins changes them for a front end whose runner can
// change between requests.
func (p *Plane) NewExchange(start time.Time) Exchange {
	return Exchange{plane: *p, start: start, category: metrics.CategoryDefault, model: metrics.UnknownModel}
}

// UsePlugins makes the exchange run its decision's plugins with r (nil:
// none, each reported not_run).
func (x *Exchange) UsePlugins(r plugin.Runner) { x.plane.plugins = r }

// Start is when the front end received the request.
func (x *Exchange) Start() time.Time { return x.start }

// Category and Model are the request's metric labels: its decision (or
// default) and its model (or unknown), once routed.
func (x *Exchange) Category() string { return x.category }

// Model: see Category.
func (x *Exchange) Model() string { return x.model }

// Routed labels the request with a routing decision (Run does; a front end
// that recovered a RoutedPanic does too).
func (x *Exchange) Routed(res *engine.Result) {
	x.category, x.model = metrics.Category(res), metrics.ModelLabel(res)
}

// Error counts one llm_request_errors_total for the request's model.
func (x *Exchange) Error(reason string) { x.plane.metrics.Error(x.model, reason) }

// Record counts the request (router_requests_total and its duration) once
// it is over; status is what the client got (StatusClientClosed when it
// went away).
func (x *Exchange) Record(endpoint string, status int, d time.Duration) {
	x.plane.metrics.Request(endpoint, x.category, status, d)
	x.recordReplay(endpoint, status, d)
	// The rate limits' token estimate gives way to what the answer used;
	// a failed request without usage gives it back.
	x.Out.admission.Settle(context.Background(), time.Now(), x.usedTokens, x.usedKnown, status >= 400 && status != StatusClientClosed)
}

// ResponsesRequest translates a POST /v1/responses body into the chat
// completion the rest of the data plane reads; the answer will be
// translated back. With a response store (Config.Responses),
// previous_response_id's conversation goes in front of the input, and the
// answer is kept when the request asks to store it (OpenAI's default). A
// body that cannot be translated is answered 400 (a, with the headers in
// h) and counted; an unknown previous_response_id is 400
// previous_response_not_found, as OpenAI answers.
func (x *Exchange) ResponsesRequest(ctx context.Context, body []byte, h http.Header) (chatBody []byte, a *Answer) {
	chatBody, req, err := translate.ResponsesToChatFrom(body, x.history(ctx))
	if err != nil {
		x.plane.metrics.Error(metrics.UnknownModel, metrics.ReasonParseError)
		var e *Error
		if !errors.As(err, &e) {
			e = NewError(http.StatusBadRequest, TypeInvalidRequest, err.Error())
			var te *translate.Error
			if errors.As(err, &te) && te.Param != "" {
				e = e.WithParam(te.Param)
			}
		}
		a := ErrorAnswer(e, h)
		if e.Status/100 == 4 {
			noRetry(a)
		}
		return nil, a
	}
	x.responses = req
	x.storeCtx = context.WithoutCancel(ctx)
	return chatBody, nil
}

// Run runs the request phase (Plane.Run) and keeps its outcome in Out. An
// answer given instead of forwarding is already in the client's protocol
// (a Responses API object or events for a Responses request).
func (x *Exchange) Run(ctx context.Context, in *Request) *Outcome {
	x.run(ctx, in)
	out := &x.Out
	if out.Answer != nil {
		if x.responses != nil && out.Answer.Status/100 == 2 {
			stream := IsEventStream(out.Answer.Header.Get("Content-Type"))
			if b, final, err := translate.ResponsesBody(out.Answer.Body, stream, x.responses, time.Now().Unix()); err == nil {
				out.Answer.Body = b
				x.keep(final)
			}
		}
		return out
	}
	if out.Model != nil {
		x.anthropic = IsAnthropic(out.Model.APIFormat)
	}
	return out
}

// run labels the request with its decision as soon as routing decided, even
// when what follows panics (a plugin, say): the front end that recovers
// counts the failure with the decision's labels.
func (x *Exchange) run(ctx context.Context, in *Request) {
	defer func() {
		if x.Out.Result != nil {
			x.Routed(x.Out.Result)
		}
	}()
	x.plane.run(ctx, in, &x.Out)
}

// Forwarded counts the request to its model (llm_model_requests_total) as
// it goes upstream; the answer's latency counts from here.
func (x *Exchange) Forwarded() {
	x.plane.metrics.ModelRequest(x.Out.Model.Name)
	x.sent = time.Now()
}

// Anthropic reports whether the backend speaks the Messages API: its
// answers (errors included) are translated to chat completions.
func (x *Exchange) Anthropic() bool { return x.anthropic }

// Translating reports whether a successful answer changes shape (and so
// length) on its way to the client.
func (x *Exchange) Translating() bool { return x.anthropic || x.responses != nil }

// UpstreamStatus counts an upstream error status (4xx, 5xx) as the
// request's error.
func (x *Exchange) UpstreamStatus(status int) {
	switch {
	case status >= 500:
		x.Error(metrics.ReasonUpstream5xx)
	case status >= 400:
		x.Error(metrics.ReasonUpstream4xx)
	}
}

// ErrorBody is an upstream error answer in the client's terms: a Messages
// API error becomes an OpenAI-style one; others are the same in every
// protocol Junction speaks.
func (x *Exchange) ErrorBody(body []byte) []byte {
	if x.anthropic {
		return translate.AnthropicErrorToChat(body)
	}
	return body
}

// upstreamFailure is the 502 for an answer that cannot be given to the
// client, counted.
func (x *Exchange) upstreamFailure(msg string) *Error {
	x.Error(metrics.ReasonUpstream5xx)
	return NewError(http.StatusBadGateway, TypeUpstream, msg)
}

// JSONAnswer turns a complete successful non-streamed answer into what the
// client receives: translated from the Messages API, metered (RecordAnswer),
// with routing_metadata, translated to a Responses API object. inPlace lets
// it reuse body's memory (the caller owns it and does not read it again).
// changed reports whether the answer is not body as it came. A non-nil
// *Error is an answer that cannot be given (counted): the client gets it,
// 502, instead.
func (x *Exchange) JSONAnswer(body []byte, inPlace bool) (out []byte, changed bool, e *Error) {
	if x.anthropic {
		chat, err := translate.AnthropicToChat(body, time.Now().Unix())
		if err != nil {
			return nil, true, x.upstreamFailure(fmt.Sprintf("upstream for model %q at %s answered something that is not a Messages API answer: %v",
				x.Out.Model.Name, DisplayURL(x.Out.Target), err))
		}
		body, inPlace, changed = chat, true, true
	}
	if x.plane.gated(&x.Out) && !x.gateRan {
		checked, replaced, e := x.checkAnswer(body)
		if e != nil {
			return nil, true, e
		}
		if replaced {
			body, inPlace, changed = checked, true, true
		}
	}
	a := x.RecordAnswer(body)
	if a.Object {
		changed = true
		var md [256]byte
		if inPlace {
			body = SpliceRoutingMetadata(body, a, x.Out.Routing.AppendMetadata(md[:0]))
		} else {
			body = WithRoutingMetadata(body, a, x.Out.Routing.AppendMetadata(md[:0]))
		}
	}
	if x.responses != nil {
		r, err := translate.ChatToResponse(body, x.responses)
		if err != nil {
			return nil, true, x.upstreamFailure("the backend's answer could not be given as a response: " + err.Error())
		}
		body, changed = r, true
		x.keep(r)
	}
	return body, changed, nil
}

// RecordAnswer meters a complete non-streamed chat answer (nil when it was
// too large to read): a non-streamed answer has no observable first token,
// so TTFT is the whole answer and TPOT the upstream latency per completion
// token. A copy is kept for the response phase (Answered) when the
// decision's plugins want it.
func (x *Exchange) RecordAnswer(body []byte) AnswerInfo {
	m := x.Out.Model
	x.plane.metrics.TTFT(m.Name, time.Since(x.start))
	a := ParseAnswer(body)
	if x.trace != nil {
		x.traceJSON(body)
	}
	if a.Usage != nil {
		x.usage = a.Usage // for the decision record
		x.usedTokens, x.usedKnown = a.Usage.PromptTokens+a.Usage.CompletionTokens, true
		x.plane.metrics.Usage(m.Name, m.Pricing, *a.Usage)
		x.plane.metrics.TPOT(m.Name, time.Since(x.sent), a.Usage.CompletionTokens)
	}
	x.usageDone = true
	if a.Object && x.plane.wantsResponse(&x.Out) && !x.gateRan {
		x.respBody = bytes.Clone(body) // the caller may splice into body
	}
	return a
}

// Answered hands the complete non-streamed answer to the decision's
// response-phase plugins, once the client has it: beside the request, so
// the client is not kept waiting (at most maxBeside at once; past that on
// the caller's goroutine), under the plugins' own deadlines rather than the
// client's connection.
func (x *Exchange) Answered(ctx context.Context, status int) {
	body := x.respBody
	if body == nil {
		return
	}
	x.respBody = nil
	if status == 0 {
		status = http.StatusOK
	}
	out, plane := x.Out, x.plane
	plane.runBeside(func() { plane.runResponsePhase(context.WithoutCancel(ctx), &out, status, body) })
}

// StartStream prepares for an event-stream answer: the collector for the
// response phase and the translators the client's protocol needs.
func (x *Exchange) StartStream() {
	x.stream = x.plane.newStreamAnswer(&x.Out)
	now := time.Now().Unix()
	if x.anthropic {
		x.aStream = translate.NewAnthropicStream(now)
	}
	if x.responses != nil {
		x.rStream = translate.NewResponsesStream(x.responses, now)
	}
}

// Event handles one event of a streamed answer as the backend sent it (raw:
// its bytes; data: its data lines, nil for a comment) and, when rewrite is
// set, appends what the client receives to dst: the event itself, or its
// translation (a Messages API event becomes chat chunks; a Responses API
// request gets response.* events), without the usage-only chunk the client
// did not ask for. Without rewrite the front end relays the bytes as they
// came and the exchange only reads them. Nothing is relayed after [DONE].
// An error is a Messages API event that cannot be translated (not counted:
// the front end decides how the stream ends).
func (x *Exchange) Event(dst, raw, data []byte, rewrite bool) ([]byte, error) {
	if x.aStream == nil {
		return x.chatEvent(dst, raw, data, rewrite, true), nil
	}
	if data == nil || x.done {
		return dst, nil
	}
	chunks, err := x.aStream.Event(data)
	if err != nil {
		return dst, err
	}
	for _, c := range chunks {
		ev := append(append(append(make([]byte, 0, len(c)+8), "data: "...), c...), '\n', '\n')
		dst = x.chatEvent(dst, ev, c, true, true)
	}
	return dst, nil
}

// ChatEvent is Event for a chat chunk the front end makes up itself in the
// backend's place (an error event, then [DONE], ending a stream it could not
// translate): it counts as the backend's.
func (x *Exchange) ChatEvent(dst, raw, data []byte) []byte {
	return x.chatEvent(dst, raw, data, true, true)
}

// ErrorEvent appends to dst the event that tells the client a stream broke
// off after its status line went out: e as a data: event (OpenAI clients
// raise an error for one), or the Responses API's error event. It is not
// the backend's: nothing is metered or collected.
func (x *Exchange) ErrorEvent(dst []byte, e *Error) []byte {
	if x.rStream != nil {
		events, err := x.rStream.Chunk(e.JSON())
		if err != nil {
			return dst
		}
		return translate.AppendEvents(dst, events)
	}
	dst = append(dst, "data: "...)
	dst = append(dst, e.JSON()...)
	return append(dst, '\n', '\n')
}

var doneData = []byte("[DONE]")

func (x *Exchange) chatEvent(dst, raw, data []byte, rewrite, upstream bool) []byte {
	if x.done {
		return dst
	}
	if data != nil {
		x.stream.Chunk(data)
		if string(data) == "[DONE]" {
			x.done = true
			x.upstreamDone = upstream
			x.RecordUsage()
		} else {
			if x.first.IsZero() {
				x.first = time.Now()
				x.plane.metrics.TTFT(x.Out.Model.Name, x.first.Sub(x.start))
			}
			if x.trace != nil {
				x.traceChunk(data)
			}
			if u, usageOnly := ChunkUsage(data); u != nil {
				x.usage = u
				if usageOnly && rewrite && x.Out.DropUsage {
					return dst
				}
			}
		}
	}
	if !rewrite {
		return dst
	}
	if x.rStream != nil {
		if data == nil {
			return dst
		}
		events, err := x.rStream.Chunk(data)
		if err != nil {
			return dst // not a chunk: nothing a response stream can say
		}
		if x.rStream.Ended() {
			x.keep(x.rStream.Final()) // before response.completed reaches the client
		}
		return translate.AppendEvents(dst, events)
	}
	return append(dst, raw...)
}

// Done reports whether the stream's [DONE] was seen: nothing more is
// relayed.
func (x *Exchange) Done() bool { return x.done }

// StreamFinished reports whether a translated Messages API stream ended
// (an error event): the front end ends the stream with [DONE].
func (x *Exchange) StreamFinished() bool { return x.aStream != nil && x.aStream.Finished() }

// EndStream ends a stream the backend closed: the usage is metered and,
// unless its [DONE] was seen, one is added (to dst, translated, when
// rewriting; raw otherwise).
func (x *Exchange) EndStream(dst []byte, rewrite bool) []byte {
	x.RecordUsage()
	if x.done {
		return dst
	}
	if rewrite {
		return x.chatEvent(dst, DoneEvent, doneData, true, false)
	}
	x.done = true
	return append(dst, DoneEvent...)
}

// StreamTooLarge marks a stream the front end stopped reading event by event
// (an event past MaxEventBytes): the response phase cannot have it.
func (x *Exchange) StreamTooLarge() { x.stream.TooLarge() }

// RecordUsage meters a stream's usage once: at [DONE], at its end, or when
// it broke off after its usage chunk.
func (x *Exchange) RecordUsage() {
	if x.usageDone || x.usage == nil || x.Out.Model == nil {
		return
	}
	x.usageDone = true
	x.usedTokens, x.usedKnown = x.usage.PromptTokens+x.usage.CompletionTokens, true
	m := x.Out.Model
	x.plane.metrics.Usage(m.Name, m.Pricing, *x.usage)
	// As for a whole answer: the completion latency (since the request went
	// upstream, the first token's wait included) per completion token.
	x.plane.metrics.TPOT(m.Name, time.Since(x.sent), x.usage.CompletionTokens)
}

// StreamEnded hands a collected event stream to the response phase once
// its last event went to the client (delivered: every event reached a
// client still there), beside the request so the client is not kept
// waiting; a stream without the upstream's [DONE], or not delivered, is
// only counted. Once per stream; later calls do nothing.
func (x *Exchange) StreamEnded(ctx context.Context, status int, delivered bool) {
	if x.stream == nil || x.streamEnded {
		return
	}
	x.streamEnded = true
	out, plane, sa := x.Out, x.plane, x.stream
	if status == 0 {
		status = http.StatusOK
	}
	if !delivered || !x.upstreamDone {
		plane.streamEnded(ctx, &out, status, sa, false)
		return
	}
	plane.runBeside(func() { plane.streamEnded(context.WithoutCancel(ctx), &out, status, sa, true) })
}
