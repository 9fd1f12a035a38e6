package signal

import (
	"context"
	"fmt"

	"github.com/junction-router/junction/recipes"
)

// UnscannedPolicy is implemented by a safety model that carries its own
// on_unscanned policy: a model deployment's (global.model_catalog.
// deployments[].on_unscanned) for the signals bound to it. When it says
// block or allow, that decides how every unscanned result of the signals
// the model serves matches, over each signal's own on_unscanned; "" leaves
// it to the signals.
type UnscannedPolicy interface {
	OnUnscanned() string
}

// WithOnUnscanned gives c the on_unscanned policy of the deployment that
// serves it ("" keeps c as it is). It fails on a policy other than block or
// allow.
func WithOnUnscanned(c Classifier, policy string) (Classifier, error) {
	switch policy {
	case "":
		return c, nil
	case recipes.UnscannedBlock, recipes.UnscannedAllow:
		return policyClassifier{c, policy}, nil
	}
	return nil, fmt.Errorf("signals: on_unscanned %q is neither %q nor %q", policy, recipes.UnscannedBlock, recipes.UnscannedAllow)
}

type policyClassifier struct {
	c      Classifier
	policy string
}

func (p policyClassifier) Classify(ctx context.Context, texts []string) ([][]LabelScore, error) {
	return p.c.Classify(ctx, texts)
}
func (p policyClassifier) Method() string      { return p.c.Method() }
func (p policyClassifier) OnUnscanned() string { return p.policy }

// modelUnscanned is the Matched value the model's own policy gives
// unscanned results, and whether it has one.
func modelUnscanned(c Classifier) (matches, ok bool) {
	p, isPolicy := c.(UnscannedPolicy)
	if !isPolicy {
		return false, false
	}
	switch p.OnUnscanned() {
	case recipes.UnscannedBlock:
		return true, true
	case recipes.UnscannedAllow:
		return false, true
	}
	return false, false
}

// Unwrap is the classifier the policy was given to.
func (p policyClassifier) Unwrap() Classifier { return p.c }
