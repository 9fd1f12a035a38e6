package mgmt

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/recipes"
)

// IntentRequest is the intent request of document 001.
type IntentRequest struct {
	Text    string        `json:"text" oas:"required,minLength=1"`
	Recipe  string        `json:"recipe,omitempty"`
	Options IntentOptions `json:"options,omitempty"`
}

// IntentOptions tune the intent answer.
type IntentOptions struct {
	ReturnProbabilities bool     `json:"return_probabilities,omitempty"`
	ConfidenceThreshold *float64 `json:"confidence_threshold,omitempty"`
	IncludeExplanation  bool     `json:"include_explanation,omitempty"`
}

// IntentResponse is the intent response of document 001.
type IntentResponse struct {
	Classification   IntentClass        `json:"classification"`
	Probabilities    map[string]float64 `json:"probabilities,omitempty"`
	RecommendedModel string             `json:"recommended_model"`
	RoutingDecision  string             `json:"routing_decision"`
	Method           string             `json:"method"`
	Explanation      string             `json:"explanation,omitempty"`
}

// IntentClass is the predicted category.
type IntentClass struct {
	Category         string  `json:"category"`
	Confidence       float64 `json:"confidence"`
	ProcessingTimeMS float64 `json:"processing_time_ms"`
	// BelowThreshold is true when confidence is under options.confidence_threshold.
	BelowThreshold bool `json:"below_threshold,omitempty"`
}

// generic maps a classifier category to the recipe's domain signal name:
// listed mmlu_categories translate, an equal name (case-insensitive) maps to
// itself, anything else keeps its original name.
func generic(rc *recipes.Recipe, category string) string {
	for _, d := range rc.Signals.Domains {
		for _, c := range d.MMLUCategories {
			if strings.EqualFold(c, category) {
				return d.Name
			}
		}
		if len(d.MMLUCategories) == 0 && strings.EqualFold(d.Name, category) {
			return d.Name
		}
	}
	return category
}

func (s *Server) intent(ctx context.Context, gen *engine.Generation, rc *recipes.Recipe, text string, opts IntentOptions) (*IntentResponse, error) {
	models, err := s.modelsOf(gen)
	if err != nil {
		return nil, err
	}
	return s.intentWith(ctx, gen, rc, models.Domain, text, opts)
}

// intentWith is intent with the domain classifier given (the batch's choice).
func (s *Server) intentWith(ctx context.Context, gen *engine.Generation, rc *recipes.Recipe, domain signal.Classifier, text string, opts IntentOptions) (*IntentResponse, error) {
	models := signal.Models{Domain: domain}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, modelDeadline)
	defer cancel()
	out, err := models.Domain.Classify(ctx, []string{text})
	if err != nil {
		return nil, modelErr("intent classification", err)
	}
	if len(out) != 1 || len(out[0]) == 0 {
		return nil, newErr(http.StatusInternalServerError, CodeClassificationError, "the domain classifier returned no labels")
	}
	top := out[0][0]
	for _, ls := range out[0] {
		if ls.Score > top.Score {
			top = ls
		}
	}
	res := &IntentResponse{Method: models.Domain.Method(), Classification: IntentClass{Category: generic(rc, top.Label), Confidence: top.Score}}
	if opts.ConfidenceThreshold != nil && top.Score < *opts.ConfidenceThreshold {
		res.Classification.BelowThreshold = true
	}
	if opts.ReturnProbabilities {
		res.Probabilities = map[string]float64{}
		for _, ls := range out[0] {
			res.Probabilities[generic(rc, ls.Label)] += ls.Score
		}
	}
	res.Classification.ProcessingTimeMS = ms(time.Since(start))
	route, err := gen.Route(ctx, rc.Name, &engine.Request{Model: engine.ModelMoM, Input: signal.Input{Text: text, UserTexts: []string{text}, AllTexts: []string{text}}})
	if err == nil {
		res.RecommendedModel, res.RoutingDecision = route.Model, route.Decision
		if route.Decision == "" {
			res.RoutingDecision = route.ReasonCode
		}
	}
	if opts.IncludeExplanation {
		res.Explanation = "classifier " + res.Method + " put " + top.Label + " first; recipe " + rc.Name + " maps it to " + res.Classification.Category
	}
	return res, nil
}

