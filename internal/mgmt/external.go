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
	"github.com/junction-router/junction/internal/extmodel"
	"github.com/junction-router/junction/internal/inference/worker/client"
	"github.com/junction-router/junction/recipes"
)

// The fact-check, user-feedback and NLI diagnostics have no local model.
// A global.model_catalog.bindings entry of the task (fact_check,
// user_feedback, nli) names a model deployment whose sequence classifier
// answers (its labels must be the task's); otherwise they ask the first
// global.external_models entry with model_role classification a
// constrained question; with neither they answer 503.

// Labels the external model may answer (the only ones accepted).
const (
	LabelNeedsFactCheck = "needs_fact_check"
	LabelNoFactCheck    = "no_fact_check_needed"

	FeedbackSatisfied         = "satisfied"
	FeedbackNeedClarification = "need_clarification"
	FeedbackWrongAnswer       = "wrong_answer"
	FeedbackWantDifferent     = "want_different"

	NLIEntailment    = "entailment"
	NLINeutral       = "neutral"
	NLIContradiction = "contradiction"
)

// methodExternal is the method of answers that came from an external model,
// methodDeployment of those a model deployment's worker classified.
const (
	methodExternal   = "external_model"
	methodDeployment = "model_deployment"
)

var (
	factCheckQuestion = extmodel.Question{
		Task:   "You judge whether a text makes factual claims that should be fact checked (dates, numbers, events, statements about the world), as opposed to opinions, greetings, creative requests or code.",
		Labels: []string{LabelNeedsFactCheck, LabelNoFactCheck},
	}
	feedbackQuestion = extmodel.Question{
		Task:   "You classify a user's follow-up message to an assistant's answer: satisfied (thanks, approval), need_clarification (asks to explain or expand), wrong_answer (says the answer is incorrect), want_different (asks for another approach or format).",
		Labels: []string{FeedbackSatisfied, FeedbackNeedClarification, FeedbackWrongAnswer, FeedbackWantDifferent},
	}
	nliQuestion = extmodel.Question{
		Task:   "You judge natural-language inference: given a premise and a hypothesis, answer entailment if the premise implies the hypothesis, contradiction if it rules it out, neutral otherwise.",
		Labels: []string{NLIEntailment, NLINeutral, NLIContradiction},
	}
)

// FactCheckResponse answers fact-check classification.
type FactCheckResponse struct {
	NeedsFactCheck   bool    `json:"needs_fact_check"`
	Label            string  `json:"label" oas:"enum=needs_fact_check|no_fact_check_needed"`
	Model            string  `json:"model"`
	Method           string  `json:"method"`
	ProcessingTimeMS float64 `json:"processing_time_ms"`
}

// FeedbackResponse answers user-feedback classification.
type FeedbackResponse struct {
	FeedbackType     string  `json:"feedback_type" oas:"enum=satisfied|need_clarification|wrong_answer|want_different"`
	Model            string  `json:"model"`
	Method           string  `json:"method"`
	ProcessingTimeMS float64 `json:"processing_time_ms"`
}

// NLIResponse answers a premise/hypothesis pair.
type NLIResponse struct {
	Label            string  `json:"label" oas:"enum=entailment|neutral|contradiction"`
	Model            string  `json:"model"`
	Method           string  `json:"method"`
	ProcessingTimeMS float64 `json:"processing_time_ms"`
}

// ask answers q from the task's bound deployment (kind: its bindings key;
// pair: the premise and hypothesis of an NLI question) when the serving
// configuration binds one, else from the classification external model.
// method says which answered.
func (s *Server) ask(ctx context.Context, gen *engine.Generation, task, kind string, q extmodel.Question, pair *client.TextPair) (label, model, method string, took time.Duration, err error) {
	if b := boundDiagnostic(gen, kind); b != nil {
		label, model, took, err = s.askDeployment(ctx, task, kind, b, q.Labels, q.Input, pair)
		return label, model, methodDeployment, took, err
	}
	label, model, took, err = s.askExternal(ctx, gen, task, q)
	return label, model, methodExternal, took, err
}

// boundDiagnostic is the configuration's binding of kind, or nil.
func boundDiagnostic(gen *engine.Generation, kind string) *recipes.ModelBinding {
	mc := gen.Document().Global.ModelCatalog
	if mc == nil {
		return nil
	}
	for _, nb := range mc.Bindings.Each() {
		if nb.Kind == kind {
			return nb.Binding
		}
	}
	return nil
}

