package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/junction-router/junction/engine/chat"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/engine/metrics"
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
	model     *recipes.Model
	ref       *recipes.BackendRef
	key       string
	target    *url.URL
	reqURL    *url.URL // target as requests carry it; see Upstreams.target
	header    http.Header
	body      []byte
	stream    bool
	dropUsage bool
	timeout   time.Duration

	ctx   context.Context
	timer *time.Timer
	sent  time.Time
}

// forward sends the request upstream and relays the answer. The upstream
// request lives on the client's context, so a client that disconnects cancels
// it. The timeout bounds the wait for the answer's headers and, for a
// non-streamed answer, its body; a stream may run longer as long as no gap
// between two events exceeds it (each event re-arms the timer), so long
// generations are not cut while a stalled backend still is.
func (x *exchange) forward(rt *routing, c *upstreamCall) {
	ctx, cancel := context.WithCancelCause(x.r.Context())
	defer cancel(nil)
	c.ctx = ctx
	c.timer = time.AfterFunc(c.timeout, func() { cancel(errUpstreamTimeout) })
	defer c.timer.Stop()

	req := newUpstreamRequest(ctx, c.reqURL, c.header, c.body)
	x.s.metrics.ModelRequest(c.model.Name)
	c.sent = time.Now()
	resp, err := x.s.ups.transport(c.ref).RoundTrip(req)
	if err != nil {
		x.upstreamFailed(rt, c, err)
		return
	}
	defer resp.Body.Close()

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
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		GetBody: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(body)), nil
		},
		Host: ru.Host,
	}
	if len(body) == 0 {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	return req.WithContext(ctx)
}

