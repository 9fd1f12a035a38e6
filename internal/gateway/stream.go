package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/translate"
)

// maxEventBytes bounds one SSE event; chat chunks are a few hundred bytes.
const maxEventBytes = 8 << 20

var errEventTooLarge = fmt.Errorf("an SSE event exceeds %d bytes", maxEventBytes)

var doneEvent = []byte("data: [DONE]\n\n")

// relayStream relays an SSE answer event by event, flushing after each so the
// client sees tokens as the backend produces them. It observes TTFT at the
// first event, takes usage from the usage chunk (dropping that chunk when only
// the gateway asked for it), ends the stream with data: [DONE] even when the
// backend closed without it, and reports a stream that breaks mid-way as an
// error event (the status line is already out).
func (x *exchange) relayStream(rt *dataplane.Routing, c *upstreamCall, resp *http.Response) {
	h := x.w.Header()
	copyUpstreamHeaders(h, resp.Header)
	rt.SetClientHeaders(h)
	h.Set(dataplane.HeaderRequestID, x.id)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell nginx-style proxies in front not to buffer
	x.w.WriteHeader(resp.StatusCode)
	x.w.Flush()

	var (
		usage    *cost.Usage
		first    time.Time
		recorded bool
	)
	// record meters the stream once: before the final [DONE] goes out (so the
	// metrics are complete when the client sees the end), or on the way out
	// of a broken stream.
	record := func() {
		if recorded || usage == nil {
			return
		}
		recorded = true
		x.s.metrics.Usage(c.model.Name, c.model.Pricing, *usage)
		if !first.IsZero() {
			x.s.metrics.TPOT(c.model.Name, time.Since(first), usage.CompletionTokens)
		}
	}
	defer record()
	// complete: every event, the final [DONE] included, was written to the
	// client. Only then is the answer given to the response phase, after
	// its last byte went out.
	complete := false
	if x.onStreamEnd != nil {
		defer func() { x.onStreamEnd(resp.StatusCode, complete && x.r.Context().Err() == nil) }()
	}

	// relay writes one event to the client; end is true when the stream is
	// over (its [DONE] was written, or the client went away).
	relay := func(raw, data []byte) (end bool) {
		done := false
		if data != nil {
			x.streamAnswer.Chunk(data)
			if string(data) == "[DONE]" {
				done = true
				record()
			} else {
				if first.IsZero() {
					first = time.Now()
					x.s.metrics.TTFT(c.model.Name, first.Sub(x.start))
				}
				if u, usageOnly := dataplane.ChunkUsage(data); u != nil {
					usage = u
					if usageOnly && c.dropUsage {
						return false
					}
				}
			}
		}
		if _, err := x.w.Write(raw); err != nil {
			x.clientGone()
			return true
		}
		x.w.Flush()
		complete = done
		return done
	}
	var tr *translate.AnthropicStream
	if c.anthropic {
		tr = translate.NewAnthropicStream(time.Now().Unix())
	}
	var event []byte
	rd := newSSEReader(resp.Body)
	for {
		raw, data, err := rd.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			x.streamBroke(c, err)
			return
		}
		c.timer.Reset(c.timeout) // the backend is alive: the timeout bounds gaps
		if tr == nil {
			if relay(raw, data) {
				return
			}
			continue
		}
		if data == nil {
			continue // a comment or an event: line alone; the data says the type
		}
		chunks, err := tr.Event(data)
		if err != nil {
			x.streamBroke(c, err)
			return
		}
		for _, chunk := range chunks {
			event = append(append(append(event[:0], "data: "...), chunk...), '\n', '\n')
			if relay(event, chunk) {
				return
			}
		}
		if tr.Finished() {
			break // an error event ended the stream
		}
	}
	record()
	if _, err := x.w.Write(doneEvent); err != nil {
		x.clientGone()
		return
	}
	x.w.Flush()
	complete = true // the stream ended without the upstream's [DONE]: StreamEnded tells
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
		e = dataplane.NewError(http.StatusGatewayTimeout, dataplane.TypeUpstreamTimeout,
			fmt.Sprintf("stream from upstream for model %q at %s sent nothing for %s", c.model.Name, where, c.timeout))
	}
	x.error(reason)
	b := e.JSON()
	// openai clients turn a data event with an "error" member into an error.
	_, _ = fmt.Fprintf(x.w, "data: %s\n\n", b)
	x.w.Flush()
}

// sseReader splits a text/event-stream into events.
type sseReader struct {
	br    *bufio.Reader
	event []byte // the current event as relayed: its lines with \n, then \n
	data  []byte // the current event's data lines joined by \n
	long  []byte // a line longer than br's buffer
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10)}
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
