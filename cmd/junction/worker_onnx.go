package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"

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
	// One load at a time: each model's memory is measured as what its load
	// adds to the process (ortmodel.Load), which overlapping loads would blur.
	var loading sync.Mutex
	load := func(ctx context.Context, spec worker.Spec) (worker.Model, error) {
		loading.Lock()
		defer loading.Unlock()
		path, err := resolveModel(spec, dir)
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
		// An unpinned model still reports the commit its files show
		// (meta.revision, /v1/models): the built-ins' revision, or the one a
		// snapshot directory or download metadata names; none when nothing does.
		if spec.Revision == "" {
			if builtin {
				if spec.Revision, err = defaultmodels.Revision(); err != nil {
					return nil, err
				}
			} else {
				spec.Revision = worker.DetectRevision(path)
			}
		}
		return ortmodel.Load(ctx, rt, path, spec, inference.ModelOptions{})
	}
	return load, func() { _ = rt.Close() }, nil
}

// resolveModel finds spec's model directory: a directory path, a name under dir, or, for a built-in name
// that dir does not hold, the committed default models (written once into the user cache). The last step is
// why `junction worker jailbreak-glove` serves from a fresh checkout exactly as `junction worker` does,
// whatever models directory is configured: a prepared copy in dir still wins, and every built-in is checked
// against the committed manifest when it loads.
func resolveModel(spec worker.Spec, dir string) (string, error) {
	path, err := worker.ResolveModel(spec, dir)
	if err == nil || !slices.Contains(defaultmodels.ModelNames, spec.Model) {
		return path, err
	}
	cdir, cerr := defaultmodels.WriteCache("")
	if cerr != nil {
		return "", worker.Permanent(fmt.Errorf("built-in model %s: %s does not hold it and writing the committed default models failed: %w", spec.Model, dir, cerr))
	}
	return filepath.Join(cdir, spec.Model), nil
}
