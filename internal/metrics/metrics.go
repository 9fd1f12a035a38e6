// Package metrics defines Junction's Prometheus metrics, with the exact names and
// labels of the spec's metrics table, and the helpers that record them.
//
// Both data-plane front ends (internal/gateway and internal/extproc) record through
// the helpers here, most of which take the engine.Result of a request, so that a
// request is labelled the same way whichever way it arrived. Metrics are
// registered on the Registerer given to New, never on the global registry, so
// tests and several servers in one process do not collide.
//
// This package records; it must not decide anything about a request.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Reasons of llm_request_errors_total, as the spec lists them.
const (
	ReasonTimeout              = "timeout"
	ReasonUpstream4xx          = "upstream_4xx"
	ReasonUpstream5xx          = "upstream_5xx"
	ReasonPIIPolicyDenied      = "pii_policy_denied"
	ReasonJailbreakBlock       = "jailbreak_block"
	ReasonParseError           = "parse_error"
	ReasonSerializationError   = "serialization_error"
	ReasonCancellation         = "cancellation"
	ReasonClassificationFailed = "classification_failed"
	ReasonUnknown              = "unknown"
)

// Actions of router_pii_detections_total and router_jailbreak_attempts_total.
const (
	// ActionBlocked: the detection answered the client 403.
	ActionBlocked = "blocked"
	// ActionAllowed: the detection was noted (and may have steered routing) but
	// the request went on.
	ActionAllowed = "allowed"
)

// CategoryDefault labels requests that matched no decision (and requests that
// never reached routing), in router_requests_total and
// llm_reasoning_decisions_total.
const CategoryDefault = "default"

// UnknownModel labels errors that happen before the request's model is known
// (an unparsable body, a panic).
const UnknownModel = "unknown"

// Names lists every metric name of the spec's table plus the token counters,
// in the table's order. Tests use it to check the exposition.
var Names = []string{
	"router_requests_total",
	"router_request_duration_seconds",
	"router_classification_accuracy",
	"router_classification_duration_seconds",
	"router_cache_hit_ratio",
	"router_cache_size",
	"router_pii_detections_total",
	"router_jailbreak_attempts_total",
	"llm_request_errors_total",
	"llm_model_requests_total",
	"llm_reasoning_decisions_total",
	"llm_reasoning_template_usage_total",
	"llm_reasoning_effort_usage_total",
	"llm_model_cost_total",
	"llm_routing_reason_codes_total",
	"llm_model_ttft_seconds",
	"llm_model_tpot_seconds",
	"llm_model_prompt_tokens_total",
	"llm_model_completion_tokens_total",
}

// Buckets. LLM latencies span milliseconds (a cached or fast answer) to minutes
// (long reasoning), so the request and TTFT buckets reach 5 minutes; TPOT of real
// models is a few to a few hundred milliseconds; classification is sub-ms for
// lexical signals and up to seconds for model-backed ones.
var (
	requestBuckets        = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	ttftBuckets           = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60, 120}
	tpotBuckets           = []float64{0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1}
	classificationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
)

// Metrics holds every collector. Use the methods to record; the collectors are
// unexported so that labels are always written the same way. Every method is a
// no-op on a nil *Metrics, so a front end built without metrics needs no checks.
type Metrics struct {
	requests               *prometheus.CounterVec
	requestDuration        *prometheus.HistogramVec
	classificationAccuracy *prometheus.GaugeVec
	classificationDuration prometheus.Histogram
	cache                  *cacheCollector
	backends               *backendCollector
	piiDetections          *prometheus.CounterVec
	jailbreakAttempts      *prometheus.CounterVec
	requestErrors          *prometheus.CounterVec
	modelRequests          *prometheus.CounterVec
	reasoningDecisions     *prometheus.CounterVec
	templateUsage          *prometheus.CounterVec
	effortUsage            *prometheus.CounterVec
	modelCost              *prometheus.CounterVec
	reasonCodes            *prometheus.CounterVec
	ttft                   *prometheus.HistogramVec
	tpot                   *prometheus.HistogramVec
	promptTokens           *prometheus.CounterVec
	completionTokens       *prometheus.CounterVec
	// responsePhaseSkipped is Junction's own (not in the spec's table).
	responsePhaseSkipped *prometheus.CounterVec

	// Children of the series recorded on every request, resolved once per
	// label set (children.go).
	requestsC           children[requestKey, prometheus.Counter]
	requestDurationC    children[string, prometheus.Observer]
	reasonCodesC        children[[2]string, prometheus.Counter]
	reasoningDecisionsC children[reasoningKey, prometheus.Counter]
	requestErrorsC      children[[2]string, prometheus.Counter]
	modelRequestsC      children[string, prometheus.Counter]
	promptTokensC       children[string, prometheus.Counter]
	completionTokensC   children[string, prometheus.Counter]
	modelCostC          children[[2]string, prometheus.Counter]
	ttftC               children[string, prometheus.Observer]
	tpotC               children[string, prometheus.Observer]
}

