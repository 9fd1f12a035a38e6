package main

import (
	"context"
	"log/slog"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/worker"
	"github.com/junction-router/junction/internal/inference/worker/ortmodel"
)

// onnxLoader starts ONNX Runtime and returns the worker's model loader. The
// runtime is opened once, before any model loads, so a missing library is
// reported at start (with the command that fetches it).
func onnxLoader(cfg workerConfig, dir string, log *slog.Logger) (worker.Loader, func(), error) {
	if err := inference.ParseDevice(cfg.device); err != nil {
		return nil, nil, err
	}
	rt, err := inference.Open(inference.Options{Device: cfg.device, Threads: cfg.threads})
	if err != nil {
		return nil, nil, err
	}
	log.Info("onnx runtime", "version", rt.Version(), "library", rt.LibraryPath(), "device", cfg.device)
	load := func(ctx context.Context, spec worker.Spec) (worker.Model, error) {
		path, err := worker.ResolveModel(spec, dir)
		if err != nil {
			return nil, err
		}
		// The files loaded must be those the manifest or the pinned
		// revision names; each is read once here.
		builtin, err := defaultmodels.CheckLoad(path, spec.Revision)
		if err != nil {
			return nil, worker.Permanent(err)
		}
		if !builtin {
			if err := worker.CheckRevision(path, spec.Revision); err != nil {
				return nil, err
			}
		}
		return ortmodel.Load(ctx, rt, path, spec, inference.ModelOptions{})
	}
	return load, func() { _ = rt.Close() }, nil
}
