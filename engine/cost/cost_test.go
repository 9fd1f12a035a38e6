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