func (s *Server) classifyIntent(w http.ResponseWriter, r *http.Request) {
	serveTextTask(s, w, r, "intent", func(q *IntentRequest) string { return q.Text },
		func(q *IntentRequest) string { return q.Recipe },
		func(ctx context.Context, gen *engine.Generation, rc *recipes.Recipe, q *IntentRequest) (any, error) {
			return s.intent(ctx, gen, rc, q.Text, q.Options)
		})
}

// serveTextTask serves a classification endpoint over one text: decode the
// request, check its text, find its recipe on the serving generation (when
// recipe is not nil), run the task and count it in the classification
// metrics under name.
func serveTextTask[Req any](s *Server, w http.ResponseWriter, r *http.Request, name string,
	text, recipe func(*Req) string, run func(context.Context, *engine.Generation, *recipes.Recipe, *Req) (any, error)) {
	var req Req
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkText(r, "text", text(&req)); err != nil {
		writeError(w, err)
		return
	}
	gen := s.cfg.Runtime().Current()
	var rc *recipes.Recipe
	if recipe != nil {
		var err error
		if rc, err = recipeIn(gen, recipe(&req)); err != nil {
			writeError(w, err)
			return
		}
	}
	start := time.Now()
	res, err := run(r.Context(), gen, rc, &req)
	s.stats.observe(name, time.Since(start), err)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// PIIRequest is the personal-data request of document 001.
type PIIRequest struct {
	Text    string     `json:"text" oas:"required,minLength=1"`
	Recipe  string     `json:"recipe,omitempty"`
	Options PIIOptions `json:"options,omitempty"`
}

// PIIOptions tune the personal-data answer.
type PIIOptions struct {
	EntityTypes         []string `json:"entity_types,omitempty" oas:"pii-types"`
	ConfidenceThreshold *float64 `json:"confidence_threshold,omitempty"`
	ReturnPositions     bool     `json:"return_positions,omitempty"`
	MaskEntities        bool     `json:"mask_entities,omitempty"`
}

// PIIEntity is one entity found.
type PIIEntity struct {
	Type          string  `json:"type"`
	Value         string  `json:"value"`
	Confidence    float64 `json:"confidence"`
	StartPosition *int    `json:"start_position,omitempty"`
	EndPosition   *int    `json:"end_position,omitempty"`
	MaskedValue   string  `json:"masked_value,omitempty"`
	Method        string  `json:"method"`
}

// PIIResponse is the personal-data response of document 001.
type PIIResponse struct {
	HasPII                 bool        `json:"has_pii"`
	Entities               []PIIEntity `json:"entities"`
	MaskedText             string      `json:"masked_text,omitempty"`
	SecurityRecommendation string      `json:"security_recommendation"`
	ProcessingTimeMS       float64     `json:"processing_time_ms"`
}

func piiDetect(text string, opts PIIOptions) (*PIIResponse, error) {
	start := time.Now()
	want := map[string]bool{}
	for _, t := range opts.EntityTypes {
		n, err := pii.Normalize(t)
		if err != nil {
			return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "options.entity_types: %v", err)
		}
		want[n] = true
	}
	all := len(want) == 0 || want["ALL"]
	res := &PIIResponse{Entities: []PIIEntity{}}
	var masked strings.Builder
	last := 0
	for _, e := range pii.Detect(text, true) {
		if !all && !want[e.Type] {
			continue
		}
		if opts.ConfidenceThreshold != nil && e.Confidence < *opts.ConfidenceThreshold {
			continue
		}
		pe := PIIEntity{Type: e.Type, Value: e.Value, Confidence: e.Confidence, Method: e.Method}
		if opts.ReturnPositions {
			st, en := e.Start, e.End
			pe.StartPosition, pe.EndPosition = &st, &en
		}
		if opts.MaskEntities {
			pe.MaskedValue = "[" + e.Type + "]"
			masked.WriteString(text[last:e.Start])
			masked.WriteString(pe.MaskedValue)
			last = e.End
		}
		res.Entities = append(res.Entities, pe)
	}
	res.HasPII = len(res.Entities) > 0
	if opts.MaskEntities {
		masked.WriteString(text[last:])
		res.MaskedText = masked.String()
	}
	res.SecurityRecommendation = "allow"
	if res.HasPII {
		res.SecurityRecommendation = "block"
	}
	res.ProcessingTimeMS = ms(time.Since(start))
	return res, nil
}