// New creates the metrics and registers them on reg. It panics if reg already
// holds metrics of these names, as prometheus.MustRegister does: that is a
// programming error, not a runtime condition.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_requests_total",
			Help: "Requests handled by the router, by endpoint, decision category and HTTP status.",
		}, []string{"endpoint", "category", "status"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "router_request_duration_seconds",
			Help:    "Time from receiving a request to finishing its response, by endpoint.",
			Buckets: requestBuckets,
		}, []string{"endpoint"}),
		classificationAccuracy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "router_classification_accuracy",
			Help: "Classification accuracy per category, measured against labelled outcomes; unset until a labelled source reports.",
		}, []string{"category"}),
		classificationDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "router_classification_duration_seconds",
			Help:    "Time spent computing a request's signals.",
			Buckets: classificationBuckets,
		}),
		cache:    newCacheCollector(),
		backends: newBackendCollector(),
		piiDetections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_pii_detections_total",
			Help: "Requests in which personal data was detected, by the action taken (blocked or allowed).",
		}, []string{"action"}),
		jailbreakAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "router_jailbreak_attempts_total",
			Help: "Requests classified as jailbreak or prompt-injection attempts, by the action taken (blocked or allowed).",
		}, []string{"action"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llm_request_errors_total",
			Help: "Failed requests by model and reason.",
		}, []string{"model", "reason"}),
		modelRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llm_model_requests_total",
			Help: "Requests sent to each backend model; the denominator of error ratios.",
		}, []string{"model"}),
		reasoningDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llm_reasoning_decisions_total",
			Help: "Reasoning-mode decisions by decision category, model, enabled and effort.",
		}, []string{"category", "model", "enabled", "effort"}),
		templateUsage: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llm_reasoning_template_usage_total",
			Help: "Requests whose reasoning was switched on through a family's template parameter.",
		}, []string{"family", "param"}),
		effortUsage: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llm_reasoning_effort_usage_total",
			Help: "Reasoning efforts sent to reasoning_effort families.",
		}, []string{"family", "effort"}),
		modelCost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llm_model_cost_total",
			Help: "Accumulated cost per model: (prompt_tokens*prompt_per_1m + completion_tokens*completion_per_1m) / 1e6, in the model's currency.",
		}, []string{"model", "currency"}),
		reasonCodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llm_routing_reason_codes_total",
			Help: "Routing outcomes by reason code and model.",
		}, []string{"reason_code", "model"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "llm_model_ttft_seconds",
			Help:    "Time to first token since the router began processing the request (for non-streamed answers, to the whole answer).",
			Buckets: ttftBuckets,
		}, []string{"model"}),
		tpot: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "llm_model_tpot_seconds",
			Help:    "Time per output token: completion latency after the first token divided by completion tokens.",
			Buckets: tpotBuckets,
		}, []string{"model"}),
		promptTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llm_model_prompt_tokens_total",
			Help: "Prompt tokens reported by upstreams, per model.",
		}, []string{"model"}),
		completionTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llm_model_completion_tokens_total",
			Help: "Completion tokens reported by upstreams, per model.",
		}, []string{"model"}),
		responsePhaseSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "junction_response_phase_skipped_total",
			Help: "Streamed answers whose decision has response-phase plugins (a response cache) but that were not given to them, by reason: too_large (past the response-phase bound), incomplete (no [DONE] reached the client: upstream error, cancelled client), unreadable (a chunk that is not a chat.completion.chunk, or an error event).",
		}, []string{"reason"}),
	}
	reg.MustRegister(
		m.requests, m.requestDuration, m.classificationAccuracy, m.classificationDuration,
		m.cache, m.piiDetections, m.jailbreakAttempts,
		m.requestErrors, m.modelRequests, m.reasoningDecisions, m.templateUsage,
		m.effortUsage, m.modelCost, m.reasonCodes, m.ttft, m.tpot,
		m.promptTokens, m.completionTokens, m.responsePhaseSkipped, m.backends,
	)
	return m
}

// Handler serves g's metrics in the text exposition format (GET /metrics).
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// seconds converts without losing sub-microsecond durations.
func seconds(d time.Duration) float64 { return d.Seconds() }
