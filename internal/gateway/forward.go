package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/recipes"
)

// maxUpstreamBody bounds a non-streamed upstream answer the gateway buffers to
// add routing_metadata. Chat answers are far smaller; a larger one is a broken
// backend, not something to hold in memory.
const maxUpstreamBody = 64 << 20

// errUpstreamTimeout is the cancellation cause when a backend exceeds its
// timeout, to tell it apart from a client that went away.
var errUpstreamTimeout = errors.New("upstream timeout")

// upstreamCall is one request to a backend.
type upstreamCall struct {
	model   *recipes.Model
	ref     *recipes.BackendRef
	key     string
	target  *url.URL
	reqURL  *url.URL // target as requests carry it; see Upstreams.target
	header  http.Header
	body    []byte
	stream  bool
	timeout time.Duration

	ctx   context.Context
	timer *time.Timer
}

// forward sends the request upstream and relays the answer. The upstream
// request lives on the client's context, so a client that disconnects cancels
// it. The timeout bounds the wait for the answer's headers and, for a
// non-streamed answer, its body; a stream may run longer as long as no gap
// between two events exceeds it (each event re-arms the timer), so long
// generations are not cut while a stalled backend still is.
//
// A decision with an active reliability policy goes through forwardReliably
// (retries, timeouts, fallback) instead.
func (x *exchange) forward(rt *dataplane.Routing, c *upstreamCall) {
	if p := rt.Result.Policy; p.Active() {
		x.forwardReliably(rt, c, p)
		return
	}
	ctx, cancel := context.WithCancelCause(x.r.Context())
	defer cancel(nil)
	c.ctx = ctx
	c.timer = time.AfterFunc(c.timeout, func() { cancel(errUpstreamTimeout) })
	defer c.timer.Stop()

	rctx, span := x.startUpstreamSpan(ctx, c)
	req := newUpstreamRequest(rctx, c.reqURL, c.header, c.body)
	x.dp.Forwarded()
	resp, err := x.s.ups.transport(c.ref).RoundTrip(req)
	if err != nil {
		if span != nil {
			errType := upstreamErrorType(ctx)
			if errType == "" {
				errType = "unreachable"
			}
			x.dp.EndModelSpan(span, 0, errType)
		}
		x.upstreamFailed(rt, c, err)
		return
	}
	defer resp.Body.Close()
	if span != nil {
		defer func() { x.dp.EndModelSpan(span, resp.StatusCode, upstreamErrorType(ctx)) }()
	}

	if resp.StatusCode >= 400 {
		x.relayError(rt, c, resp)
		return
	}
	x.s.ups.health.Success(c.key)
	if c.stream && isEventStream(resp.Header) {
		x.relayStream(rt, c, resp)
		return
	}
	x.relayJSON(rt, c, resp)
}

// newUpstreamRequest is http.NewRequestWithContext(ctx, POST, u.String(),
// bytes.NewReader(body)) with header, built from the URL parsed once per
// backend instead of formatting and parsing it again for every request.
func newUpstreamRequest(ctx context.Context, u *url.URL, header http.Header, body []byte) *http.Request {
	ru := *u
	req := &http.Request{
		Method:        http.MethodPost,
		URL:           &ru,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          newRequestBody(body),
		ContentLength: int64(len(body)),
		GetBody: func() (io.ReadCloser, error) {
			return newRequestBody(body), nil
		},
		Host: ru.Host,
	}
	if len(body) == 0 {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	return req.WithContext(ctx)
}

// newRequestBody is an upstream request's body: exactly
// io.NopCloser(bytes.NewReader(b)), which net/http recognises as a body
// already in memory, so that Request.Write (h1.Transport's and
// http.Transport's) sends the head and the body in one write. Any other
// body type makes it flush the head on its own first, "in case the server
// needs the headers early": two writes to the backend per request, and a
// backend that reads the head wakes again for the body (docs/benchmarks.md,
// "Issue 16, session 17"). A type of our own would save one allocation and
// cost that write.
func newRequestBody(b []byte) io.ReadCloser {
	return io.NopCloser(bytes.NewReader(b))
}

// upstreamFailed answers a request whose upstream call failed before an answer
// began: the client went away (nothing to write), the backend timed out (504)
// or could not be reached (502). The message names the model and the upstream
// so an operator knows where to look.
func (x *exchange) upstreamFailed(rt *dataplane.Routing, c *upstreamCall, err error) {
	if x.r.Context().Err() != nil {
		x.clientGone()
		return
	}
	x.s.ups.health.Failure(c.key)
	where := dataplane.DisplayURL(c.target)
	if errors.Is(context.Cause(c.ctx), errUpstreamTimeout) {
		x.fail(rt, metrics.ReasonTimeout, dataplane.NewError(http.StatusGatewayTimeout, dataplane.TypeUpstreamTimeout,
			fmt.Sprintf("upstream for model %q at %s did not answer within %s", c.model.Name, where, timeoutOf(c.ctx, c.timeout))))
		return
	}
	x.fail(rt, metrics.ReasonUpstream5xx, dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream,
		fmt.Sprintf("upstream for model %q at %s is unreachable: %v", c.model.Name, where, unwrapURLError(err))))
}