func (s *Server) classifyPII(w http.ResponseWriter, r *http.Request) {
	serveTextTask(s, w, r, "pii", func(q *PIIRequest) string { return q.Text }, nil,
		func(_ context.Context, _ *engine.Generation, _ *recipes.Recipe, q *PIIRequest) (any, error) {
			return piiDetect(q.Text, q.Options)
		})
}

// SecurityRequest is the security request of document 001.
type SecurityRequest struct {
	Text    string          `json:"text" oas:"required,minLength=1"`
	Recipe  string          `json:"recipe,omitempty"`
	Options SecurityOptions `json:"options,omitempty"`
}

// SecurityOptions tune the security answer.
type SecurityOptions struct {
	DetectionTypes   []string `json:"detection_types,omitempty"`
	Sensitivity      string   `json:"sensitivity,omitempty"`
	IncludeReasoning bool     `json:"include_reasoning,omitempty"`
}

// SecurityResponse is the security response of document 001.
type SecurityResponse struct {
	IsJailbreak      bool     `json:"is_jailbreak"`
	RiskScore        float64  `json:"risk_score"`
	DetectionTypes   []string `json:"detection_types"`
	Confidence       float64  `json:"confidence"`
	Threshold        float64  `json:"threshold"`
	Recommendation   string   `json:"recommendation"`
	Reasoning        string   `json:"reasoning,omitempty"`
	PatternsDetected []string `json:"patterns_detected"`
	Method           string   `json:"method"`
	ProcessingTimeMS float64  `json:"processing_time_ms"`
}

func (s *Server) security(ctx context.Context, gen *engine.Generation, rc *recipes.Recipe, text string, opts SecurityOptions) (*SecurityResponse, error) {
	return s.securityWith(ctx, gen, rc, nil, text, opts)
}

// securityWith is security with the jailbreak classifier given (nil: the
// generation's).
func (s *Server) securityWith(ctx context.Context, gen *engine.Generation, rc *recipes.Recipe, guard signal.Classifier, text string, opts SecurityOptions) (*SecurityResponse, error) {
	threshold := 0.5
	if len(rc.Signals.Jailbreak) > 0 && rc.Signals.Jailbreak[0].Threshold > 0 {
		threshold = rc.Signals.Jailbreak[0].Threshold
	}
	switch opts.Sensitivity {
	case "":
	case "high":
		threshold = 0.3
	case "medium":
		threshold = 0.5
	case "low":
		threshold = 0.7
	default:
		return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "options.sensitivity must be high, medium or low (got %q)", opts.Sensitivity)
	}
	types := opts.DetectionTypes
	for _, t := range types {
		if !slices.Contains([]string{"jailbreak", "prompt_injection", "manipulation"}, t) {
			return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "options.detection_types: %q is not jailbreak, prompt_injection or manipulation", t)
		}
	}
	if len(types) == 0 {
		types = []string{"jailbreak", "prompt_injection"}
	}
	if guard == nil {
		models, err := s.modelsOf(gen)
		if err != nil {
			return nil, err
		}
		guard = models.Jailbreak
	}
	models := signal.Models{Jailbreak: guard}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, modelDeadline)
	defer cancel()
	out, err := models.Jailbreak.Classify(ctx, []string{text})
	if err != nil {
		return nil, modelErr("jailbreak classification", err)
	}
	score := 0.0
	if len(out) == 1 {
		for _, ls := range out[0] {
			if ls.Label == "jailbreak" {
				score = ls.Score
			}
		}
	}
	res := &SecurityResponse{RiskScore: score, DetectionTypes: types, Threshold: threshold, PatternsDetected: []string{}, Method: models.Jailbreak.Method()}
	res.IsJailbreak = score >= threshold
	res.Confidence = score
	if !res.IsJailbreak {
		res.Confidence = 1 - score
	}
	if lexical.HasInjectionPhrase(text) {
		res.PatternsDetected = append(res.PatternsDetected, "instruction_override")
	}
	res.Recommendation = "allow"
	if res.IsJailbreak {
		res.Recommendation = "block"
	}
	if opts.IncludeReasoning {
		res.Reasoning = "classifier " + res.Method + " scored the text against the threshold of the recipe's jailbreak signal (or the sensitivity); known injection phrasings are listed in patterns_detected"
	}
	res.ProcessingTimeMS = ms(time.Since(start))
	return res, nil
}

