package extproc

import (
	"net/http"
	"strconv"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/junction-router/junction/internal/dataplane"
)

// The response gate behind Envoy: a response check's verdict headers as
// header mutations, and held streams (hold_stream): a streamed answer whose
// decision holds it is collected without releasing a byte, checked whole
// (dataplane.Exchange.CheckStream), and released, replaced or withheld at
// its end, as the standalone gateway does.
//
// How Envoy is made to hold it: the answer's headers are answered with a
// mode override to BUFFERED, so Envoy keeps the headers and the whole body
// until Junction's one body answer, which then carries the verdict headers
// and, for a block, the status and content type. An Envoy that ignores the
// override (allow_mode_override off) streams the body: each piece is
// answered with a mutation that clears it, and the last carries the checked
// whole (its headers went out with 200, so a block is an error event). In
// full duplex each piece is held unanswered and the whole is answered once.

// maxHeldEvents bounds the events a held stream keeps, as the gateway's
// held relay does.
const maxHeldEvents = 2 * dataplane.MaxResponsePhaseBody

// heldMode is the mode override that makes Envoy buffer a held stream's
// body, or nil where it already does or runs full duplex (pieces are held
// unanswered there).
func (x *exchange) heldMode() *filterv3.ProcessingMode {
	if x.proto != nil {
		if cur := x.proto.GetResponseBodyMode(); cur == modeBuffered || cur == modeFullDuplex {
			return nil
		}
	}
	return &filterv3.ProcessingMode{ResponseBodyMode: modeBuffered}
}

// heldStreamBody takes one piece of a held stream: its events go through
// the data plane as the client would get them, kept; nothing is released
// until the last piece, which carries what the check decided.
func (x *exchange) heldStreamBody(b *extprocv3.HttpBody) error {
	chunk, eos := b.GetBody(), b.GetEndOfStream()
	x.respPieces++
	if !x.respTooBig {
		_ = x.scan.Feed(chunk, func(ev, data []byte) bool {
			x.heldEvent(ev, data)
			return !x.respTooBig
		})
	}
	if !eos {
		if x.respFullDuplex() {
			x.respHeld = true
			return nil
		}
		return x.sendReply(x.bodyResponse(true).clearBody())
	}
	return x.releaseHeld()
}

// heldEvent keeps what the client gets of one event of a held stream.
func (x *exchange) heldEvent(ev, data []byte) {
	out := x.upstreamEvent(nil, ev, data, true)
	if len(x.respBuf)+len(out) > maxHeldEvents {
		x.respTooBig, x.respBuf = true, nil
		x.dp.StreamTooLarge()
		return
	}
	x.respBuf = append(x.respBuf, out...)
}

// heldStreamTrailers ends a held stream that ended with trailers instead of
// an end-of-stream body: in full duplex the whole goes out as a streamed
// body; otherwise the pieces went out cleared and nothing can follow them,
// so the stream is withheld (the check runs, the client gets no answer).
func (x *exchange) heldStreamTrailers() error {
	if x.respFullDuplex() {
		if err := x.releaseHeld(); err != nil {
			return err
		}
		return x.send(trailersResponse(true))
	}
	x.dp.RecordUsage()
	x.dp.CheckStream(false)
	x.phase = phaseDone
	x.markComplete()
	return x.send(trailersResponse(true))
}

// releaseHeld checks the held stream and answers the last piece with the
// stream as the backend sent it, the check's replacement or its error.
func (x *exchange) releaseHeld() error {
	if !x.respTooBig {
		if ev, data, ok := x.scan.Flush(); ok {
			x.heldEvent(ev, data)
		}
	}
	x.dp.RecordUsage()
	complete := x.dp.Done()
	held := x.respBuf
	x.respBuf = nil
	if !complete && !x.respTooBig {
		held = x.dp.EndStream(held, true)
	}
	x.phase = phaseDone
	x.markComplete()
	// Envoy holds the headers only when it read the body whole.
	whole := x.respPieces == 1 && !x.respFullDuplex() && x.heldHeaders
	a := x.dp.CheckStream(complete)
	var m mutation
	x.gateMutation(&m) // the check's verdict headers, known now
	out := held
	if a != nil {
		out = a.Body
		if a.Status != 0 && a.Status != http.StatusOK {
			x.status = a.Status
		}
		switch {
		case whole:
			m.put(":status", strconv.Itoa(a.Status), false)
			if ct := a.Header.Get("Content-Type"); ct != "" {
				m.put("content-type", ct, false)
			}
			m.remove = append(m.remove, "cache-control", "x-accel-buffering")
		case a.Header.Get("Content-Type") == "application/json":
			// The stream's headers went out: the error is an error event.
			out = append(append(append([]byte("data: "), a.Body...), "\n\n"...), "data: [DONE]\n\n"...)
		}
	}
	resp := x.bodyReply(true, out, true, true)
	if whole {
		m.put("content-length", strconv.Itoa(len(out)), false)
		resp.headers(&m)
	}
	return x.sendReply(resp)
}

// gateMutation adds the response checks' verdict headers (and other header
// edits of theirs) to m.
func (x *exchange) gateMutation(m *mutation) {
	h := http.Header{}
	x.dp.GateHeaders(h)
	for k, vs := range h {
		for i, v := range vs {
			m.put(lowerKey(k), v, i > 0)
		}
	}
}

// gateHeaders adds to m what a non-streamed answer read whole gets of the
// response checks: their verdict headers, and for an answer a check
// withheld its error's status and content type.
func (x *exchange) gateHeaders(m *mutation) {
	x.gateMutation(m)
	if x.gateStatus != 0 {
		m.put(":status", strconv.Itoa(x.gateStatus), false)
		m.put("content-type", "application/json", false)
		x.status = x.gateStatus
	}
}