// askDeployment classifies text (or pair) on the bound deployment's worker
// and returns the top label, which with every other label of the answer
// must be one of labels (case-insensitive; not_entailment reads as neutral).
func (s *Server) askDeployment(ctx context.Context, task, kind string, b *recipes.ModelBinding, labels []string, text string, pair *client.TextPair) (label, model string, took time.Duration, err error) {
	model = "worker:" + b.Deployment
	if b.Head != "" {
		model += "/" + b.Head
	}
	var p *client.Pool
	if s.opts.Deployment != nil {
		p = s.opts.Deployment(b.Deployment)
	}
	if p == nil {
		return "", model, 0, newErr(http.StatusServiceUnavailable, CodeModelNotLoaded,
			"global.model_catalog.bindings.%s names deployment %q, which this process does not run (global.router.enabled false, or not started yet); nothing was classified", kind, b.Deployment)
	}
	c := client.NewClassifier(p, model, client.ClassifyOptions{Head: b.Head, Overflow: "truncate"})
	start := time.Now()
	var dists [][]signal.LabelScore
	if pair != nil {
		dists, err = c.ClassifyPairs(ctx, []client.TextPair{*pair})
	} else {
		dists, err = c.Classify(ctx, []string{text})
	}
	took = time.Since(start)
	switch {
	case err != nil && ctx.Err() != nil:
		return "", model, took, newErr(http.StatusRequestTimeout, CodeTimeout, "%s: deployment %q: %v", task, b.Deployment, err)
	case err != nil:
		return "", model, took, newErr(http.StatusServiceUnavailable, CodeModelNotLoaded, "%s: deployment %q: %v; nothing was classified", task, b.Deployment, err)
	case len(dists) != 1 || len(dists[0]) == 0:
		return "", model, took, newErr(http.StatusInternalServerError, CodeClassificationError, "%s: deployment %q answered no labels", task, b.Deployment)
	}
	var got []string
	fits := true
	for i, ls := range dists[0] {
		got = append(got, ls.Label)
		l := strings.ToLower(ls.Label)
		if l == "not_entailment" && kind == "nli" {
			l = NLINeutral
		}
		if !slices.Contains(labels, l) {
			fits = false
		}
		if i == 0 {
			label = l
		}
	}
	if !fits {
		return "", model, took, newErr(http.StatusInternalServerError, CodeClassificationError,
			"%s: deployment %q serves a model with the labels %s, not the %s labels %s: bind global.model_catalog.bindings.%s to a %s classifier",
			task, b.Deployment, strings.Join(got, ", "), task, strings.Join(labels, ", "), kind, task)
	}
	return label, model, took, nil
}

// askExternal asks the generation's classification external model q and
// maps its failures to the management API's codes.
func (s *Server) askExternal(ctx context.Context, gen *engine.Generation, task string, q extmodel.Question) (label, model string, took time.Duration, err error) {
	m, ok := gen.Document().Global.ExternalModel(recipes.ExternalRoleClassification)
	if !ok {
		return "", "", 0, newErr(http.StatusServiceUnavailable, CodeModelNotLoaded,
			"no %s classifier is bound: add a global.external_models entry with model_role classification (an OpenAI-compatible model that answers the %s question), or bind a model deployment with global.model_catalog.bindings.%s; nothing was classified", task, task, kindOf(task))
	}
	c, err := extmodel.New(m, nil)
	if err != nil {
		return "", m.Name, 0, newErr(http.StatusServiceUnavailable, CodeModelNotLoaded, "%v", err)
	}
	start := time.Now()
	label, err = c.Classify(ctx, q)
	took = time.Since(start)
	switch {
	case err == nil:
		return label, m.Name, took, nil
	case errors.Is(err, extmodel.ErrTimeout):
		return "", m.Name, took, newErr(http.StatusRequestTimeout, CodeTimeout, "%s: %v (raise llm_timeout_seconds of global.external_models %q if the model is slow)", task, err, m.Name)
	case errors.Is(err, extmodel.ErrUnparseable):
		return "", m.Name, took, newErr(http.StatusInternalServerError, CodeClassificationError, "%s: %v; nothing was classified", task, err)
	default:
		return "", m.Name, took, newErr(http.StatusInternalServerError, CodeClassificationError, "%s: %v; check the model's llm_endpoint", task, err)
	}
}

// kindOf is the bindings key of a diagnostic task.
func kindOf(task string) string {
	switch task {
	case "fact-check":
		return "fact_check"
	case "user-feedback":
		return "user_feedback"
	}
	return "nli"
}

func (s *Server) classifyFactCheck(w http.ResponseWriter, r *http.Request) {
	serveTextTask(s, w, r, "fact-check", func(q *TextRequest) string { return q.Text },
		func(q *TextRequest) string { return q.Recipe },
		func(ctx context.Context, gen *engine.Generation, _ *recipes.Recipe, q *TextRequest) (any, error) {
			ask := factCheckQuestion
			ask.Input = q.Text
			label, model, method, took, err := s.ask(ctx, gen, "fact-check", "fact_check", ask, nil)
			if err != nil {
				return nil, err
			}
			return FactCheckResponse{NeedsFactCheck: label == LabelNeedsFactCheck, Label: label, Model: model, Method: method, ProcessingTimeMS: ms(took)}, nil
		})
}

func (s *Server) classifyUserFeedback(w http.ResponseWriter, r *http.Request) {
	serveTextTask(s, w, r, "user-feedback", func(q *TextRequest) string { return q.Text },
		func(q *TextRequest) string { return q.Recipe },
		func(ctx context.Context, gen *engine.Generation, _ *recipes.Recipe, q *TextRequest) (any, error) {
			ask := feedbackQuestion
			ask.Input = q.Text
			label, model, method, took, err := s.ask(ctx, gen, "user-feedback", "user_feedback", ask, nil)
			if err != nil {
				return nil, err
			}
			return FeedbackResponse{FeedbackType: label, Model: model, Method: method, ProcessingTimeMS: ms(took)}, nil
		})
}

func (s *Server) nli(w http.ResponseWriter, r *http.Request) {
	var req NLIRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkText(r, "premise and hypothesis", req.Premise, req.Hypothesis); err != nil {
		writeError(w, err)
		return
	}
	gen := s.cfg.Runtime().Current()
	if _, err := recipeIn(gen, req.Recipe); err != nil {
		writeError(w, err)
		return
	}
	ask := nliQuestion
	ask.Input = "Premise: " + req.Premise + "\nHypothesis: " + req.Hypothesis
	label, model, method, took, err := s.ask(r.Context(), gen, "NLI", "nli", ask, &client.TextPair{Text: req.Premise, TextPair: req.Hypothesis})
	s.stats.observe("nli", took, err)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, NLIResponse{Label: label, Model: model, Method: method, ProcessingTimeMS: ms(took)})
}
