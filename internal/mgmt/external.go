package mgmt

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/extmodel"
	"github.com/junction-router/junction/recipes"
)

// The fact-check, user-feedback and NLI diagnostics have no local model:
// they ask the first global.external_models entry with model_role
// classification a constrained question, and answer 503 without one.

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

// methodExternal is the method of answers that came from an external model.
const methodExternal = "external_model"

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

// askExternal asks the generation's classification external model q and
// maps its failures to the management API's codes.
func (s *Server) askExternal(ctx context.Context, gen *engine.Generation, task string, q extmodel.Question) (label, model string, took time.Duration, err error) {
	m, ok := gen.Document().Global.ExternalModel(recipes.ExternalRoleClassification)
	if !ok {
		return "", "", 0, newErr(http.StatusServiceUnavailable, CodeModelNotLoaded,
			"no %s classifier is bound: add a global.external_models entry with model_role classification (an OpenAI-compatible model that answers the %s question); nothing was classified", task, task)
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

func (s *Server) classifyFactCheck(w http.ResponseWriter, r *http.Request) {
	serveTextTask(s, w, r, "fact-check", func(q *TextRequest) string { return q.Text },
		func(q *TextRequest) string { return q.Recipe },
		func(ctx context.Context, gen *engine.Generation, _ *recipes.Recipe, q *TextRequest) (any, error) {
			ask := factCheckQuestion
			ask.Input = q.Text
			label, model, took, err := s.askExternal(ctx, gen, "fact-check", ask)
			if err != nil {
				return nil, err
			}
			return FactCheckResponse{NeedsFactCheck: label == LabelNeedsFactCheck, Label: label, Model: model, Method: methodExternal, ProcessingTimeMS: ms(took)}, nil
		})
}

func (s *Server) classifyUserFeedback(w http.ResponseWriter, r *http.Request) {
	serveTextTask(s, w, r, "user-feedback", func(q *TextRequest) string { return q.Text },
		func(q *TextRequest) string { return q.Recipe },
		func(ctx context.Context, gen *engine.Generation, _ *recipes.Recipe, q *TextRequest) (any, error) {
			ask := feedbackQuestion
			ask.Input = q.Text
			label, model, took, err := s.askExternal(ctx, gen, "user-feedback", ask)
			if err != nil {
				return nil, err
			}
			return FeedbackResponse{FeedbackType: label, Model: model, Method: methodExternal, ProcessingTimeMS: ms(took)}, nil
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
	label, model, took, err := s.askExternal(r.Context(), gen, "NLI", ask)
	s.stats.observe("nli", took, err)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, NLIResponse{Label: label, Model: model, Method: methodExternal, ProcessingTimeMS: ms(took)})
}