// upstreamErrorType is an attempt's error.type for its span: timeout,
// cancelled (the client went away) or empty.
func upstreamErrorType(ctx context.Context) string {
	switch {
	case errors.Is(context.Cause(ctx), errUpstreamTimeout):
		return "timeout"
	case ctx.Err() != nil:
		return "cancelled"
	}
	return ""
}

// unwrapURLError drops url.Error's "Post \"http://…\":" prefix; the message
// already names the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// relayError passes an upstream 4xx/5xx answer to the client as it came, with
// the routing headers.
func (x *exchange) relayError(rt *dataplane.Routing, c *upstreamCall, resp *http.Response) {
	if resp.StatusCode >= 500 {
		x.s.ups.health.Failure(c.key)
	} else {
		x.s.ups.health.Success(c.key)
	}
	x.dp.UpstreamStatus(resp.StatusCode)
	if x.dp.Anthropic() {
		// The client speaks chat completions: give it an OpenAI-style error.
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
		if err != nil && x.r.Context().Err() != nil {
			x.cancelled = true
			return
		}
		body = x.dp.ErrorBody(body)
		x.writeHead(rt, resp, false)
		if _, err := x.w.Write(body); err != nil && x.r.Context().Err() != nil {
			x.cancelled = true
		}
		return
	}
	x.writeHead(rt, resp, false)
	if _, err := io.Copy(x.w, resp.Body); err != nil && x.r.Context().Err() != nil {
		x.cancelled = true
	}
}

// writeHead writes the upstream answer's status and headers plus the routing
// headers; translated: the body is JSON the data plane wrote, whatever the
// backend's Content-Type said.
func (x *exchange) writeHead(rt *dataplane.Routing, resp *http.Response, translated bool) {
	h := x.w.Header()
	copyUpstreamHeaders(h, resp.Header)
	if translated {
		h.Set("Content-Type", "application/json")
	}
	rt.SetClientHeaders(h)
	h[dataplane.HeaderRequestID] = []string{x.id} // the client's id, not the backend's
	x.w.WriteHeader(resp.StatusCode)
}

// relayJSON relays a non-streamed answer as the data plane gives it back
// (translated, metered, with routing_metadata).
func (x *exchange) relayJSON(rt *dataplane.Routing, c *upstreamCall, resp *http.Response) {
	buf := getAnswerBuffer()
	defer putAnswerBuffer(buf)
	_, err := buf.ReadFrom(io.LimitReader(resp.Body, maxUpstreamBody+1))
	body := buf.Bytes()
	if err != nil {
		x.upstreamFailed(rt, c, err)
		return
	}
	x.writeJSON(rt, c, resp, body)
}

// writeJSON gives the client a non-streamed answer read whole (body, which
// the exchange may splice in place).
func (x *exchange) writeJSON(rt *dataplane.Routing, c *upstreamCall, resp *http.Response, body []byte) {
	if len(body) > maxUpstreamBody {
		x.s.ups.health.Failure(c.key)
		x.fail(rt, metrics.ReasonUpstream5xx, dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream,
			fmt.Sprintf("upstream for model %q at %s answered more than %d bytes", c.model.Name, dataplane.DisplayURL(c.target), maxUpstreamBody)))
		return
	}
	out, _, e := x.dp.JSONAnswer(body, true) // body is ours: spliced in place
	x.dp.GateHeaders(x.w.Header())           // a response check's verdict headers
	if e != nil {
		if x.dp.Anthropic() && !x.dp.Withheld() {
			x.s.ups.health.Failure(c.key) // it did not speak the Messages API
		}
		x.failCounted(rt, e)
		return
	}
	// The length is known: with it the answer goes out in one write when
	// flushed, and the flush sends it before the bookkeeping that follows
	// (metrics, the span, the log line), which the client need not wait for.
	// Without it net/http would hold the answer until the handler returns.
	bodied := bodyAllowed(resp.StatusCode)
	if bodied {
		x.w.Header()["Content-Length"] = []string{strconv.Itoa(len(out))}
	}
	x.writeHead(rt, resp, x.dp.Translating())
	if _, err := x.w.Write(out); err != nil && x.r.Context().Err() != nil {
		x.cancelled = true
	}
	if bodied && !x.cancelled {
		x.w.Flush()
	}
	if !x.cancelled {
		x.dp.Answered(x.r.Context(), resp.StatusCode)
	}
}

// bodyAllowed reports whether an answer with this status may carry a body
// (and so a Content-Length): not 1xx, 204 or 304.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// answerBuffers hold non-streamed answers while they are read and spliced;
// the answer is written to the client before its buffer goes back.
var answerBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledAnswer is the largest buffer kept for reuse: a rare huge answer
// should not pin its memory.
const maxPooledAnswer = 256 << 10

func getAnswerBuffer() *bytes.Buffer {
	b := answerBuffers.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putAnswerBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledAnswer {
		answerBuffers.Put(b)
	}
}

func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	return len(ct) >= len("text/event-stream") && equalFoldPrefix(ct, "text/event-stream")
}

func equalFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && bytes.EqualFold([]byte(s[:len(prefix)]), []byte(prefix))
}
