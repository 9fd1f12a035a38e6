package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ModelRuntimeNames lists the router_model_runtime_* families the router
// records for its model deployments (the spec's frontend metrics).
var ModelRuntimeNames = []string{
	"router_model_runtime_ready",
	"router_model_runtime_replica_ready",
	"router_model_runtime_requests_total",
	"router_model_runtime_replica_requests_total",
	"router_model_runtime_request_duration_seconds",
	"router_model_runtime_transport_seconds",
	"router_model_runtime_server_seconds",
	"router_model_runtime_restarts_total",
	"router_model_runtime_replica_inflight",
	"router_model_runtime_replica_admitted_bytes",
	"router_model_runtime_unknown_answers_total",
	"router_model_runtime_stage_decision_calls_total",
	"router_model_runtime_bundle_wait_seconds",
}

// Outcomes of router_model_runtime_requests_total (deployment level) and
// router_model_runtime_replica_requests_total (replica level) as the spec
// lists them. A call is recorded once at each level; a deployment outcome
// the replica list lacks (unavailable, overloaded) is "failed" or
// "rejected" there.
const (
	RuntimeOK          = "ok"
	RuntimeTimeout     = "timeout"
	RuntimeUnavailable = "unavailable"
	RuntimeOverloaded  = "overloaded"
	RuntimeRejected    = "rejected"
	RuntimeFailed      = "failed"
	// RuntimeCanceled is a replica-level outcome only: the caller canceled
	// the call before its deadline (a timeout at the deployment level).
	RuntimeCanceled = "canceled"
)

// ModelRuntime holds the metrics of the router's model deployments (workers
// it supervises or attaches to). Every method is a no-op on a nil receiver.
type ModelRuntime struct {
	ready           *prometheus.GaugeVec
	replicaReady    *prometheus.GaugeVec
	requests        *prometheus.CounterVec
	replicaRequests *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	transport       *prometheus.HistogramVec
	server          *prometheus.HistogramVec
	restarts        *prometheus.CounterVec
	inflight        *prometheus.GaugeVec
	admittedBytes   *prometheus.GaugeVec
	unknown         *prometheus.CounterVec
	stageCalls      *prometheus.CounterVec
	bundleWait      *prometheus.HistogramVec
}

// NewModelRuntime creates the model runtime metrics on reg (panicking, as
// MustRegister does, when reg already holds them).
func NewModelRuntime(reg prometheus.Registerer) *ModelRuntime {
	m := &ModelRuntime{
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "router_model_runtime_ready",
			Help: "1 when the deployment has a ready replica, else 0.",
		}, []string{"deployment"}),
		replicaReady: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "router_model_runtime_replica_ready",
			Help: "1 when the replica's worker reports every model ready, else 0.",
		}, []string{"deployment", "replica"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_model_runtime_requests_total",
			Help: "Signal calls to a model deployment by outcome (ok, timeout, unavailable, overloaded, rejected, failed).",
		}, []string{"deployment", "outcome"}),
		replicaRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_model_runtime_replica_requests_total",
			Help: "Signal calls answered by one replica by outcome (ok, failed, rejected, canceled, timeout).",
		}, []string{"deployment", "replica", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "router_model_runtime_request_duration_seconds",
			Help:    "Duration of signal calls to a model deployment, failover included.",
			Buckets: classificationBuckets,
		}, []string{"deployment"}),
		transport: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "router_model_runtime_transport_seconds",
			Help:    "Time of a worker call the worker's Server-Timing total does not account for (connection, framing, wire); only answers with Server-Timing are recorded.",
			Buckets: classificationBuckets,
		}, []string{"deployment", "surface"}),
		server: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "router_model_runtime_server_seconds",
			Help:    "Phases of worker calls as the worker's Server-Timing header reports them (parse, tokenize, queue, forward, post, serialize, total).",
			Buckets: classificationBuckets,
		}, []string{"deployment", "surface", "phase"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_model_runtime_restarts_total",
			Help: "Restarts of managed worker processes by the router's supervisor.",
		}, []string{"deployment", "replica"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "router_model_runtime_replica_inflight",
			Help: "Requests sent to the replica whose answer has not been read yet.",
		}, []string{"deployment", "replica"}),
		admittedBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "router_model_runtime_replica_admitted_bytes",
			Help: "Request body bytes sent to the replica whose answer has not been read yet.",
		}, []string{"deployment", "replica"}),
		unknown: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_model_runtime_unknown_answers_total",
			Help: "Worker answers the router could not interpret, by reason (malformed_body, too_large, wrong_count, bad_index, empty_result, unknown_label).",
		}, []string{"deployment", "reason"}),
		stageCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_model_runtime_stage_decision_calls_total",
			Help: "Decisions calls of request stages to a deployment: round first (every signal of the stage asking it had asked) or later.",
		}, []string{"deployment", "round"}),
		bundleWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "router_model_runtime_bundle_wait_seconds",
			Help:    "How long a request stage held its first question to a deployment before the decisions call bundling it went (round first or later).",
			Buckets: classificationBuckets,
		}, []string{"deployment", "round"}),
	}
	reg.MustRegister(m.ready, m.replicaReady, m.requests, m.replicaRequests, m.duration, m.transport, m.server, m.restarts,
		m.inflight, m.admittedBytes, m.unknown, m.stageCalls, m.bundleWait)
	return m
}