func (s *Server) classifySecurity(w http.ResponseWriter, r *http.Request) {
	serveTextTask(s, w, r, "security", func(q *SecurityRequest) string { return q.Text },
		func(q *SecurityRequest) string { return q.Recipe },
		func(ctx context.Context, gen *engine.Generation, rc *recipes.Recipe, q *SecurityRequest) (any, error) {
			return s.security(ctx, gen, rc, q.Text, q.Options)
		})
}

// CombinedRequest runs several tasks on one text.
type CombinedRequest struct {
	Text    string          `json:"text" oas:"required,minLength=1"`
	Recipe  string          `json:"recipe,omitempty"`
	Tasks   []string        `json:"tasks,omitempty" oas:"items-enum=intent|pii|security"`
	Options CombinedOptions `json:"options,omitempty"`
}

// CombinedOptions are keyed by task.
type CombinedOptions struct {
	Intent   IntentOptions   `json:"intent,omitempty"`
	PII      PIIOptions      `json:"pii,omitempty"`
	Security SecurityOptions `json:"security,omitempty"`
}

// CombinedResponse answers combined classification.
type CombinedResponse struct {
	Intent                *IntentResponse   `json:"intent,omitempty"`
	PII                   *PIIResponse      `json:"pii,omitempty"`
	Security              *SecurityResponse `json:"security,omitempty"`
	OverallRecommendation Overall           `json:"overall_recommendation"`
	TotalProcessingTimeMS float64           `json:"total_processing_time_ms"`
}

// Overall is the combined verdict.
type Overall struct {
	Action      string  `json:"action"`
	TargetModel string  `json:"target_model,omitempty"`
	Confidence  float64 `json:"confidence"`
}

func (s *Server) classifyCombined(w http.ResponseWriter, r *http.Request) {
	var req CombinedRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkText(r, "text", req.Text); err != nil {
		writeError(w, err)
		return
	}
	tasks := req.Tasks
	if len(tasks) == 0 {
		tasks = []string{"intent", "pii", "security"}
	}
	gen := s.cfg.Runtime().Current()
	rc, err := recipeIn(gen, req.Recipe)
	if err != nil {
		writeError(w, err)
		return
	}
	start := time.Now()
	out := CombinedResponse{OverallRecommendation: Overall{Action: "route", Confidence: 1}}
	for _, t := range tasks {
		var err error
		switch t {
		case "intent":
			out.Intent, err = s.intent(r.Context(), gen, rc, req.Text, req.Options.Intent)
		case "pii":
			out.PII, err = piiDetect(req.Text, req.Options.PII)
		case "security":
			out.Security, err = s.security(r.Context(), gen, rc, req.Text, req.Options.Security)
		default:
			err = newErr(http.StatusBadRequest, CodeInvalidInput, "tasks: %q is not intent, pii or security", t)
		}
		if err != nil {
			s.stats.observe("combined", time.Since(start), err)
			writeError(w, err)
			return
		}
	}
	if out.Intent != nil {
		out.OverallRecommendation.TargetModel = out.Intent.RecommendedModel
		out.OverallRecommendation.Confidence = out.Intent.Classification.Confidence
	}
	if (out.Security != nil && out.Security.IsJailbreak) || (out.PII != nil && out.PII.HasPII) {
		out.OverallRecommendation.Action = "block"
		out.OverallRecommendation.TargetModel = ""
		if out.Security != nil && out.Security.IsJailbreak {
			out.OverallRecommendation.Confidence = out.Security.Confidence
		}
	}
	out.TotalProcessingTimeMS = ms(time.Since(start))
	s.stats.observe("combined", time.Since(start), nil)
	writeJSON(w, http.StatusOK, out)
}

