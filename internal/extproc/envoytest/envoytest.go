// Package envoytest plays Envoy's part of the ext_proc protocol
// (envoy.service.ext_proc.v3): it sends an external processor the message
// sequences Envoy's ext_proc filter sends for each processing mode (request
// headers, buffered or streamed bodies, full duplex, trailers, mode
// overrides), applies what comes back the way Envoy applies it (header
// mutations under Envoy's default mutation rules, body mutations, route
// cache clearing, immediate responses, content-length checks), and reports
// the request as Envoy would forward it and the answer as the client would
// receive it. Every answer is also checked against the protocol's own
// validation rules and against the message Envoy was waiting for.
//
// Tests use it against an in-process server; an operator can point it at a
// running `junction serve` (Dial("127.0.0.1:50051"), then Smoke).
//
// It is a test harness, not Envoy: it models the parts of the filter an
// external processor can observe, on one stream at a time.
package envoytest

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Body send modes, as the filter's processing_mode names them.
const (
	None       = filterv3.ProcessingMode_NONE
	Streamed   = filterv3.ProcessingMode_STREAMED
	Buffered   = filterv3.ProcessingMode_BUFFERED
	Partial    = filterv3.ProcessingMode_BUFFERED_PARTIAL
	FullDuplex = filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
)

// Config is the ext_proc filter's configuration, as far as the protocol
// shows it.
type Config struct {
	RequestBody  filterv3.ProcessingMode_BodySendMode
	ResponseBody filterv3.ProcessingMode_BodySendMode
	// SkipResponseHeaders sets response_header_mode SKIP.
	SkipResponseHeaders bool
	// Trailers sets request and response trailer modes to SEND (full duplex
	// needs it).
	Trailers bool
	// SendBodyWithoutWaiting is send_body_without_waiting_for_header_response.
	SendBodyWithoutWaiting bool
	// AllowModeOverride is allow_mode_override.
	AllowModeOverride bool
	// NoProtocolConfig leaves protocol_config out of the first message, as
	// Envoy releases before it was added do.
	NoProtocolConfig bool
	// BufferLimit is Envoy's buffer limit for BUFFERED_PARTIAL (what fits is
	// sent, the rest passes); 0 means no limit.
	BufferLimit int
	// AllowEnvoyHeaders is mutation_rules.allow_envoy: the processor may set
	// x-envoy-* request headers (the router's retry and timeout headers).
	// Without it Envoy refuses them (Rejected).
	AllowEnvoyHeaders bool
}

// Standard is the configuration of examples/envoy/envoy.yaml: buffered
// request and response bodies, mode override allowed, x-envoy-* headers
// allowed.
var Standard = Config{RequestBody: Buffered, ResponseBody: Buffered, AllowModeOverride: true, AllowEnvoyHeaders: true}

// Header is one header field; keys are lower case, as Envoy sends them.
type Header struct{ Key, Value string }

// Headers is a header map in order, pseudo-headers included.
type Headers []Header

// H builds headers from key, value pairs.
func H(kv ...string) Headers {
	h := make(Headers, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		h = append(h, Header{Key: kv[i], Value: kv[i+1]})
	}
	return h
}

// Get returns the first value of key.
func (h Headers) Get(key string) string {
	for _, f := range h {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// Values returns every value of key.
func (h Headers) Values(key string) []string {
	var vs []string
	for _, f := range h {
		if f.Key == key {
			vs = append(vs, f.Value)
		}
	}
	return vs
}

// Has reports whether key is present.
func (h Headers) Has(key string) bool {
	for _, f := range h {
		if f.Key == key {
			return true
		}
	}
	return false
}

func (h Headers) del(key string) Headers {
	out := h[:0]
	for _, f := range h {
		if f.Key != key {
			out = append(out, f)
		}
	}
	return out
}

func (h Headers) set(key, value string) Headers {
	for i, f := range h {
		if f.Key == key {
			h[i].Value = value
			return append(h[:i+1], h[i+1:].del(key)...)
		}
	}
	return append(h, Header{key, value})
}

// Proto is h as Envoy sends it.
func (h Headers) Proto() *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	for _, f := range h {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: f.Key, RawValue: []byte(f.Value)})
	}
	return m
}

// Request is a downstream request as it reaches the filter.
type Request struct {
	Method, Path string
	// Headers are the regular headers (lower case); :method, :path,
	// :authority and :scheme are added.
	Headers Headers
	// Body is the request body. Pieces, when set, is how it arrives (the
	// streamed modes send each piece as it comes).
	Body   []byte
	Pieces [][]byte
	// Trailers, when set, follow the body.
	Trailers Headers
}

// Response is an upstream answer as it reaches the filter.
type Response struct {
	Status  int
	Headers Headers
	Body    []byte
	Pieces  [][]byte
	// EmptyEnd ends a streamed body with an extra empty end-of-stream
	// message, as Envoy does when the upstream's last frame carries no data.
	EmptyEnd bool
	Trailers Headers
}

// Message is a request or an answer as Envoy holds it after processing.
type Message struct {
	Headers Headers
	Body    []byte
	// Pieces is the body as relayed piece by piece (streamed modes).
	Pieces [][]byte
}

// RequestOutcome is what Envoy does with a request after processing.
type RequestOutcome struct {
	// Immediate is set when the processor answered the request itself;
	// Upstream is nil then.
	Immediate *extprocv3.ImmediateResponse
	// Upstream is the request as forwarded: headers and body after every
	// mutation.
	Upstream *Message
	// ClearRouteCache: the route is picked again on the mutated headers.
	ClearRouteCache bool
}