// SetReady records whether a replica is ready and whether its deployment is.
func (m *ModelRuntime) SetReady(deployment, replica string, replicaReady, deploymentReady bool) {
	if m == nil {
		return
	}
	m.replicaReady.WithLabelValues(deployment, replica).Set(b2f(replicaReady))
	m.ready.WithLabelValues(deployment).Set(b2f(deploymentReady))
}

// Request records one call; replica is "" when no replica was tried.
func (m *ModelRuntime) Request(deployment, replica, outcome string, d time.Duration) {
	m.RequestCanceled(deployment, replica, outcome, false, d)
}

// RequestCanceled is Request for a call the caller may have canceled: a
// canceled call counts as a timeout for the deployment and as "canceled"
// for its replica.
func (m *ModelRuntime) RequestCanceled(deployment, replica, outcome string, canceled bool, d time.Duration) {
	if m == nil {
		return
	}
	if canceled {
		outcome = RuntimeTimeout
	}
	m.requests.WithLabelValues(deployment, outcome).Inc()
	m.duration.WithLabelValues(deployment).Observe(d.Seconds())
	if replica == "" {
		return
	}
	ro := outcome
	switch outcome {
	case RuntimeUnavailable:
		ro = RuntimeFailed
	case RuntimeOverloaded:
		ro = RuntimeRejected
	}
	if canceled {
		ro = RuntimeCanceled
	}
	m.replicaRequests.WithLabelValues(deployment, replica, ro).Inc()
}

// ServerPhase records one Server-Timing phase of a worker answer.
func (m *ModelRuntime) ServerPhase(deployment, surface, phase string, d time.Duration) {
	if m == nil {
		return
	}
	m.server.WithLabelValues(deployment, surface, phase).Observe(d.Seconds())
}

// Transport records the part of a worker call its Server-Timing total does
// not cover. Callers record none for an answer without Server-Timing.
func (m *ModelRuntime) Transport(deployment, surface string, d time.Duration) {
	if m == nil {
		return
	}
	m.transport.WithLabelValues(deployment, surface).Observe(d.Seconds())
}

// Admitted moves a replica's in-flight count by n and its admitted bytes by
// bytes (negative when an answer has been read).
func (m *ModelRuntime) Admitted(deployment, replica string, n int, bytes int64) {
	if m == nil {
		return
	}
	m.inflight.WithLabelValues(deployment, replica).Add(float64(n))
	m.admittedBytes.WithLabelValues(deployment, replica).Add(float64(bytes))
}

// UnknownAnswer counts a worker answer the router could not interpret.
func (m *ModelRuntime) UnknownAnswer(deployment, reason string) {
	if m == nil {
		return
	}
	m.unknown.WithLabelValues(deployment, reason).Inc()
}

// StageDecisionCall counts a request stage's decisions call (round first
// or later).
func (m *ModelRuntime) StageDecisionCall(deployment, round string) {
	if m == nil {
		return
	}
	m.stageCalls.WithLabelValues(deployment, round).Inc()
}

// BundleWait records how long a request stage's bundled decisions call
// (round first or later) waited for questions before it was sent.
func (m *ModelRuntime) BundleWait(deployment, round string, d time.Duration) {
	if m == nil {
		return
	}
	m.bundleWait.WithLabelValues(deployment, round).Observe(d.Seconds())
}

// Restarted counts n restarts of a managed replica's worker.
func (m *ModelRuntime) Restarted(deployment, replica string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.restarts.WithLabelValues(deployment, replica).Add(float64(n))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
