package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
)

// maxEventBytes bounds one SSE event; chat chunks are a few hundred bytes.
const maxEventBytes = 8 << 20

var errEventTooLarge = fmt.Errorf("an SSE event exceeds %d bytes", maxEventBytes)

// relayStream relays an SSE answer event by event, flushing after each so the
// client sees tokens as the backend produces them. Each event goes through the
// data plane (dataplane.Exchange.Event: TTFT, usage, the usage chunk dropped
// when only Junction asked for it, translation), which also ends the stream
// with data: [DONE] when the backend closed without it; a stream that breaks
// mid-way is reported as an error event (the status line is already out).
func (x *exchange) relayStream(rt *dataplane.Routing, c *upstreamCall, resp *http.Response) {
	events := newStreamEvents(resp.Body)
	x.relayStreamFrom(rt, c, resp, &events)
}

// relayStreamFrom is relayStream for a stream the caller began reading
// (events.readAhead).
func (x *exchange) relayStreamFrom(rt *dataplane.Routing, c *upstreamCall, resp *http.Response, events *streamEvents) {
	if x.dp.HoldsStream() {
		x.relayHeldStream(rt, c, resp, events)
		return
	}
	h := x.w.Header()
	copyUpstreamHeaders(h, resp.Header)
	rt.SetClientHeaders(h)
	h.Set(dataplane.HeaderRequestID, x.id)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell nginx-style proxies in front not to buffer
	x.w.WriteHeader(resp.StatusCode)
	x.w.Flush()

	x.dp.StartStream()
	// delivered: every event, the final [DONE] included, was written to the
	// client. Only then is the answer given to the response phase, after
	// its last byte went out.
	delivered := false
	defer func() { x.dp.StreamEnded(x.r.Context(), resp.StatusCode, delivered && x.r.Context().Err() == nil) }()
	// A broken stream is metered on the way out, after its usage chunk.
	defer x.dp.RecordUsage()

	// write relays what the exchange gave for one event; false: the client
	// went away.
	write := func(out []byte) bool {
		if len(out) == 0 {
			return true // a dropped usage chunk, a translation with nothing to say yet
		}
		if _, err := x.w.Write(out); err != nil {
			x.clientGone()
			return false
		}
		x.w.Flush()
		return true
	}
	for {
		out, ok, err := x.nextEvent(c, events)
		if err != nil {
			x.streamBroke(c, err)
			return
		}
		if !ok {
			break
		}
		if !write(out) {
			return
		}
	}
	if x.dp.Done() {
		delivered = true
		return
	}
	// The stream ended without the upstream's [DONE]: one is added, and
	// StreamEnded does not count it as delivered whole.
	if write(x.dp.EndStream(events.out[:0], true)) {
		delivered = true
	}
}

// streamBroke ends a stream whose upstream failed after the answer began.
func (x *exchange) streamBroke(c *upstreamCall, err error) {
	if x.r.Context().Err() != nil {
		x.clientGone()
		return
	}
	x.s.ups.health.Failure(c.key)
	where := dataplane.DisplayURL(c.target)
	e := dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream,
		fmt.Sprintf("stream from upstream for model %q at %s broke off: %v", c.model.Name, where, err))
	reason := metrics.ReasonUpstream5xx
	if errors.Is(context.Cause(c.ctx), errUpstreamTimeout) {
		reason = metrics.ReasonTimeout
		msg := fmt.Sprintf("stream from upstream for model %q at %s sent nothing for %s", c.model.Name, where, c.timeout)
		var te *upstreamTimeoutError
		if errors.As(context.Cause(c.ctx), &te) && te.what == "total_timeout" {
			msg = fmt.Sprintf("stream from upstream for model %q at %s was cut: %v", c.model.Name, where, te)
		}
		e = dataplane.NewError(http.StatusGatewayTimeout, dataplane.TypeUpstreamTimeout, msg)
	}
	x.error(reason)
	// openai clients turn a data event with an "error" member into an error.
	_, _ = x.w.Write(x.dp.ErrorEvent(nil, e))
	x.w.Flush()
}

// streamEvents is the read loop of both relays, the live one and the held
// one (exchange.nextEvent): it reads the upstream's events and passes each
// through the data plane (dataplane.Exchange.Event), which says what the
// client gets of it. The relays differ only in what they do with that.
// The reader is held by value and the exchange and call are passed to
// nextEvent rather than kept: beside the event buffers, which the data
// plane may keep, escape analysis would move them to the heap too.
type streamEvents struct {
	rd        sseReader
	raw, data []byte // an event read ahead (readAhead; raw nil: none)
	out       []byte // what the data plane made of the last event, reused
	ended     bool   // the last event ended the stream
}

func newStreamEvents(body io.Reader) streamEvents {
	return streamEvents{rd: newSSEReader(body)}
}

// readAhead reads the stream's first event, for nextEvent to hand on: the
// stream is known to have begun (or not) before the relay commits to it.
func (s *streamEvents) readAhead() error {
	var err error
	s.raw, s.data, err = s.rd.next()
	return err
}

