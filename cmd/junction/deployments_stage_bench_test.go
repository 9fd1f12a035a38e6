package main

import (
	"context"
	"sync"
	"testing"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/deploy"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/worker/client"
)

// BenchmarkStageSignals is one request's domain and jailbreak signals
// against one managed worker serving the three default models, evaluated as
// the engine does (concurrently, the decisions bindings as participants of
// one signal.Stage): classify contract (two /v1/classify calls), decisions
// with one head for both (embed-glove, zero-shot: one /v1/decisions call)
// and decisions with each kind's own sequence classifier (two calls, one per
// head). The worker's result cache is off.
func BenchmarkStageSignals(b *testing.B) {
	deps := managedDefaults(b, nil)
	ctx := context.Background()
	pool := deps.Pool("defaults")
	decider := func(q client.DecideOptions) signal.Classifier {
		d, err := client.NewDecider(pool, "bench", q)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	texts := []string{"Prove that every finite group of prime order is cyclic"}
	for _, tc := range []struct {
		name              string
		domain, jailbreak signal.Classifier
		staged            bool
	}{
		{"classify-2calls", client.NewClassifier(pool, "bench", client.ClassifyOptions{Head: defaultmodels.DomainName}),
			client.NewClassifier(pool, "bench", client.ClassifyOptions{Head: defaultmodels.JailbreakName, Overflow: "window"}), false},
		{"decisions-1call-embed-glove", decider(deploy.DomainQuestion(defaultmodels.EmbedderName, 0)), decider(deploy.JailbreakQuestion(defaultmodels.EmbedderName, 0)), true},
		{"decisions-2calls-own-heads", decider(deploy.DomainQuestion(defaultmodels.DomainName, 0)), decider(deploy.JailbreakQuestion(defaultmodels.JailbreakName, 0)), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				var st *signal.Stage
				if tc.staged {
					st = signal.NewStage()
				}
				var wg sync.WaitGroup
				cs := []signal.Classifier{tc.domain, tc.jailbreak}
				ctxs := []context.Context{ctx, ctx}
				parts := make([]*signal.Participant, 2)
				if st != nil { // every participant joins before any asks, as in the engine
					for i := range cs {
						ctxs[i], parts[i] = st.Join(ctx)
					}
				}
				for i, c := range cs {
					cctx, p := ctxs[i], parts[i]
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := c.Classify(cctx, texts); err != nil {
							b.Error(err)
						}
						if p != nil {
							p.Finish()
						}
					}()
				}
				wg.Wait()
			}
		})
	}
}
