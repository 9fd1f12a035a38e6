package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/engine/reasoning"
	"github.com/junction-router/junction/recipes"
)

// BenchmarkRecordRequest is what the gateway records for one routed,
// forwarded, non-streamed request.
func BenchmarkRecordRequest(b *testing.B) {
	m := New(prometheus.NewRegistry())
	res := &engine.Result{RequestedModel: "MoM", Decision: "general", Model: "small", ReasonCode: engine.ReasonAutoRouting,
		Reasoning: reasoning.Mode{Family: "qwen3", Type: recipes.FamilyChatTemplateKwargs, Param: "enable_thinking"}}
	pricing := &recipes.Pricing{Currency: "USD", PromptPer1M: 0.1, CompletionPer1M: 0.4}
	usage := cost.Usage{PromptTokens: 27, CompletionTokens: 37, TotalTokens: 64}
	b.ReportAllocs()
	for b.Loop() {
		m.Routed(res)
		m.ModelRequest("small")
		m.TTFT("small", time.Millisecond)
		m.Usage("small", pricing, usage)
		m.TPOT("small", time.Millisecond, 37)
		m.Request("/v1/chat/completions", "general", 200, time.Millisecond)
	}
}