// BatchRequest is the batch request of document 001.
type BatchRequest struct {
	Texts    []string `json:"texts" oas:"required,minItems=1"`
	TaskType string   `json:"task_type,omitempty" oas:"enum=intent|pii|security"`
	Recipe   string   `json:"recipe,omitempty"`
	// Options are as for intent: return_probabilities asks for each
	// result's probabilities (intent), confidence_threshold sets the
	// low-confidence cut-off of statistics.low_confidence_count (0.5 when
	// unset).
	Options *IntentOptions `json:"options,omitempty"`
}

// defaultLowConfidence is the batch statistics' low-confidence cut-off when
// options.confidence_threshold is unset.
const defaultLowConfidence = 0.5

// BatchResult is one text's result: the intent fields for task_type intent,
// the pii or security fields otherwise.
type BatchResult struct {
	Category         string             `json:"category,omitempty"`
	Confidence       float64            `json:"confidence"`
	ProcessingTimeMS float64            `json:"processing_time_ms"`
	Probabilities    map[string]float64 `json:"probabilities,omitempty"`
	HasPII           *bool              `json:"has_pii,omitempty"`
	Entities         []PIIEntity        `json:"entities,omitempty"`
	IsJailbreak      *bool              `json:"is_jailbreak,omitempty"`
	RiskScore        *float64           `json:"risk_score,omitempty"`
}

// BatchResponse is the batch response of document 001.
type BatchResponse struct {
	// Model is the classifier that answered (intent and security): the
	// first of the batch model selection order that answers.
	Model            string          `json:"model,omitempty"`
	Results          []BatchResult   `json:"results"`
	TotalCount       int             `json:"total_count"`
	ProcessingTimeMS float64         `json:"processing_time_ms"`
	Statistics       BatchStatistics `json:"statistics"`
}

// BatchStatistics summarise a batch.
type BatchStatistics struct {
	CategoryDistribution map[string]int `json:"category_distribution"`
	AvgConfidence        float64        `json:"avg_confidence"`
	LowConfidenceCount   int            `json:"low_confidence_count"`
}

func maxBatch(gen *engine.Generation) int {
	if n := gen.Document().Global.Services.API.BatchClassification.MaxBatchSize; n > 0 {
		return n
	}
	return 100
}

func batchLimit(gen *engine.Generation, n int) error {
	if m := maxBatch(gen); n > m {
		e := newErr(http.StatusBadRequest, CodeInvalidInput, "the batch has %d items, over global.services.api.batch_classification.max_batch_size %d", n, m)
		e.body.Error.Limit = &InputLimit{MaxBatchSize: m, BatchSize: n}
		return e
	}
	return nil
}