// nextEvent returns what the client is to get of the upstream's next event
// of s (empty for a dropped usage chunk or a translation with nothing to
// say yet), valid until the next call; false once the stream ended: its
// [DONE] went through (Exchange.Done), an error event ended it
// (StreamFinished) or the upstream closed it. An error means the stream
// broke off: the upstream failed, or sent an event the data plane could
// not translate.
func (x *exchange) nextEvent(c *upstreamCall, s *streamEvents) ([]byte, bool, error) {
	if s.ended {
		return nil, false, nil
	}
	raw, data := s.raw, s.data
	s.raw, s.data = nil, nil
	if raw == nil {
		var err error
		raw, data, err = s.rd.next()
		if err == io.EOF {
			s.ended = true
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	c.timer.Reset(c.timeout) // the backend is alive: the timeout bounds gaps
	out, err := x.dp.Event(s.out[:0], raw, data, true)
	s.out = out
	if err != nil {
		return nil, false, err
	}
	s.ended = x.dp.Done() || x.dp.StreamFinished()
	return out, true, nil
}

// sseReader splits a text/event-stream into events.
type sseReader struct {
	br    *bufio.Reader
	event []byte // the current event as relayed: its lines with \n, then \n
	data  []byte // the current event's data lines joined by \n
	long  []byte // a line longer than br's buffer
}

func newSSEReader(r io.Reader) sseReader {
	return sseReader{br: bufio.NewReaderSize(r, 32<<10)}
}

// next returns one event and its data (nil when it has no data line, e.g. a
// comment used as keep-alive). Both are valid until the next call. A final
// event without its blank line is returned whole; then io.EOF.
func (s *sseReader) next() (event, data []byte, err error) {
	s.event, s.data = s.event[:0], s.data[:0]
	hasData, lines := false, 0
	for {
		line, err := s.line()
		if err == io.EOF && lines > 0 {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if len(line) == 0 {
			if lines == 0 {
				continue // blank lines between events
			}
			break
		}
		lines++
		s.event = append(append(s.event, line...), '\n')
		if len(s.event) > maxEventBytes {
			return nil, nil, errEventTooLarge
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v, _ = bytes.CutPrefix(v, []byte(" "))
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, v...)
			hasData = true
		}
	}
	s.event = append(s.event, '\n')
	if !hasData {
		return s.event, nil, nil
	}
	return s.event, s.data, nil
}

// line reads one line without its \n or \r\n.
func (s *sseReader) line() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.br.ReadSlice('\n')
			s.long = append(s.long, line...)
			if len(s.long) > maxEventBytes {
				return nil, errEventTooLarge
			}
		}
		line = s.long
	}
	if err != nil && !(err == io.EOF && len(line) > 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, nil
}

// maxHeldStream bounds what a held stream keeps of the events it will
// relay (they are the assembled answer's size plus the SSE framing).
const maxHeldStream = 2 * dataplane.MaxResponsePhaseBody

// relayHeldStream relays a streamed answer a response check asked to hold
// (hold_stream): every event is read and kept, nothing is written until the
// whole answer has been checked (dataplane.Exchange.CheckStream), and then
// either the held events go out or the check's answer does (a block's
// error, a redacted stream). The client waits for the whole answer: that is
// the price of checking it before release. A stream that breaks off is
// answered as an error with its own status, since no status line went out.
func (x *exchange) relayHeldStream(rt *dataplane.Routing, c *upstreamCall, resp *http.Response, events *streamEvents) {
	x.dp.StartStream()
	defer x.dp.RecordUsage()
	var held []byte
	complete := false
	for {
		out, ok, err := x.nextEvent(c, events)
		if err != nil {
			x.heldStreamBroke(rt, c, err)
			return
		}
		if !ok {
			complete = x.dp.Done()
			break
		}
		if len(held)+len(out) > maxHeldStream {
			x.dp.StreamTooLarge()
			break
		}
		held = append(held, out...)
	}
	if !complete && !x.dp.Done() {
		held = append(held, x.dp.EndStream(nil, true)...)
	}
	if a := x.dp.CheckStream(complete); a != nil {
		rt.SetClientHeaders(x.w.Header())
		x.answer(a)
		return
	}
	h := x.w.Header()
	copyUpstreamHeaders(h, resp.Header)
	rt.SetClientHeaders(h)
	x.dp.GateHeaders(h)
	h.Set(dataplane.HeaderRequestID, x.id)
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(resp.StatusCode)
	if _, err := x.w.Write(held); err != nil {
		x.clientGone()
		return
	}
	x.w.Flush()
}

// heldStreamBroke answers a held stream whose upstream failed: nothing went
// to the client yet, so it is a plain error answer.
func (x *exchange) heldStreamBroke(rt *dataplane.Routing, c *upstreamCall, err error) {
	x.dp.CheckStream(false) // ends the collector; the answer is not released
	if x.r.Context().Err() != nil {
		x.clientGone()
		return
	}
	x.s.ups.health.Failure(c.key)
	x.fail(rt, metrics.ReasonUpstream5xx, dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream,
		fmt.Sprintf("stream from upstream for model %q at %s broke off before a response check (hold_stream) could release it: %v",
			c.model.Name, dataplane.DisplayURL(c.target), err)))
}