// ResponseOutcome is what the client receives.
type ResponseOutcome struct {
	Immediate  *extprocv3.ImmediateResponse
	Downstream *Message
	// Override is the mode override the processor asked for, if any.
	Override *filterv3.ProcessingMode
}

// ErrContentLength is returned when a buffered body was replaced but the
// content-length header left disagreeing with it: Envoy refuses such a
// mutation and answers the client with an error.
var ErrContentLength = errors.New("envoytest: content-length does not match the mutated body (Envoy rejects the body mutation)")

// Client is a connection to an external processor.
type Client struct {
	conn *grpc.ClientConn
	ep   extprocv3.ExternalProcessorClient
}

// Dial connects to target (host:port) over plain-text gRPC, or with opts.
func Dial(target string, opts ...grpc.DialOption) (*Client, error) {
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, ep: extprocv3.NewExternalProcessorClient(conn)}, nil
}

// New uses an existing connection.
func New(cc grpc.ClientConnInterface) *Client {
	return &Client{ep: extprocv3.NewExternalProcessorClient(cc)}
}

// Close closes a connection Dial opened.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// Open starts one stream (one HTTP request) with the filter configured as
// cfg.
func (c *Client) Open(ctx context.Context, cfg Config) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	ps, err := c.ep.Process(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Stream{cfg: cfg, ps: ps, cancel: cancel}
	s.mode = &filterv3.ProcessingMode{
		RequestHeaderMode:  filterv3.ProcessingMode_SEND,
		ResponseHeaderMode: filterv3.ProcessingMode_SEND,
		RequestBodyMode:    cfg.RequestBody,
		ResponseBodyMode:   cfg.ResponseBody,
	}
	if cfg.SkipResponseHeaders {
		s.mode.ResponseHeaderMode = filterv3.ProcessingMode_SKIP
	}
	if cfg.Trailers {
		s.mode.RequestTrailerMode = filterv3.ProcessingMode_SEND
		s.mode.ResponseTrailerMode = filterv3.ProcessingMode_SEND
	}
	return s, nil
}

// Stream is one HTTP request's ext_proc stream, driven as Envoy drives it.
type Stream struct {
	cfg    Config
	ps     extprocv3.ExternalProcessor_ProcessClient
	cancel context.CancelFunc
	mode   *filterv3.ProcessingMode
	sent   int

	// Sent and Received are every message of the stream, in order.
	Sent     []*extprocv3.ProcessingRequest
	Received []*extprocv3.ProcessingResponse
	// Rejected lists header mutations Envoy's default mutation rules refuse
	// (counted as rejected_header_mutations): a processor should send none.
	Rejected []string
	// Ignored lists mutations Envoy ignores where they were sent (header
	// mutations in a streamed body's answer, for instance).
	Ignored []string
	// request and response are the headers as Envoy holds them.
	request  Headers
	response Headers
}

// Send sends one message as it is (with protocol_config on the first one
// unless the configuration says otherwise).
func (s *Stream) Send(req *extprocv3.ProcessingRequest) error {
	if s.sent == 0 && !s.cfg.NoProtocolConfig && req.ProtocolConfig == nil {
		req.ProtocolConfig = &extprocv3.ProtocolConfiguration{
			RequestBodyMode:                         s.cfg.RequestBody,
			ResponseBodyMode:                        s.cfg.ResponseBody,
			SendBodyWithoutWaitingForHeaderResponse: s.cfg.SendBodyWithoutWaiting,
		}
	}
	s.sent++
	s.Sent = append(s.Sent, req)
	return s.ps.Send(req)
}

// Recv receives one answer and checks it against the protocol's validation
// rules.
func (s *Stream) Recv() (*extprocv3.ProcessingResponse, error) {
	r, err := s.ps.Recv()
	if err != nil {
		return nil, err
	}
	s.Received = append(s.Received, r)
	if err := r.ValidateAll(); err != nil {
		return r, fmt.Errorf("envoytest: invalid ProcessingResponse: %w", err)
	}
	return r, nil
}

// Close ends the stream as Envoy does after a request: it closes its side
// and waits for the processor to end the stream. An answer the processor
// sends after everything was answered is an error (Envoy would count it as
// spurious), and so is a stream ended with an error status.
func (s *Stream) Close() error {
	defer s.cancel()
	if err := s.ps.CloseSend(); err != nil {
		return err
	}
	r, err := s.ps.Recv()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("envoytest: spurious answer after the request was done: %v", r)
}

// Abort resets the stream, as Envoy does when the client goes away.
func (s *Stream) Abort() { s.cancel() }

func requestHeaders(req Request, end bool) *extprocv3.ProcessingRequest {
	h := Headers{{":method", req.Method}, {":path", req.Path}, {":authority", "envoytest.local"}, {":scheme", "http"}}
	h = append(h, req.Headers...)
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: h.Proto(), EndOfStream: end},
	}}
}

func bodyMsg(response bool, b []byte, end bool) *extprocv3.ProcessingRequest {
	hb := &extprocv3.HttpBody{Body: b, EndOfStream: end}
	if response {
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: hb}}
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: hb}}
}

func trailersMsg(response bool, t Headers) *extprocv3.ProcessingRequest {
	ht := &extprocv3.HttpTrailers{Trailers: t.Proto()}
	if response {
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: ht}}
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: ht}}
}

func pieces(body []byte, p [][]byte) [][]byte {
	if p != nil {
		return p
	}
	if len(body) == 0 {
		return nil
	}
	return [][]byte{body}
}

func join(p [][]byte) []byte {
	var b []byte
	for _, x := range p {
		b = append(b, x...)
	}
	return b
}
