package cost

import (
	"math"
	"testing"

	"github.com/junction-router/junction/recipes"
)

func TestOf(t *testing.T) {
	p := &recipes.Pricing{Currency: "EUR", PromptPer1M: 1.00, CompletionPer1M: 4.00}
	amount, cur, ok := Of(p, Usage{PromptTokens: 1500, CompletionTokens: 250})
	// (1500*1 + 250*4) / 1e6
	if !ok || cur != "EUR" || math.Abs(amount-0.0025) > 1e-12 {
		t.Fatalf("got %v %q %v", amount, cur, ok)
	}
	if _, _, ok := Of(nil, Usage{PromptTokens: 10}); ok {
		t.Fatal("no pricing must report ok=false")
	}
	if _, cur, _ := Of(&recipes.Pricing{}, Usage{}); cur != "USD" {
		t.Fatalf("default currency %q", cur)
	}
}

func TestOfCachedPromptTokens(t *testing.T) {
	cached, write := 0.25, 1.25
	p := &recipes.Pricing{PromptPer1M: 1.00, CompletionPer1M: 4.00, CachedInputPer1M: &cached, CacheWritePer1M: &write}
	u := Usage{PromptTokens: 1000, CompletionTokens: 100, PromptTokensDetails: &PromptDetail{CachedTokens: 600}, CacheCreationInputTokens: 300}
	// 100 plain at 1, 600 read at 0.25, 300 written at 1.25, 100 completion at 4.
	want := (100*1.00 + 600*0.25 + 300*1.25 + 100*4.00) / 1e6
	if got, _, _ := Of(p, u); math.Abs(got-want) > 1e-12 {
		t.Fatalf("cost %v, want %v", got, want)
	}
	// cache_write_per_1m omitted: writes cost prompt_per_1m.
	p.CacheWritePer1M = nil
	want = (100*1.00 + 600*0.25 + 300*1.00 + 100*4.00) / 1e6
	if got, _, _ := Of(p, u); math.Abs(got-want) > 1e-12 {
		t.Fatalf("cost without cache_write_per_1m %v, want %v", got, want)
	}
	// Cache counts beyond the prompt are clamped to it.
	u = Usage{PromptTokens: 10, PromptTokensDetails: &PromptDetail{CachedTokens: 50}, CacheCreationInputTokens: 5}
	if got, _, _ := Of(p, u); math.Abs(got-10*0.25/1e6) > 1e-12 {
		t.Fatalf("clamped cost %v", got)
	}
}
