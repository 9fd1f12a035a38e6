package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/worker"
)

// workerConfig is what `junction worker` was asked to do.
type workerConfig struct {
	specs    []worker.Spec
	defaults bool // no model was named: serve the built-in defaults
	device   string
	threads  int
	cacheDir string
	offline  bool
	opt      worker.Options
	host     string
	port     int
	uds      string
	level    slog.Level
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// parseWorkerArgs reads the worker's start options (the spec's table). Flags
// and model arguments may be interleaved.
func parseWorkerArgs(args []string, stderr io.Writer) (workerConfig, error) {
	fs := newFlags("worker", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: junction worker [flags] [MODEL[@REVISION]...]\n\n"+
			"Serves task models over HTTP (default 127.0.0.1:8100). MODEL is a built-in model name or a model\n"+
			"directory (model.onnx, config.json, tokenizer.json). With no MODEL, the built-in default models.\n\n"+
			"Other commands:\n"+workerCommandsUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	modelsFile := fs.String("models", "", "models file (YAML or JSON: models: [{model, revision, name, device, profile, engine, family, memory_budget_gib, options}]) instead of MODEL arguments")
	revision := fs.String("revision", "", "40-character commit of the one model")
	device := fs.String("device", "auto", "auto, cpu, cuda or cuda:N")
	host := fs.String("host", "127.0.0.1", "listen address (the worker has no authentication: expose it only on a trusted network)")
	port := fs.Int("port", 8100, "listen port")
	uds := fs.String("uds", "", "listen on this Unix socket instead of TCP")
	profile := fs.String("profile", "exact", "runtime profile: exact (the only one this build has)")
	engine := fs.String("engine", "auto", "auto or onnxruntime")
	family := fs.String("family", "", "force a family plugin (none are built in)")
	served := fs.String("served-model-name", "", "served name of the one model")
	threads := fs.Int("threads", 0, "CPU threads per model session (0: all cores)")
	memBudget := fs.Float64("memory-budget", 0, "refuse models whose files are larger than this many GiB (0: no limit)")
	maxQueue := fs.Int("max-queue", 256, "queued requests per model before 429")
	maxQueuedTokens := fs.Int("max-queued-tokens", 4194304, "queued tokens per model before 429")
	window := fs.Float64("batch-window-ms", 2.0, "how long a forward pass waits for more requests to batch (0: none)")
	maxBatchTokens := fs.Int("max-batch-tokens", 65536, "tokens per forward pass")
	maxBody := fs.Int64("max-request-bytes", 8388608, "request body limit")
	maxBundle := fs.Int("max-bundle-tasks", 64, "tasks per bundle")
	attempts := fs.Int("load-attempts", 5, "loads before a model stays failed")
	retry := fs.Float64("load-retry-seconds", 5, "first wait before a load is retried; it doubles up to 300")
	cacheEntries := fs.Int("result-cache-entries", 16384, "recent results kept per model (0 disables)")
	cacheDir := fs.String("cache-dir", "", "where built-in models are found (default $JUNCTION_MODELS_DIR, else ./models)")
	offline := fs.Bool("offline", false, "use local files only (this build never downloads; kept for compatibility)")
	basePath := fs.String("base-path", "", "local copy of an adapter's base model (adapters are not supported by this build)")
	var licences multiFlag
	fs.Var(&licences, "accept-licence", "accept a model licence ID (repeatable)")
	level := fs.String("log-level", "info", "debug, info, warning or error")
	autotune := fs.String("autotune-cache", "", "kernel autotuning cache directory (not used by ONNX Runtime on CPU)")

	var positional []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			return workerConfig{}, errUsage
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}

	cfg := workerConfig{device: *device, threads: *threads, cacheDir: *cacheDir, offline: *offline,
		host: *host, port: *port, uds: *uds}
	fail := func(format string, a ...any) (workerConfig, error) { return workerConfig{}, fmt.Errorf(format, a...) }
	switch strings.ToLower(*level) {
	case "debug":
		cfg.level = slog.LevelDebug
	case "info":
		cfg.level = slog.LevelInfo
	case "warning", "warn":
		cfg.level = slog.LevelWarn
	case "error":
		cfg.level = slog.LevelError
	default:
		return fail("--log-level %q: use debug, info, warning or error", *level)
	}
	if *profile != "exact" {
		return fail("--profile %q: this build runs only the exact profile", *profile)
	}
	if *engine != "auto" && *engine != "onnxruntime" {
		return fail("--engine %q: this build has only the onnxruntime engine (use auto or onnxruntime)", *engine)
	}
	if *family != "" {
		return fail("--family %q: no family plugins are built in; leave it unset to detect the task from config.json", *family)
	}
	if *basePath != "" {
		return fail("--base-path: adapters are not supported by this build")
	}
	if *autotune != "" {
		return fail("--autotune-cache: this build does no kernel autotuning; leave it unset")
	}
	_ = licences // built-in models carry public-domain or MIT data; no licence gate applies
	if *port < 1 || *port > 65535 {
		return fail("--port %d: give 1 to 65535", *port)
	}
	for name, v := range map[string]int{"--max-queue": *maxQueue, "--max-queued-tokens": *maxQueuedTokens,
		"--max-batch-tokens": *maxBatchTokens, "--max-bundle-tasks": *maxBundle, "--load-attempts": *attempts} {
		if v < 1 {
			return fail("%s %d: must be at least 1", name, v)
		}
	}
	if *threads < 0 || *maxBody < 1 || *window < 0 || *retry <= 0 || *cacheEntries < 0 || *memBudget < 0 {
		return fail("--threads, --max-request-bytes, --batch-window-ms, --load-retry-seconds, --result-cache-entries and --memory-budget must not be negative (and the body limit and retry wait must be positive)")
	}
	cfg.opt = worker.Options{MaxQueue: *maxQueue, MaxQueuedTokens: *maxQueuedTokens, BatchWindowMs: *window,
		MaxBatchTokens: *maxBatchTokens, MaxRequestBytes: *maxBody, MaxBundleTasks: *maxBundle,
		LoadAttempts: *attempts, LoadRetry: time.Duration(*retry * float64(time.Second)), ResultCacheEntries: *cacheEntries,
		Device: *device}
	if *window == 0 {
		cfg.opt.BatchWindowMs = -1
	}
	if *cacheEntries == 0 {
		cfg.opt.ResultCacheEntries = -1
	}

	switch {
	case *modelsFile != "" && len(positional) > 0:
		return fail("give models either as arguments or with --models FILE, not both")
	case *modelsFile != "":
		specs, err := worker.ReadModelsFile(*modelsFile)
		if err != nil {
			return workerConfig{}, err
		}
		cfg.specs = specs
	default:
		for _, p := range positional {
			sp := worker.Spec{Model: p}
			if i := strings.LastIndex(p, "@"); i > 0 {
				sp.Model, sp.Revision = p[:i], p[i+1:]
			}
			cfg.specs = append(cfg.specs, sp)
		}
	}
	if len(cfg.specs) == 0 {
		cfg.defaults = true
	}
	if *revision != "" || *served != "" {
		if len(cfg.specs) != 1 {
			return fail("--revision and --served-model-name apply to exactly one model; use a models file for several")
		}
		if *revision != "" {
			cfg.specs[0].Revision = *revision
		}
		if *served != "" {
			cfg.specs[0].Name = *served
		}
	}
	for i := range cfg.specs {
		sp := &cfg.specs[i]
		if sp.Revision != "" && !isCommit(sp.Revision) {
			return fail("model %s: revision %q is not a 40-character commit (branch and tag names are resolved by the router before startup)", sp.Model, sp.Revision)
		}
		if sp.Memory == 0 {
			sp.Memory = *memBudget
		}
		if sp.Profile != "" && sp.Profile != "exact" {
			return fail("model %s: profile %q: this build runs only the exact profile", sp.Model, sp.Profile)
		}
		if sp.Engine != "" && sp.Engine != "auto" && sp.Engine != "onnxruntime" {
			return fail("model %s: engine %q: this build has only onnxruntime", sp.Model, sp.Engine)
		}
		if sp.Family != "" {
			return fail("model %s: family %q: no family plugins are built in; remove the family entry to detect the task from config.json", sp.Model, sp.Family)
		}
	}
	return cfg, nil
}

func isCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// modelsDir is where built-in model names are looked up.
func modelsDir(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if d := os.Getenv("JUNCTION_MODELS_DIR"); d != "" {
		return d
	}
	return "models"
}

func workerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if cmd, ok := workerCommands[args[0]]; ok {
			return cmd(args[1:], stdout)
		}
	}
	cfg, err := parseWorkerArgs(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.level}))
	dir := modelsDir(cfg.cacheDir)
	if cfg.defaults {
		cfg.specs, err = worker.DefaultSpecs(dir, builtinDefaults)
		if err != nil && cfg.cacheDir == "" && os.Getenv("JUNCTION_MODELS_DIR") == "" {
			// Nothing prepared by hand: serve the committed default models,
			// written out as model directories on first use.
			cdir, cerr := defaultmodels.WriteCache("")
			if cerr != nil {
				return errors.Join(err, cerr)
			}
			dir = cdir
			cfg.specs, err = worker.DefaultSpecs(dir, builtinDefaults)
		}
		if err != nil {
			return err
		}
	}
	load, closeRuntime, err := onnxLoader(cfg, dir, log)
	if err != nil {
		return err
	}
	defer closeRuntime()
	cfg.opt.Logger = log
	srv, err := worker.New(cfg.specs, load, cfg.opt)
	if err != nil {
		return err
	}
	ln, where, err := worker.Listen(cfg.uds, cfg.host, cfg.port)
	if err != nil {
		_ = srv.Close()
		return err
	}
	srv.Start()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("worker listening", "address", where, "models", len(cfg.specs))
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(shut)
	if cerr := srv.Close(); cerr != nil {
		log.Warn("closing models", "error", cerr)
	}
	if cfg.uds != "" {
		_ = os.Remove(cfg.uds)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// builtinDefaults are the models `junction worker` serves when no model is
// named: built by `make models` into the models directory.
var builtinDefaults = []string{defaultmodels.EmbedderName, defaultmodels.DomainName, defaultmodels.JailbreakName}
