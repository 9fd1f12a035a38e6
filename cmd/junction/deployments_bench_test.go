package main

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/deploy"
	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/worker/supervise"
	"github.com/junction-router/junction/recipes"
)

// managedDefaults starts serve's deployment wiring for one managed worker
// (this binary run as `junction worker --threads 1`, result cache off)
// serving the three default models as deployment "defaults", with bindings,
// and waits until it is ready; it stops when the benchmark ends.
func managedDefaults(b *testing.B, bindings *recipes.ModelBindings) *deploy.Set {
	b.Helper()
	orttest.Library(b)
	b.Setenv(envRunMain, "1")
	b.Setenv(supervise.EnvThreads, "1")
	b.Setenv(supervise.EnvResultCache, "0")
	deps, err := deploy.Start(&recipes.Document{Global: recipes.Global{ModelCatalog: &recipes.ModelCatalog{
		Deployments: []recipes.ModelDeployment{{Name: "defaults", Artifact: recipes.ArtifactDefaults, Device: "cpu"}},
		Bindings:    bindings,
	}}}, deploy.Options{Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler), Stderr: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(deps.Close)
	if err := deps.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	return deps
}

// BenchmarkSignalLatency compares one signal call on the default models
// in-process (ONNX Runtime in the router, one intra-op thread) with the same
// call through serve's wiring to a managed worker (this binary run as
// `junction worker --threads 1`, one process serving the three defaults) over
// its Unix socket: one text per call, one call at a time, as a request's
// signal makes it. The worker's result cache is off, so every call runs the
// model.
func BenchmarkSignalLatency(b *testing.B) {
	deps := managedDefaults(b, &recipes.ModelBindings{
		Domain:     &recipes.ModelBinding{Deployment: "defaults", Head: defaultmodels.DomainName},
		Jailbreak:  &recipes.ModelBinding{Deployment: "defaults", Head: defaultmodels.JailbreakName},
		Embeddings: &recipes.ModelBinding{Deployment: "defaults", Head: defaultmodels.EmbedderName},
	})
	ctx := context.Background()
	rt, err := inference.Open(inference.Options{Device: "cpu", Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	local, err := defaultmodels.Open(ctx, rt, "", 1)
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()

	remote := deps.Bound()

	texts := []string{"Prove that every finite group of prime order is cyclic"}
	for _, side := range []struct {
		name string
		m    signal.Models
	}{{"in-process", local.Signals}, {"worker-uds", remote}} {
		b.Run("domain/"+side.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := side.m.Domain.Classify(ctx, texts); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("jailbreak/"+side.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := side.m.Jailbreak.Classify(ctx, texts); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("embed/"+side.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := side.m.Embedder.Embed(ctx, texts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
