// Package cost prices a completed request from its token usage and the model's
// pricing, per the spec: (prompt * prompt_per_1m + completion * completion_per_1m) / 1e6,
// with the prompt tokens an upstream served from its prompt cache at
// cached_input_per_1m and those it wrote to the cache at cache_write_per_1m.
package cost

import "github.com/junction-router/junction/recipes"

// Usage is the token usage an upstream reported, in the chat-completion
// shape. Cached prompt tokens come as prompt_tokens_details.cached_tokens
// (OpenAI, vLLM); cache writes as cache_creation_input_tokens, the member
// OpenAI-compatible gateways add for Anthropic-style upstreams (the
// translated Anthropic answer carries both). Both are part of PromptTokens.
type Usage struct {
	PromptTokens        int64         `json:"prompt_tokens"`
	CompletionTokens    int64         `json:"completion_tokens"`
	TotalTokens         int64         `json:"total_tokens"`
	PromptTokensDetails *PromptDetail `json:"prompt_tokens_details,omitempty"`
	// CacheCreationInputTokens are prompt tokens written to the upstream's
	// prompt cache.
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitempty"`
}

// PromptDetail is usage.prompt_tokens_details.
type PromptDetail struct {
	// CachedTokens are prompt tokens read from the upstream's prompt cache.
	CachedTokens int64 `json:"cached_tokens"`
}

// CachedTokens are the prompt tokens read from the upstream's prompt cache.
func (u Usage) CachedTokens() int64 {
	if u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// Of returns the cost and its currency; ok is false when the model has no
// pricing (then only token metrics are recorded). Cached prompt tokens are
// priced at cached_input_per_1m and cache writes at cache_write_per_1m; each
// defaults to prompt_per_1m when omitted, so without them the cost is the
// spec's plain formula.
func Of(p *recipes.Pricing, u Usage) (amount float64, currency string, ok bool) {
	if p == nil {
		return 0, "", false
	}
	currency = p.Currency
	if currency == "" {
		currency = "USD"
	}
	cachedPrice, writePrice := p.PromptPer1M, p.PromptPer1M
	if p.CachedInputPer1M != nil {
		cachedPrice = *p.CachedInputPer1M
	}
	if p.CacheWritePer1M != nil {
		writePrice = *p.CacheWritePer1M
	}
	// An upstream that reports more cached tokens than prompt tokens is
	// wrong; the reported cache counts are kept within the prompt.
	cached := min(max(u.CachedTokens(), 0), max(u.PromptTokens, 0))
	written := min(max(u.CacheCreationInputTokens, 0), max(u.PromptTokens, 0)-cached)
	plain := u.PromptTokens - cached - written
	amount = (float64(plain)*p.PromptPer1M + float64(cached)*cachedPrice + float64(written)*writePrice +
		float64(u.CompletionTokens)*p.CompletionPer1M) / 1e6
	return amount, currency, true
}
