// Package extproc is Junction's Envoy front end: an external processing
// server (envoy.service.ext_proc.v3, port 50051 by default) that Envoy asks
// what to do with each request. It routes chat completions with the same
// engine and the same request phase (internal/dataplane) as the standalone
// gateway, so a request gets the same decision, the same rewritten body and
// the same answers either way, and is labelled the same way in metrics.
//
// For a routed request it tells Envoy, in header and body mutations, which
// model was selected (x-selected-model and the other routing headers, which
// Envoy's route configuration matches to pick the model's cluster, after
// clear_route_cache), the backend's path, extra headers and credentials, and
// the rewritten body; or it answers the request itself with an
// ImmediateResponse (a security block, a plugin's answer, a bad request, the
// model list). On the way back it feeds the answer's status and bytes
// through the same per-request data plane as the gateway
// (dataplane.Exchange: translation, usage, routing_metadata, metrics, the
// response phase), switching an event stream to STREAMED body mode with a
// mode override, and adds the routing headers.
//
// It is a wire adapter: exchange.go holds one stream's state, its timers and
// accounting; request.go maps Envoy's request messages (body modes,
// trailers, mutations, clear_route_cache, immediate responses) onto the
// exchange; response.go does the same for the answer; replies.go builds the
// messages sent back (as their wire bytes, which the gRPC server's codec,
// codec.go, sends as they are); headers.go reads and mutates header maps.
//
// What must not happen here: deciding a route (engine does), shaping a body
// or an answer, translating a protocol or recording a metric differently
// from the gateway (dataplane does), or holding more than one request's body
// per stream.
package extproc

import (
	"log/slog"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/recipes"
)

// Defaults of Options.
const (
	DefaultBodyTimeout = 60 * time.Second
	DefaultIdleTimeout = 10 * time.Minute
)

// Options are what a Server needs.
type Options struct {
	// Runtime holds the serving generation; each request keeps the one it
	// started on.
	Runtime *engine.Runtime
	// Metrics records the spec's metrics; nil records nothing.
	Metrics *metrics.Metrics
	// Plugins runs decision plugins; nil reports them as not run.
	Plugins plugin.Runner
	// Logger receives one line per request (never its text) and protocol
	// problems; nil discards.
	Logger *slog.Logger
	// Recipe is the entrypoint recipe; empty means the configuration's
	// default recipe.
	Recipe string
	// MaxBodyBytes bounds a request body (413 above it); 0 means
	// recipes.DefaultMaxBodyBytes, the gateway's default.
	MaxBodyBytes int64
	// BodyTimeout bounds the wait for a request body, from its headers to its
	// last byte (408 after it); 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// IdleTimeout bounds the wait for Envoy's next message on a stream whose
	// request is not finished (the stream is then ended with
	// DEADLINE_EXCEEDED); 0 means DefaultIdleTimeout. It is a safety net for
	// streams Envoy forgot, not a request timeout: Envoy's route timeouts
	// govern those.
	IdleTimeout time.Duration
	// Registerer, when set, receives ext_proc's own protocol counter
	// (junction_extproc_unexpected_messages_total).
	Registerer prometheus.Registerer
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

// Server implements extprocv3.ExternalProcessorServer. It is safe for
// concurrent use; each Process stream is one HTTP request.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer

	opts       Options
	plane      *dataplane.Plane
	metrics    *metrics.Metrics
	log        *slog.Logger
	started    time.Time
	unexpected *prometheus.CounterVec
}

var _ extprocv3.ExternalProcessorServer = (*Server)(nil)

// New returns a Server.
func New(opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = recipes.DefaultMaxBodyBytes
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	s := &Server{opts: opts, metrics: opts.Metrics, log: opts.Logger, started: time.Now()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.plane = dataplane.New(dataplane.Config{Metrics: opts.Metrics, Plugins: opts.Plugins, Logger: s.log, AnthropicUpstreams: true, Files: opts.Files, Responses: opts.Responses, Limiter: opts.Limiter, Replays: opts.Replays})
	s.unexpected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "junction_extproc_unexpected_messages_total",
		Help: "ext_proc messages that arrived where the protocol does not expect them, by message and what was done (ignored: answered so the request goes on; rejected: the stream was ended with an error).",
	}, []string{"message", "action"})
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(s.unexpected)
	}
	return s
}

// Process serves one ext_proc stream: the messages of one HTTP request.
func (s *Server) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	x := s.newExchange(stream)
	err := x.serve()
	x.mu.Lock()
	x.finish()
	x.mu.Unlock()
	return err
}
