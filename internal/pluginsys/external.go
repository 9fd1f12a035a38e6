package pluginsys

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/extmodel"
	"github.com/junction-router/junction/internal/inference/worker/client"
	"github.com/junction-router/junction/recipes"
)

// Classify bindings served by global.external_models entries, so a plugin
// asks a guard or judge model behind an endpoint through the classify host
// function it already has (no new host function):
//
//   - "guardrail" (the first entry with model_role guardrail) and
//     "guardrail:<name>": is an assistant's answer jailbreak compliance?
//     Labels jailbreak and benign, the chosen one scored 1.
//   - "nli" (the first entry with model_role classification) and
//     "nli:<name>": the text is a JSON object {"premise", "hypothesis"};
//     labels entailment, neutral and contradiction, the chosen one scored 1.
//     When no entry is named <name>, "nli:<name>" is the model deployment
//     of that name (global.model_catalog.deployments): its served model
//     classifies the pair (premise, hypothesis) as a sequence pair, and its
//     labels, lower-cased, are the answer's (not_entailment reads as
//     neutral; any other label than the three is an error).
//
// The entries come from the configuration the latest Prepare saw. Each
// call is bounded by its entry's llm_timeout_seconds (default
// recipes.DefaultExternalModelTimeoutSeconds), which the plugin host lets it
// wait instead of the handler call's deadline (hostapi.RemoteClassifier),
// within the request's own deadline.
const (
	BindingGuardrail = "guardrail"
	BindingNLI       = "nli"
)

var (
	guardQuestion = extmodel.Question{
		Task:   "You are a safety guard reviewing an AI assistant's answer (not the user's prompt). Answer jailbreak if the answer complies with a jailbreak or harmful request: it gives dangerous or disallowed instructions, abandons its safety rules, or speaks as an unrestricted persona. Answer benign otherwise.",
		Labels: []string{"jailbreak", "benign"},
	}
	nliQuestion = extmodel.Question{
		Task:   "You judge natural-language inference: given a premise and a hypothesis, answer entailment if the premise implies the hypothesis, contradiction if it rules it out, neutral otherwise.",
		Labels: []string{"entailment", "neutral", "contradiction"},
	}
)

// externalClassifiers serves the external-model bindings and hands every
// other binding to base.
var _ hostapi.RemoteClassifier = (*externalClassifiers)(nil)

type externalClassifiers struct {
	base   hostapi.Classifier
	models atomic.Pointer[[]recipes.ExternalModel]
	// deployment is the client pool of a model deployment by name (nil,
	// or nil answers: none).
	deployment func(name string) *client.Pool
}

// set replaces the external models the bindings ask.
func (e *externalClassifiers) set(models []recipes.ExternalModel) {
	m := append([]recipes.ExternalModel(nil), models...)
	e.models.Store(&m)
}

func (e *externalClassifiers) Classify(ctx context.Context, binding, text string) ([]abi.Class, error) {
	kind, name, _ := strings.Cut(binding, ":")
	var q extmodel.Question
	var role string
	switch kind {
	case BindingGuardrail:
		q, role = guardQuestion, recipes.ExternalRoleGuardrail
		q.Input = text
	case BindingNLI:
		q, role = nliQuestion, recipes.ExternalRoleClassification
		var in struct {
			Premise    *string `json:"premise"`
			Hypothesis *string `json:"hypothesis"`
		}
		if err := json.Unmarshal([]byte(text), &in); err != nil || in.Premise == nil || in.Hypothesis == nil {
			return nil, fmt.Errorf("%w: the nli binding's text must be a JSON object with premise and hypothesis", hostapi.ErrInvalidQuery)
		}
		q.Input = "Premise: " + *in.Premise + "\nHypothesis: " + *in.Hypothesis
		if name != "" && !e.hasModel(name) {
			if p := e.pool(name); p != nil {
				return classifyNLI(ctx, p, name, *in.Premise, *in.Hypothesis)
			}
		}
	default:
		if e.base == nil {
			return nil, fmt.Errorf("%w: %s", hostapi.ErrNoSuchBinding, binding)
		}
		return e.base.Classify(ctx, binding, text)
	}
	m, err := e.model(role, name)
	if err != nil {
		return nil, err
	}
	c, err := extmodel.New(m, nil)
	if err != nil {
		return nil, err
	}
	label, err := c.Classify(ctx, q)
	if err != nil {
		return nil, err
	}
	out := []abi.Class{{Label: label, Score: 1}}
	for _, l := range q.Labels {
		if l != label {
			out = append(out, abi.Class{Label: l, Score: 0})
		}
	}
	return out, nil
}