func (s *Server) classifyBatch(w http.ResponseWriter, r *http.Request) {
	var req BatchRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Texts) == 0 {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "texts must be a non-empty list of strings"))
		return
	}
	gen := s.cfg.Runtime().Current()
	if err := batchLimit(gen, len(req.Texts)); err != nil {
		writeError(w, err)
		return
	}
	for _, t := range req.Texts {
		if err := checkText(r, "every text", t); err != nil {
			writeError(w, err)
			return
		}
	}
	rc, err := recipeIn(gen, req.Recipe)
	if err != nil {
		writeError(w, err)
		return
	}
	task := req.TaskType
	if task == "" {
		task = "intent"
	}
	var opts IntentOptions
	if req.Options != nil {
		opts = *req.Options
	}
	low := defaultLowConfidence
	if opts.ConfidenceThreshold != nil {
		low = *opts.ConfidenceThreshold
	}
	start := time.Now()
	out := BatchResponse{Results: []BatchResult{}, Statistics: BatchStatistics{CategoryDistribution: map[string]int{}}}
	// One classifier answers the whole batch: the first candidate (in the
	// model selection order) that classifies the first text.
	var chosen signal.Classifier
	// The first text's answer from the chosen classifier, reused below.
	var firstIntent *IntentResponse
	var firstSecurity *SecurityResponse
	if task == "intent" || task == "security" {
		kind := map[string]string{"intent": "domain", "security": "jailbreak"}[task]
		cands, err := s.batchCandidates(gen, kind)
		if err != nil {
			writeError(w, batchError(err))
			return
		}
		var first error
		for _, c := range cands {
			if task == "intent" {
				firstIntent, err = s.intentWith(r.Context(), gen, rc, c.c, req.Texts[0], IntentOptions{ReturnProbabilities: opts.ReturnProbabilities})
			} else {
				firstSecurity, err = s.securityWith(r.Context(), gen, rc, c.c, req.Texts[0], SecurityOptions{})
			}
			if err == nil {
				chosen = c.c
				break
			}
			if first == nil {
				first = err
			}
		}
		if chosen == nil {
			writeError(w, batchError(first))
			return
		}
		out.Model = chosen.Method()
	}
	var sum float64
	for i, t := range req.Texts {
		var br BatchResult
		switch task {
		case "intent":
			ir, err := firstIntent, error(nil)
			if i > 0 {
				ir, err = s.intentWith(r.Context(), gen, rc, chosen, t, IntentOptions{ReturnProbabilities: opts.ReturnProbabilities})
			}
			if err != nil {
				writeError(w, batchError(err))
				return
			}
			br = BatchResult{Category: ir.Classification.Category, Confidence: ir.Classification.Confidence, ProcessingTimeMS: ir.Classification.ProcessingTimeMS, Probabilities: ir.Probabilities}
			out.Statistics.CategoryDistribution[br.Category]++
		case "pii":
			pr, err := piiDetect(t, PIIOptions{ReturnPositions: true})
			if err != nil {
				writeError(w, batchError(err))
				return
			}
			has := pr.HasPII
			br = BatchResult{HasPII: &has, Entities: pr.Entities, Confidence: 1, ProcessingTimeMS: pr.ProcessingTimeMS}
			for _, e := range pr.Entities {
				out.Statistics.CategoryDistribution[e.Type]++
			}
		case "security":
			sr, err := firstSecurity, error(nil)
			if i > 0 {
				sr, err = s.securityWith(r.Context(), gen, rc, chosen, t, SecurityOptions{})
			}
			if err != nil {
				writeError(w, batchError(err))
				return
			}
			is, risk := sr.IsJailbreak, sr.RiskScore
			br = BatchResult{IsJailbreak: &is, RiskScore: &risk, Confidence: sr.Confidence, ProcessingTimeMS: sr.ProcessingTimeMS}
			if is {
				out.Statistics.CategoryDistribution["jailbreak"]++
			} else {
				out.Statistics.CategoryDistribution["benign"]++
			}
		default:
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "task_type must be intent, pii or security (got %q)", task))
			return
		}
		sum += br.Confidence
		if br.Confidence < low {
			out.Statistics.LowConfidenceCount++
		}
		out.Results = append(out.Results, br)
	}
	out.TotalCount = len(out.Results)
	out.Statistics.AvgConfidence = sum / float64(len(out.Results))
	out.ProcessingTimeMS = ms(time.Since(start))
	s.stats.observe("batch", time.Since(start), nil)
	writeJSON(w, http.StatusOK, out)
}

// batchError gives a batch's server-side failures the batch codes of
// document 001: UNIFIED_CLASSIFIER_UNAVAILABLE for a classifier that is not
// there (503), UNIFIED_CLASSIFICATION_ERROR for one that failed (500).
// Client errors keep their codes.
func batchError(err error) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return newErr(http.StatusInternalServerError, CodeUnifiedClassificationError, "%v", err)
	}
	switch {
	case ae.status == http.StatusServiceUnavailable:
		ae.body.Error.Code = CodeUnifiedClassifierUnavailable
	case ae.status >= 500:
		ae.body.Error.Code = CodeUnifiedClassificationError
	}
	return ae
}
