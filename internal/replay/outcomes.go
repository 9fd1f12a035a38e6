package replay

import (
	"context"

	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/storage"
)

// Outcome targets and verdicts that measure classification: an outcome on
// target "decision" says whether the request's routed decision (its
// category) was the right one.
const (
	TargetDecision   = "decision"
	VerdictCorrect   = "correct"
	VerdictIncorrect = "incorrect"
)

// Accuracy is one category's measured accuracy.
type Accuracy struct {
	Category string  `json:"category"`
	Correct  int     `json:"correct"`
	Judged   int     `json:"judged"`
	Accuracy float64 `json:"accuracy"`
}

// MeasureAccuracy computes router_classification_accuracy{category} from
// the outcomes on target decision (correct / judged, per the replay's
// decision; "default" for requests no decision matched) and publishes it
// on m (nil: only returned).
func MeasureAccuracy(ctx context.Context, store storage.Replays, m *metrics.Metrics) ([]Accuracy, error) {
	tally, err := store.TallyOutcomes(ctx, TargetDecision, []string{VerdictCorrect})
	if err != nil {
		return nil, err
	}
	out := make([]Accuracy, 0, len(tally))
	for _, t := range tally {
		if t.Total == 0 {
			continue
		}
		c := t.Category
		if c == "" {
			c = metrics.CategoryDefault
		}
		a := Accuracy{Category: c, Correct: t.Correct, Judged: t.Total, Accuracy: float64(t.Correct) / float64(t.Total)}
		m.SetClassificationAccuracy(a.Category, a.Accuracy)
		out = append(out, a)
	}
	return out, nil
}
