// Package cost prices a completed request from its token usage and the model's
// pricing, per the spec: (prompt * prompt_per_1m + completion * completion_per_1m) / 1e6.
package cost

import "github.com/junction-router/junction/recipes"

// Usage is the token usage an upstream reported.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// Of returns the cost and its currency; ok is false when the model has no
// pricing (then only token metrics are recorded).
func Of(p *recipes.Pricing, u Usage) (amount float64, currency string, ok bool) {
	if p == nil {
		return 0, "", false
	}
	currency = p.Currency
	if currency == "" {
		currency = "USD"
	}
	amount = (float64(u.PromptTokens)*p.PromptPer1M + float64(u.CompletionTokens)*p.CompletionPer1M) / 1e6
	return amount, currency, true
}