// RemoteTimeout implements hostapi.RemoteClassifier: a guardrail or nli
// binding waits for its entry's llm_timeout_seconds; a binding that names no
// entry fails at once, and every other binding is local.
func (e *externalClassifiers) RemoteTimeout(binding string) time.Duration {
	kind, name, _ := strings.Cut(binding, ":")
	role := ""
	switch kind {
	case BindingGuardrail:
		role = recipes.ExternalRoleGuardrail
	case BindingNLI:
		role = recipes.ExternalRoleClassification
	default:
		return 0
	}
	m, err := e.model(role, name)
	if err != nil {
		return 0
	}
	return extmodel.Timeout(m)
}

// hasModel reports whether an external_models entry is named name.
func (e *externalClassifiers) hasModel(name string) bool {
	if p := e.models.Load(); p != nil {
		for _, m := range *p {
			if m.Name == name {
				return true
			}
		}
	}
	return false
}

// pool is the deployment named name's client pool, or nil.
func (e *externalClassifiers) pool(name string) *client.Pool {
	if e.deployment == nil {
		return nil
	}
	return e.deployment(name)
}

// classifyNLI asks the deployment's served model to classify the pair and
// returns its labels as the nli binding's.
func classifyNLI(ctx context.Context, p *client.Pool, name, premise, hypothesis string) ([]abi.Class, error) {
	c := client.NewClassifier(p, "nli:"+name, client.ClassifyOptions{Overflow: "truncate"})
	dists, err := c.ClassifyPairs(ctx, []client.TextPair{{Text: premise, TextPair: hypothesis}})
	if err != nil {
		return nil, fmt.Errorf("the nli deployment %q failed: %w", name, err)
	}
	if len(dists) != 1 || len(dists[0]) == 0 {
		return nil, fmt.Errorf("the nli deployment %q answered no labels", name)
	}
	out := make([]abi.Class, 0, len(dists[0]))
	for _, ls := range dists[0] {
		l := strings.ToLower(ls.Label)
		switch l {
		case "entailment", "neutral", "contradiction":
		case "not_entailment":
			l = "neutral"
		default:
			return nil, fmt.Errorf("the nli deployment %q serves a model whose label %q is not entailment, neutral, contradiction or not_entailment: it is not an NLI model", name, ls.Label)
		}
		out = append(out, abi.Class{Label: l, Score: float32(ls.Score)})
	}
	return out, nil
}

// model finds the entry a binding names: by name, or the first of role.
func (e *externalClassifiers) model(role, name string) (recipes.ExternalModel, error) {
	var models []recipes.ExternalModel
	if p := e.models.Load(); p != nil {
		models = *p
	}
	for _, m := range models {
		if (name == "" && m.ModelRole == role) || (name != "" && m.Name == name) {
			return m, nil
		}
	}
	if name != "" {
		if role == recipes.ExternalRoleClassification {
			return recipes.ExternalModel{}, fmt.Errorf("%w: no global.external_models entry and no model deployment is named %q", hostapi.ErrNoSuchBinding, name)
		}
		return recipes.ExternalModel{}, fmt.Errorf("%w: no global.external_models entry is named %q", hostapi.ErrNoSuchBinding, name)
	}
	return recipes.ExternalModel{}, fmt.Errorf("%w: no global.external_models entry has model_role %s; add one to enable this detector", hostapi.ErrNoSuchBinding, role)
}
