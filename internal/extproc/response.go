package extproc

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
)

// The response half of an exchange: the answer's headers, body pieces and
// trailers as Envoy sends them (mode overrides, held or streamed bodies),
// fed through the data plane (dataplane.Exchange: translation, usage,
// metrics, the response phase) and given back as mutations.

func (x *exchange) responseHeaders(h *extprocv3.HttpHeaders) error {
	switch x.phase {
	case phaseForwarded:
	case phasePassthrough:
		return x.sendReply(x.headersResponse(true, nil, false))
	case phaseRequestBody:
		// Envoy answered before Junction had the whole request (its own
		// buffer limit, a timeout, an upstream that answered early): count it
		// with that status and let it through.
		x.status, _ = responseStatus(h.GetHeaders())
		x.phase = phaseDone
		x.quiet = true
		x.markComplete()
		m := x.answerMutation(answerHeadersMut)
		m.put("x-request-id", x.id, false)
		return x.sendReply(x.headersResponse(true, m, false))
	case phaseDone:
		if !x.quiet {
			x.stray("response_headers")
		}
		return x.sendReply(x.headersResponse(true, nil, false))
	default:
		return x.protocolError("response_headers", "response headers arrived while the request was "+phaseNames[x.phase])
	}
	st, ct := responseStatus(h.GetHeaders())
	x.status = st
	x.dp.UpstreamStatus(st)
	m := x.answerMutation(answerHeadersMut)
	x.dp.Out.Routing.EachClientHeader(func(k, v string) { m.put(lowerKey(k), v, false) })
	m.put("x-request-id", x.id, false) // the client's id, not the backend's
	x.sse = x.dp.Out.Stream && st < 400 && dataplane.IsEventStream(ct)
	if x.sse {
		m.put("cache-control", "no-cache", false)
		m.put("x-accel-buffering", "no", false) // tell nginx-style proxies in front not to buffer
	}
	translating := x.dp.Translating()
	// held: the switch below holds the stream for a response check
	// (x.sse rules out an error status).
	held := x.sse && !h.GetEndOfStream() && st >= 200 && x.dp.HoldsStream()
	if !h.GetEndOfStream() && (held || translating && (st/100 == 2 || (st >= 400 && x.dp.Anthropic()))) {
		// The body changes length as it is translated, or as a held
		// stream's pieces are cleared (read whole, the last answer sets it
		// again): decided before the reply takes the mutation.
		m.remove = append(m.remove, "content-length")
	}
	resp := x.headersResponse(true, m, false)
	switch {
	case h.GetEndOfStream():
		x.phase = phaseDone
		x.markComplete()
	case st >= 400 && x.dp.Anthropic():
		// A Messages API error: read whole, given to the client in the
		// OpenAI shape.
		x.phase = phaseResponseBody
		x.errBody = true
		resp.mode = x.responseMode(modeBuffered)
	case st >= 400 || st < 200:
		// An error is relayed as the backend sent it: its body is not needed.
		x.phase = phaseDone
		x.quiet = true
		x.markComplete()
		resp.mode = x.responseMode(modeNone)
	case held:
		// A response check holds the stream until it is checked (held.go);
		// content-length is removed above.
		x.phase = phaseResponseBody
		x.held, x.heldHeaders = true, true
		x.dp.StartStream()
		resp.mode = x.heldMode()
	case x.sse:
		x.phase = phaseResponseBody
		x.rewriteSSE = x.dp.Out.DropUsage || translating
		x.dp.StartStream()
		resp.mode = x.responseMode(modeStreamed)
	default:
		x.phase = phaseResponseBody
		x.holdJSON = translating
		resp.mode = x.responseMode(modeBuffered)
	}
	return x.sendReply(resp)
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
		x.sse = x.dp.Out.Stream && looksLikeEvents(b.GetBody())
		translating := x.dp.Translating()
		x.rewriteSSE = x.sse && (x.dp.Out.DropUsage || translating)
		x.holdJSON = !x.sse && translating
		if x.sse {
			x.dp.StartStream()
			x.held = x.dp.HoldsStream()
		}
		x.phase = phaseResponseBody
	case phasePassthrough:
		return x.sendReply(x.continueBody(b, true))
	case phaseDone:
		if !x.quiet {
			x.stray("response_body")
		}
		return x.sendReply(x.continueBody(b, true))
	default:
		return x.protocolError("response_body", "a response body arrived while the request was "+phaseNames[x.phase])
	}
	if x.held {
		return x.heldStreamBody(b)
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
		x.dp.StreamTooLarge()
	default:
		_ = x.scan.Feed(chunk, func(ev, data []byte) bool {
			out = x.upstreamEvent(out, ev, data, rewrite)
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
			if !rewrite && !x.dp.Done() && len(tail) > 0 {
				// Close the unfinished last event before [DONE] is added.
				out = append(append([]byte(nil), out...), '\n')
				if tail[len(tail)-1] != '\n' {
					out = append(out, '\n')
				}
				changed = true
			}
			if ev, data, ok := x.scan.Flush(); ok {
				out = x.upstreamEvent(out, ev, data, rewrite)
			}
		}
		x.dp.RecordUsage()
		if !x.dp.Done() {
			if !rewrite {
				out = append([]byte(nil), out...) // out is Envoy's piece
			}
			out = x.dp.EndStream(out, rewrite)
			changed = true
		}
		x.phase = phaseDone
		x.markComplete()
		err := x.sendReply(x.bodyReply(true, out, changed, eos))
		x.dp.StreamEnded(x.ctx, x.status, err == nil)
		return err
	}
	return x.sendReply(x.bodyReply(true, out, changed, eos))
}

