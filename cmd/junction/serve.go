package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/junction-router/junction"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/recipes"
)

// defaultConfigFile is the configuration serve reads when --config is not
// given and the file exists in the working directory.
const defaultConfigFile = "config.yaml"

func serveCmd(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	cfg := fs.String("config", "", "configuration file (YAML or JSON); default ./"+defaultConfigFile+" when it exists, else the built-in demo configuration")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	gwOn := fs.Bool("gateway", true, "serve the HTTP gateway listeners (turn off when Envoy is the public entry and only ext_proc is needed)")
	epOn := fs.Bool("extproc", true, "serve the Envoy ext_proc hook (gRPC) on global.extproc, 127.0.0.1:50051 by default")
	epRecipe := fs.String("extproc-recipe", "", "recipe ext_proc routes with; the configuration's default recipe when empty")
	epCert := fs.String("extproc-tls-cert", "", "serve ext_proc over TLS with this certificate (PEM); needs --extproc-tls-key")
	epKey := fs.String("extproc-tls-key", "", "the TLS certificate's private key (PEM)")
	epCA := fs.String("extproc-tls-client-ca", "", "require Envoy to present a client certificate signed by these CAs (PEM; mutual TLS)")
	mAddr := fs.String("management", "", "management API address (host:port); global.services.management_api when empty (127.0.0.1:8080 by default); off to disable")
	allowRemote := fs.Bool("management-allow-remote", false,
		"let the management API listen on a non-loopback address without bearer authentication (only behind a private network or tunnel)")
	historyLimit := fs.Int("config-history-limit", mgmt.DefaultHistoryLimit, "configuration versions kept beside the configuration file")
	watch := fs.Duration("config-watch", 2*time.Second, "how often to look for hand edits of the configuration file (applied like an API change); 0 disables")
	sigModels := fs.String("signal-models", junction.SignalModelsONNX, "domain, jailbreak and embedding models: onnx (the default models through ONNX Runtime; the lexical fallbacks when it is missing) or lexical")
	pluginCache := fs.String("plugin-cache-dir", "", "keep compiled plugin modules in this directory across restarts (default: junction/plugins in the user cache directory); off keeps them in memory only")
	pluginDir := fs.String("plugin-dir", "", "load third-party plugin modules (*.wasm) from this directory, each under the type its descriptor names")
	dataDir := fs.String("data-dir", "", "keep stored data (uploaded files, vector stores, memories) in this directory, created 0700 on first use; default global.storage.dir, else "+recipes.DefaultStorageDir)
	sm := addServeModelFlags(fs)
	model, err := parseServeArgs(fs, args)
	if err != nil {
		if ae := (*argError)(nil); errors.As(err, &ae) {
			fmt.Fprintf(stderr, "junction serve: %v\n", ae)
		}
		return errUsage
	}
	if *cfg == "" {
		// The spec's default: ./config.yaml, when there is one.
		if st, err := os.Stat(defaultConfigFile); err == nil && st.Mode().IsRegular() {
			*cfg = defaultConfigFile
		}
	}
	if ext := filepath.Ext(model); ext == ".yaml" || ext == ".yml" || ext == ".json" {
		fmt.Fprintf(stderr, "junction serve: %q is a model argument; did you mean --config %s?\n", model, model)
		return errUsage
	}
	if !*gwOn && !*epOn {
		return errors.New("--gateway=false and --extproc=false leave nothing to serve")
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level %q: use debug, info, warn or error", *level)
	}
	if *historyLimit < 1 {
		return fmt.Errorf("--config-history-limit must be at least 1 (got %d)", *historyLimit)
	}
	if *watch < 0 {
		*watch = 0 // as before: a negative interval does not watch
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	// Whether the process started with the sysmon tuning the charts, the operator and make run set: the runtime
	// read GODEBUG before main, so this only reports it.
	if ms := schedtraceMS(os.Getenv("GODEBUG")); ms > 0 {
		logger.Info("go runtime: sysmon tuning on", "godebug_schedtrace_ms", ms)
	} else {
		logger.Debug("go runtime: sysmon tuning off (set GODEBUG=schedtrace=2147483647 for less CPU per request: docs/operator.md#runtime-tuning-sysmon)")
	}
	srv, err := junction.New(junction.Options{
		ConfigPath: *cfg, Model: sm.options(model),
		DisableGateway: !*gwOn, DisableExtproc: !*epOn, ExtprocRecipe: *epRecipe,
		ExtprocTLS:     junction.TLSFiles{CertFile: *epCert, KeyFile: *epKey, ClientCAFile: *epCA},
		ManagementAddr: *mAddr, ManagementAllowRemote: *allowRemote,
		ConfigHistoryLimit: *historyLimit, ConfigWatch: *watch,
		SignalModels: *sigModels, PluginDir: *pluginDir, PluginCacheDir: *pluginCache,
		DataDir:      *dataDir,
		Logger:       logger,
		WorkerStderr: stderr, Version: version,
	})
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

// schedtraceMS is the schedtrace interval (ms) a GODEBUG value gives the Go runtime, 0 for none. Above 0
// sysmon stays out of its deep sleep (docs/operator.md#runtime-tuning-sysmon). It reads the value as the
// runtime does at start: fields left to right, a later one overriding, one that is no int32 skipped.
func schedtraceMS(godebug string) int64 {
	var ms int64
	for _, f := range strings.Split(godebug, ",") {
		if k, v, ok := strings.Cut(f, "="); ok && k == "schedtrace" {
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				ms = n
			}
		}
	}
	return ms
}
