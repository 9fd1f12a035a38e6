package metrics

import (
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/recipes"
)

// Category is the category label of a routed request: its decision, or
// CategoryDefault when none matched. A nil result (the request never reached
// routing) is CategoryDefault too.
func Category(res *engine.Result) string {
	if res == nil || res.Decision == "" {
		return CategoryDefault
	}
	return res.Decision
}

// ModelLabel is the model label of a routed request: the selected model, else
// the model the client asked for (a blocked request has no selected model),
// else UnknownModel.
func ModelLabel(res *engine.Result) string {
	switch {
	case res == nil:
		return UnknownModel
	case res.Model != "":
		return res.Model
	case res.RequestedModel != "":
		return res.RequestedModel
	}
	return UnknownModel
}

// Request records one finished request on endpoint: router_requests_total and
// router_request_duration_seconds. endpoint must come from a fixed set (the
// route pattern, never the raw path) to bound label cardinality.
func (m *Metrics) Request(endpoint, category string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requestCounter(endpoint, category, status).Inc()
	m.durationObserver(endpoint).Observe(seconds(d))
}

// Routed records what routing decided for one request: classification time,
// reason code, safety detections (and the error a block counts as) and the
// reasoning mode. Call it once per request that Route returned a result for,
// blocked or not.
//
// Reasoning metrics are not recorded for model_specified requests: the client's
// own reasoning fields are forwarded untouched, so there is no decision to count.
func (m *Metrics) Routed(res *engine.Result) {
	if m == nil {
		return
	}
	m.classificationDuration.Observe(seconds(res.ClassificationTime))
	model := ModelLabel(res)
	m.reasonCodeCounter(res.ReasonCode, model).Inc()

	blockCode := ""
	if res.Block != nil {
		blockCode = res.Block.Code
	}
	if res.PIIDetected || blockCode == "pii_detected" {
		m.piiDetections.WithLabelValues(action(blockCode == "pii_detected")).Inc()
	}
	if res.JailbreakDetected || blockCode == "jailbreak_detected" {
		m.jailbreakAttempts.WithLabelValues(action(blockCode == "jailbreak_detected")).Inc()
	}
	switch blockCode {
	case "pii_detected":
		m.errorCounter(model, ReasonPIIPolicyDenied).Inc()
		return
	case "jailbreak_detected":
		m.errorCounter(model, ReasonJailbreakBlock).Inc()
		return
	}
	if res.ReasonCode == engine.ReasonModelSpecified {
		return
	}
	r := res.Reasoning
	effort := ""
	if r.Enabled {
		effort = r.Effort
	}
	m.reasoningCounter(Category(res), model, r.Enabled, effort).Inc()
	if r.Enabled && r.Family != "" && r.Param != "" {
		m.templateUsage.WithLabelValues(r.Family, r.Param).Inc()
	}
	// Only reasoning_effort families send an effort; a chat_template_kwargs flag
	// has none, so counting it there would report efforts no backend received.
	if r.Enabled && r.Type == recipes.FamilyReasoningEffort {
		m.effortUsage.WithLabelValues(r.Family, r.Effort).Inc()
	}
}

func action(blocked bool) string {
	if blocked {
		return ActionBlocked
	}
	return ActionAllowed
}

// ModelRequest counts one request sent to model's backend
// (llm_model_requests_total).
func (m *Metrics) ModelRequest(model string) {
	if m == nil {
		return
	}
	modelCounter(m.modelRequests, &m.modelRequestsC, model).Inc()
}

// Error counts one failed request (llm_request_errors_total); reason is one of
// the Reason constants.
func (m *Metrics) Error(model, reason string) {
	if m == nil {
		return
	}
	m.errorCounter(model, reason).Inc()
}

// Usage records the token usage an upstream reported for model and, when the
// model has pricing, its cost per the spec's formula (engine/cost).
func (m *Metrics) Usage(model string, pricing *recipes.Pricing, u cost.Usage) {
	if m == nil {
		return
	}
	if u.PromptTokens > 0 {
		modelCounter(m.promptTokens, &m.promptTokensC, model).Add(float64(u.PromptTokens))
	}
	if u.CompletionTokens > 0 {
		modelCounter(m.completionTokens, &m.completionTokensC, model).Add(float64(u.CompletionTokens))
	}
	if amount, currency, ok := cost.Of(pricing, u); ok {
		m.costCounter(model, currency).Add(amount)
	}
}

// TTFT observes the time to first token of one answer from model, measured from
// when the router began processing the request.
func (m *Metrics) TTFT(model string, d time.Duration) {
	if m == nil {
		return
	}
	modelObserver(m.ttft, &m.ttftC, model).Observe(seconds(d))
}

// TPOT observes time per output token: the completion latency (from when the
// request went upstream to the answer's end, streamed or not) divided by the
// completion tokens, as the spec defines it. Nothing is recorded without
// tokens.
func (m *Metrics) TPOT(model string, completionLatency time.Duration, completionTokens int64) {
	if m == nil {
		return
	}
	if completionTokens <= 0 {
		return
	}
	modelObserver(m.tpot, &m.tpotC, model).Observe(seconds(completionLatency) / float64(completionTokens))
}

// SetCache publishes the response cache's size and hit ratio (router_cache_size,
// router_cache_hit_ratio) when no source is watched (WatchCache); both read 0
// until then.
func (m *Metrics) SetCache(entries int, hitRatio float64) {
	if m == nil {
		return
	}
	m.cache.mu.Lock()
	m.cache.entries, m.cache.hitRatio = float64(entries), hitRatio
	m.cache.mu.Unlock()
}

// SetClassificationAccuracy publishes the measured accuracy of category
// (router_classification_accuracy): internal/replay computes it from the
// outcomes submitted on replay records (POST /api/v1/observability/outcomes,
// target decision), so a category has no series until one is judged.
func (m *Metrics) SetClassificationAccuracy(category string, accuracy float64) {
	if m == nil {
		return
	}
	m.classificationAccuracy.WithLabelValues(category).Set(accuracy)
}

// ResponsePhaseSkipped counts a streamed answer the decision's response-phase
// plugins were not given (junction_response_phase_skipped_total); reason is
// one of internal/dataplane's Skip reasons.
func (m *Metrics) ResponsePhaseSkipped(reason string) {
	if m == nil {
		return
	}
	m.responsePhaseSkipped.WithLabelValues(reason).Inc()
}