// upstreamFailed answers a request whose upstream call failed before an answer
// began: the client went away (nothing to write), the backend timed out (504)
// or could not be reached (502). The message names the model and the upstream
// so an operator knows where to look.
func (x *exchange) upstreamFailed(rt *routing, c *upstreamCall, err error) {
	if x.r.Context().Err() != nil {
		x.clientGone()
		return
	}
	x.s.ups.health.Failure(c.key)
	where := displayURL(c.target)
	if errors.Is(context.Cause(c.ctx), errUpstreamTimeout) {
		x.fail(rt, metrics.ReasonTimeout, newError(http.StatusGatewayTimeout, typeUpstreamTimeout,
			fmt.Sprintf("upstream for model %q at %s did not answer within %s", c.model.Name, where, c.timeout)))
		return
	}
	x.fail(rt, metrics.ReasonUpstream5xx, newError(http.StatusBadGateway, typeUpstream,
		fmt.Sprintf("upstream for model %q at %s is unreachable: %v", c.model.Name, where, unwrapURLError(err))))
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
func (x *exchange) relayError(rt *routing, c *upstreamCall, resp *http.Response) {
	reason := metrics.ReasonUpstream4xx
	if resp.StatusCode >= 500 {
		reason = metrics.ReasonUpstream5xx
		x.s.ups.health.Failure(c.key)
	} else {
		x.s.ups.health.Success(c.key)
	}
	x.error(reason)
	x.writeHead(rt, resp)
	if _, err := io.Copy(x.w, resp.Body); err != nil && x.r.Context().Err() != nil {
		x.cancelled = true
	}
}

// writeHead writes the upstream answer's status and headers plus the routing
// headers.
func (x *exchange) writeHead(rt *routing, resp *http.Response) {
	h := x.w.Header()
	copyUpstreamHeaders(h, resp.Header)
	rt.set(h)
	h[headerRequestID] = []string{x.id} // the client's id, not the backend's
	x.w.WriteHeader(resp.StatusCode)
}

// relayJSON relays a non-streamed answer, adding routing_metadata and
// recording usage, cost and latency.
func (x *exchange) relayJSON(rt *routing, c *upstreamCall, resp *http.Response) {
	buf := getAnswerBuffer()
	defer putAnswerBuffer(buf)
	_, err := buf.ReadFrom(io.LimitReader(resp.Body, maxUpstreamBody+1))
	body := buf.Bytes()
	if err != nil {
		x.upstreamFailed(rt, c, err)
		return
	}
	if len(body) > maxUpstreamBody {
		x.s.ups.health.Failure(c.key)
		x.fail(rt, metrics.ReasonUpstream5xx, newError(http.StatusBadGateway, typeUpstream,
			fmt.Sprintf("upstream for model %q at %s answered more than %d bytes", c.model.Name, displayURL(c.target), maxUpstreamBody)))
		return
	}
	total := time.Since(x.start)
	ans := parseAnswer(body)
	var upstreamBody []byte
	if x.onAnswer != nil {
		upstreamBody = bytes.Clone(body) // the splice below may reuse body's bytes
	}
	if ans.object {
		var md [256]byte
		body = withRoutingMetadata(body, ans, appendRoutingMetadata(md[:0], rt))
	}
	// A non-streamed answer has no observable first token: TTFT is the whole
	// answer, TPOT the upstream latency per completion token.
	x.s.metrics.TTFT(c.model.Name, total)
	if ans.usage != nil {
		x.s.metrics.Usage(c.model.Name, c.model.Pricing, *ans.usage)
		x.s.metrics.TPOT(c.model.Name, time.Since(c.sent), ans.usage.CompletionTokens)
	}
	x.writeHead(rt, resp)
	if _, err := x.w.Write(body); err != nil && x.r.Context().Err() != nil {
		x.cancelled = true
	}
	if x.onAnswer != nil && !x.cancelled {
		x.onAnswer(resp.StatusCode, upstreamBody)
	}
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

// answer is what the gateway reads of a non-streamed upstream answer.
type answer struct {
	// object: the body is a valid JSON object; anything else is relayed
	// untouched.
	object bool
	// empty: the object has no members.
	empty bool
	// hasMetadata: the object already has routing_metadata (another Junction
	// upstream).
	hasMetadata bool
	usage       *cost.Usage
}

// parseAnswer reads a chat.completion's usage without decoding the rest: the
// body is validated, its top-level members are split, and only usage is
// decoded (the last one when repeated, as encoding/json keeps it).
func parseAnswer(body []byte) answer {
	var a answer
	if !json.Valid(body) {
		return a
	}
	var buf [16]chat.Member
	members, err := chat.Members(buf[:0], body)
	if err != nil {
		return a // valid JSON that is not an object
	}
	a.object, a.empty = true, len(members) == 0
	var usage []byte
	for _, m := range members {
		switch {
		case m.Is("usage"):
			usage = m.Value
		case m.Is("routing_metadata"):
			a.hasMetadata = true
		}
	}
	if usage != nil {
		_ = json.Unmarshal(usage, &a.usage)
	}
	return a
}

// metadata is the earlier-revision routing_metadata object.
type metadata struct {
	SelectedModel    string       `json:"selected_model"`
	Confidence       float64      `json:"confidence"`
	ProcessingTimeMS int64        `json:"processing_time_ms"`
	CacheHit         bool         `json:"cache_hit"`
	SecurityChecks   securityMeta `json:"security_checks"`
}

type securityMeta struct {
	PIIDetected       bool `json:"pii_detected"`
	JailbreakDetected bool `json:"jailbreak_detected"`
}

func metadataOf(rt *routing) metadata {
	return metadata{
		SelectedModel:    rt.res.Model,
		Confidence:       rt.res.Confidence,
		ProcessingTimeMS: rt.processing.Milliseconds(),
		CacheHit:         rt.cacheStatus == cacheHit,
		SecurityChecks:   securityMeta{PIIDetected: rt.res.PIIDetected, JailbreakDetected: rt.res.JailbreakDetected},
	}
}

// routingMetadata encodes the routing_metadata object; nil when it cannot
// be encoded (a confidence that is not a finite number).
func routingMetadata(rt *routing) json.RawMessage {
	return appendRoutingMetadata(nil, rt)
}

// appendRoutingMetadata appends what json.Marshal writes for rt's metadata
// to dst, without reflection; nil when it cannot be encoded.
func appendRoutingMetadata(dst []byte, rt *routing) []byte {
	md := metadataOf(rt)
	b := append(dst, `{"selected_model":`...)
	b = appendJSONString(b, md.SelectedModel)
	b = append(b, `,"confidence":`...)
	b, ok := appendJSONFloat(b, md.Confidence)
	if !ok {
		return nil
	}
	b = append(b, `,"processing_time_ms":`...)
	b = strconv.AppendInt(b, md.ProcessingTimeMS, 10)
	b = append(b, `,"cache_hit":`...)
	b = strconv.AppendBool(b, md.CacheHit)
	b = append(b, `,"security_checks":{"pii_detected":`...)
	b = strconv.AppendBool(b, md.SecurityChecks.PIIDetected)
	b = append(b, `,"jailbreak_detected":`...)
	b = strconv.AppendBool(b, md.SecurityChecks.JailbreakDetected)
	return append(b, '}', '}')
}

// appendJSONString appends s as json.Marshal writes a string.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat appends f as json.Marshal writes a float64; ok is false
// for NaN and infinities, which JSON cannot hold.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-7, not e-07.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// withRoutingMetadata adds routing_metadata to the JSON object body. The
// upstream's bytes are kept as sent (field order included) by splicing the
// new member in before the closing brace; only an answer that already has
// routing_metadata (another Junction upstream) is re-encoded, so ours
// replaces it. Without metadata the body is returned as it is. The splice
// reuses body's memory (its closing brace and what follows are overwritten,
// and its spare capacity used), so body must not be read afterwards.
func withRoutingMetadata(body []byte, a answer, md json.RawMessage) []byte {
	if len(md) == 0 {
		return body
	}
	if a.hasMetadata {
		var fields map[string]json.RawMessage
		if json.Unmarshal(body, &fields) != nil || fields == nil {
			return body
		}
		fields["routing_metadata"] = md
		if b, err := json.Marshal(fields); err == nil {
			return b
		}
		return body
	}
	trimmed := bytes.TrimRight(body, " \t\r\n")
	end := len(trimmed) - 1
	if end < 0 || trimmed[end] != '}' {
		return body
	}
	out := trimmed[:end]
	if !a.empty {
		out = append(out, ',')
	}
	out = append(out, `"routing_metadata":`...)
	out = append(out, md...)
	out = append(out, '}', '\n')
	return out
}

func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	return len(ct) >= len("text/event-stream") && equalFoldPrefix(ct, "text/event-stream")
}

func equalFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && bytes.EqualFold([]byte(s[:len(prefix)]), []byte(prefix))
}
