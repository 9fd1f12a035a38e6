// Package gateway is Junction's standalone front end: an OpenAI-compatible
// HTTP listener (port 8801 by default) that hands each chat-completion (or
// Responses API) request to the data plane, forwards what it decides to the
// selected model's backend, and relays the answer (SSE included) with the
// routing headers the spec defines.
//
// It is a wire adapter over internal/dataplane, exactly as ext_proc is: one
// dataplane.Exchange per request parses, routes, runs the plugins, rewrites,
// gives the answers made instead of forwarding, translates protocols both
// ways, reads usage and records every metric of the request. What lives here
// is HTTP: body limits, client keys, routes and methods, upstream connection
// pools, passive backend health, the SSE reader, writing and flushing, and
// timeouts. Files: server.go (the handler, the exchange, accounting),
// chat_completions.go and responses.go (the two request routes),
// forward.go (the upstream call and non-streamed answers), stream.go
// (event streams), upstream.go and health.go (pools and health),
// models.go (the model list), headers.go (what is relayed of the
// backend's headers), errors.go (writing the shared error envelope).
//
// Request text, tokens and keys are never logged.
package gateway

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/recipes"
)

// Endpoint labels of router_requests_total: fixed strings, never the raw path,
// so that scanners cannot blow up the label set.
const (
	endpointChat      = "/v1/chat/completions"
	endpointModels    = "/v1/models"
	endpointResponses = "/v1/responses"
	endpointOther     = "other"
)

// Options are what a Server needs.
type Options struct {
	// Listener is this server's listener. When the serving configuration has a
	// listener of the same name, that one's api_keys, entrypoint, timeout and
	// max_body_bytes are used instead, so key rotation needs no restart.
	Listener recipes.Listener
	// Runtime holds the serving generation; each request keeps the one it
	// started on.
	Runtime *engine.Runtime
	// Metrics records the spec's metrics; nil records nothing.
	Metrics *metrics.Metrics
	// Plugins runs decision plugins; nil reports them as not run.
	Plugins plugin.Runner
	// Upstreams holds backend connection pools; nil creates private ones.
	Upstreams *Upstreams
	// Logger receives one line per request (never its text); nil discards.
	Logger *slog.Logger
	// Files opens the uploaded images that requests name by file_id (see
	// dataplane.Config.Files); nil answers such a request 400.
	Files dataplane.Files
	// Responses is the Responses API's response store; nil keeps nothing
	// (see dataplane.Config.Responses).
	Responses storage.Responses
	// Tracer makes the request's spans; nil: tracing is off.
	Tracer *tracing.Tracer
	// Limiter applies global.rate_limits (shared with the other front
	// end); nil admits everything.
	Limiter *ratelimit.Limiter
	// Replays keeps the decision records of router_replay (see
	// dataplane.Config.Replays); nil keeps none.
	Replays dataplane.Replays
}

// Server is the data-plane HTTP handler.
type Server struct {
	opts    Options
	metrics *metrics.Metrics
	log     *slog.Logger
	ups     *Upstreams
	plane   *dataplane.Plane
	started time.Time
}