// upstreamEvent handles one event as the backend sent it (see
// dataplane.Exchange.Event). A Messages API event that cannot be translated
// ends the stream with an error chunk and [DONE].
func (x *exchange) upstreamEvent(out, ev, data []byte, rewrite bool) []byte {
	out, err := x.dp.Event(out, ev, data, rewrite)
	if err == nil {
		return out
	}
	x.dp.Error(metrics.ReasonUpstream5xx)
	chunks := [][]byte{dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream,
		"the backend's event stream could not be translated: "+err.Error()).Body(), []byte("[DONE]")}
	for _, c := range chunks {
		raw := append(append(append([]byte(nil), "data: "...), c...), '\n', '\n')
		out = x.dp.ChatEvent(out, raw, c)
	}
	return out
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
		if !x.respFullDuplex() {
			// Read whole: Envoy still holds the headers, so the response
			// checks' verdict headers (and a block's status) go with them.
			m := x.answerMutation(answerBodyMut)
			if changed {
				m.put("content-length", strconv.Itoa(len(out)), false)
			}
			x.gateHeaders(m)
			resp.headers(m)
		}
		return x.sendReply(resp)
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
			return x.sendReply(x.bodyReply(true, out, true, true))
		}
		out := chunk
		if x.respHeld {
			out = append(x.respBuf, chunk...)
			x.respHeld, x.respBuf = false, nil
		}
		if eos {
			x.finishJSON(nil, false)
		}
		return x.sendReply(x.bodyReply(true, out, true, eos))
	}
	if eos {
		if x.respTooBig {
			x.finishJSON(nil, false)
		} else {
			x.finishJSON(x.respBuf, false)
		}
		x.respBuf = nil
	}
	return x.sendReply(x.bodyReply(true, chunk, false, eos))
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
		return x.sendReply(x.bodyResponse(true).clearBody())
	}
	out, st := x.translateAnswer(x.respBuf)
	x.respBuf = nil
	resp := x.bodyReply(true, out, true, true)
	if x.respPieces == 1 && !x.respFullDuplex() {
		// Read whole (BUFFERED): Envoy still holds the answer's headers.
		m := x.answerMutation(answerBodyMut)
		m.put("content-length", strconv.Itoa(len(out)), false)
		if st != 0 {
			m.put(":status", strconv.Itoa(st), false)
		}
		x.gateMutation(m)
		resp.headers(m)
	}
	return x.sendReply(resp)
}

// translateAnswer turns a complete answer into what the client asked for:
// a Messages API error or message into chat terms, a chat answer into a
// Responses API object; the chat answer is metered and gains
// routing_metadata on the way. status is the answer's new status, 0 when it
// stays.
func (x *exchange) translateAnswer(body []byte) ([]byte, int) {
	x.phase = phaseDone
	x.markComplete()
	if x.respTooBig {
		x.dp.Error(metrics.ReasonUpstream5xx)
		x.status = http.StatusBadGateway
		return dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream,
			fmt.Sprintf("the backend's answer exceeds %d bytes and cannot be translated", dataplane.MaxUpstreamBody)).Body(), http.StatusBadGateway
	}
	if x.errBody {
		return x.dp.ErrorBody(body), 0
	}
	out, _, e := x.dp.JSONAnswer(body, false)
	if e != nil {
		x.status = e.Status
		return e.Body(), e.Status
	}
	x.dp.Answered(x.ctx, x.status)
	return out, 0
}

// finishJSON ends a non-streamed answer that is not translated: read whole
// (splice), it gains routing_metadata (changed); relayed in pieces, it is
// only metered. Either way the response phase has it.
func (x *exchange) finishJSON(body []byte, splice bool) ([]byte, bool) {
	x.phase = phaseDone
	x.markComplete()
	changed := false
	if splice {
		out, ch, e := x.dp.JSONAnswer(body, false) // nothing is translated: an error is a response check's
		if e != nil {
			// A response check withheld the answer: the client gets the
			// check's error as the body, and its status where Envoy still
			// holds the headers (gateHeaders).
			x.gateStatus = e.Status
			return e.Body(), true
		}
		body, changed = out, ch
	} else {
		x.dp.RecordAnswer(body)
	}
	x.dp.Answered(x.ctx, x.status)
	return body, changed
}

func (x *exchange) responseTrailers() error {
	switch x.phase {
	case phaseResponseBody:
		if x.held {
			return x.heldStreamTrailers()
		}
		// The answer ended with trailers instead of an end-of-stream body.
		if x.sse {
			x.dp.RecordUsage()
		} else if !x.respTooBig && x.respBuf != nil {
			x.finishJSON(x.respBuf, false)
		}
		x.phase = phaseDone
		x.markComplete()
		if x.sse {
			err := x.send(trailersResponse(true))
			x.dp.StreamEnded(x.ctx, x.status, err == nil)
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
