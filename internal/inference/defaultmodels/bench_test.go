package defaultmodels

import (
	"context"
	"testing"
)

// The cost of one signal evaluation through ONNX Runtime, one text per call
// as the router sends it (1 intra-op thread, CPU).
func BenchmarkSignals(b *testing.B) {
	rt := openRuntimeB(b)
	ms, err := Open(context.Background(), rt, b.TempDir(), 1)
	if err != nil {
		b.Fatal(err)
	}
	defer ms.Close()
	short := []string{"Prove that every finite group of prime order is cyclic"}
	ctx := context.Background()
	b.Run("domain/short", func(b *testing.B) {
		for b.Loop() {
			if _, err := ms.Signals.Domain.Classify(ctx, short); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jailbreak/short", func(b *testing.B) {
		for b.Loop() {
			if _, err := ms.Signals.Jailbreak.Classify(ctx, short); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("embed/short", func(b *testing.B) {
		for b.Loop() {
			if _, err := ms.Signals.Embedder.Embed(ctx, short); err != nil {
				b.Fatal(err)
			}
		}
	})
	long := []string{longText}
	b.Run("domain/400-tokens", func(b *testing.B) {
		for b.Loop() {
			if _, err := ms.Signals.Domain.Classify(ctx, long); err != nil {
				b.Fatal(err)
			}
		}
	})
}

const longText = `The committee reviewed the quarterly report, which showed that revenue from the new product line ` +
	`grew faster than expected while operating costs rose only slightly. Several members asked whether the growth ` +
	`would continue once the introductory discounts ended, and the finance director explained that retention in ` +
	`the first cohorts had been high. The discussion then turned to hiring plans for the engineering team, the ` +
	`timeline for the new warehouse, and the risks of relying on a single supplier for the main component. ` +
	`The committee reviewed the quarterly report, which showed that revenue from the new product line ` +
	`grew faster than expected while operating costs rose only slightly. Several members asked whether the growth ` +
	`would continue once the introductory discounts ended, and the finance director explained that retention in ` +
	`the first cohorts had been high. The discussion then turned to hiring plans for the engineering team, the ` +
	`timeline for the new warehouse, and the risks of relying on a single supplier for the main component. ` +
	`What should the committee prioritise next quarter, and which metrics should it watch?`