// New returns the handler.
func New(opts Options) *Server {
	s := &Server{opts: opts, metrics: opts.Metrics, log: opts.Logger, ups: opts.Upstreams, started: time.Now()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.ups == nil {
		s.ups = NewUpstreams(UpstreamOptions{})
	}
	s.metrics.WatchBackends(s.ups.health.Snapshot)
	s.plane = dataplane.New(dataplane.Config{Metrics: s.metrics, Backends: upstreamBackends{s.ups}, Logger: s.log, AnthropicUpstreams: true, Files: opts.Files, Responses: opts.Responses, Failover: true, Limiter: opts.Limiter, Replays: opts.Replays})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == endpointChatStream {
		// A connection of many requests, each served (and counted) below.
		s.chatStream(rw, r)
		return
	}
	start := time.Now()
	x := &exchange{s: s, r: r, start: start, endpoint: endpointOther, dp: s.plane.NewExchange(start)}
	x.w = &responseWriter{ResponseWriter: rw}
	x.id = dataplane.RequestID(r.Header.Get(dataplane.HeaderRequestID))
	x.w.Header()[dataplane.HeaderRequestID] = []string{x.id}
	x.startSpan()
	defer x.finish()
	defer x.recover()

	if s.opts.Runtime != nil {
		x.gen = s.opts.Runtime.Current()
	}
	x.listener = s.listenerFor(x.gen)

	path := r.URL.Path
	switch {
	case path == "/v1/chat/completions":
		x.endpoint = endpointChat
		if !x.allow(http.MethodPost) || !x.authorized() {
			return
		}
		x.chatCompletions()
	case path == "/v1/models":
		x.endpoint = endpointModels
		if !x.allow(http.MethodGet) || !x.authorized() {
			return
		}
		x.models()
	case strings.HasPrefix(path, "/v1/models/"):
		x.endpoint = endpointModels
		if !x.allow(http.MethodGet) || !x.authorized() {
			return
		}
		x.model(strings.TrimPrefix(path, "/v1/models/"))
	case path == "/v1/responses":
		x.endpoint = endpointResponses
		if !x.allow(http.MethodPost) || !x.authorized() {
			return
		}
		x.responses()
	case strings.HasPrefix(path, "/v1/responses/"):
		x.endpoint = endpointResponses
		methods := []string{http.MethodGet, http.MethodDelete}
		if strings.HasSuffix(path, "/input_items") {
			methods = methods[:1]
		}
		if !x.allow(methods...) || !x.authorized() {
			return
		}
		x.storedResponse()
	default:
		writeError(x.w, dataplane.NotFound(r.Method, r.URL.Path))
	}
}

// listenerFor returns the listener configuration in force for gen.
func (s *Server) listenerFor(gen *engine.Generation) recipes.Listener {
	if gen != nil && gen.Document() != nil {
		for _, l := range gen.Document().Listeners {
			if l.Name == s.opts.Listener.Name {
				return l
			}
		}
	}
	return s.opts.Listener
}

// exchange is one request in flight: what the handlers share, and what
// finish records.
type exchange struct {
	s        *Server
	w        *responseWriter
	r        *http.Request
	start    time.Time
	id       string
	gen      *engine.Generation
	listener recipes.Listener

	endpoint string
	// dp is the request in the data plane: the request phase's outcome,
	// translation, usage, metrics and the response phase. What stays here is
	// HTTP: reading the request, the upstream call, writing the answer.
	dp dataplane.Exchange
	// cancelled: the client went away; status 499 in metrics.
	cancelled bool
	// span is the request's server span; nil when tracing is off.
	span trace.Span
}

// allow answers 405 unless the method is one of methods.
func (x *exchange) allow(methods ...string) bool {
	for _, m := range methods {
		if x.r.Method == m {
			return true
		}
	}
	allow := strings.Join(methods, ", ")
	x.w.Header().Set("Allow", allow)
	writeError(x.w, dataplane.MethodNotAllowed(x.r.Method, x.r.URL.Path, allow))
	return false
}

// authorized checks the listener's api_keys. Every key is compared in constant
// time and all of them are always compared, so timing tells nothing about which
// key nearly matched.
func (x *exchange) authorized() bool {
	keys := x.listener.APIKeys
	if len(keys) == 0 {
		return true
	}
	got, ok := bearer(x.r.Header.Get("Authorization"))
	if !ok {
		writeError(x.w, dataplane.NewError(http.StatusUnauthorized, dataplane.TypeAuthentication,
			"missing API key: send it as 'Authorization: Bearer <key>'").WithCode("invalid_api_key"))
		return false
	}
	match := 0
	for _, k := range keys {
		match |= subtle.ConstantTimeCompare([]byte(got), []byte(k))
	}
	if match != 1 {
		writeError(x.w, dataplane.NewError(http.StatusUnauthorized, dataplane.TypeAuthentication,
			"incorrect API key provided").WithCode("invalid_api_key"))
		return false
	}
	return true
}

func bearer(h string) (string, bool) {
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	tok := strings.TrimSpace(h[len(prefix):])
	return tok, tok != ""
}

// recover turns a panic into a 500 (when nothing was written yet) and an
// `unknown` error, so one bad request cannot take the listener down.
// http.ErrAbortHandler is re-raised: it is net/http's way to cut a connection.
func (x *exchange) recover() {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler {
		panic(p)
	}
	// A panic after routing (dataplane.RoutedPanic) is labelled with the
	// decision: dp took it before the panic.
	x.s.log.Error("panic serving request", "request_id", x.id, "endpoint", x.endpoint,
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	x.error(metrics.ReasonUnknown)
	if !x.w.wroteHeader {
		writeError(x.w, dataplane.NewError(http.StatusInternalServerError, dataplane.TypeServer,
			"internal error while handling the request (request id "+x.id+")"))
	}
}

// error counts one llm_request_errors_total for this request's model.
func (x *exchange) error(reason string) { x.dp.Error(reason) }

// finish records the request metrics and the log line.
func (x *exchange) finish() {
	status := x.w.status
	if x.cancelled {
		status = statusClientClosed
	} else if status == 0 {
		status = http.StatusOK
	}
	d := time.Since(x.start)
	x.dp.Record(x.endpoint, status, d)
	x.endSpan(status)
	if !x.s.log.Enabled(context.Background(), slog.LevelInfo) {
		return // spare building the line's attributes
	}
	attrs := []any{"request_id", x.id, "endpoint", x.endpoint, "status", status, "duration_ms", d.Milliseconds()}
	if res := x.dp.Out.Result; res != nil {
		attrs = append(attrs, "decision", x.dp.Category(), "model", res.Model, "reason_code", res.ReasonCode)
	}
	x.s.log.Info("request", attrs...)
}

// statusClientClosed is the status metrics record for a client that went away
// before its answer was complete (nginx's convention).
const statusClientClosed = 499

// responseWriter remembers the status for metrics and whether the header is
// out (a panic after it cannot become a 500).
type responseWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *responseWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes through so SSE reaches the client event by event.
func (w *responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
