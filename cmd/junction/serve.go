package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/extproc"
	"github.com/junction-router/junction/internal/gateway"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/pluginsys"
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
	mf := addManagementFlags(fs)
	sigModels := fs.String("signal-models", signalModelsONNX, "domain, jailbreak and embedding models: onnx (the default models through ONNX Runtime; the lexical fallbacks when it is missing) or lexical")
	pluginCache := fs.String("plugin-cache-dir", "", "keep compiled plugin modules in this directory across restarts (default: junction/plugins in the user cache directory); off keeps them in memory only")
	pluginDir := fs.String("plugin-dir", "", "load third-party plugin modules (*.wasm) from this directory, each under the type its descriptor names")
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
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg)
	ups := gateway.NewUpstreams(gateway.UpstreamOptions{})
	defer ups.Close()
	peeked, err := sm.apply(peekDocument(*cfg), model)
	if err != nil {
		return err
	}
	deps, err := startDeployments(peeked, reg, log, stderr)
	if err != nil {
		return err
	}
	defer deps.Close()
	models, closeModels, err := signalModels(ctx, deps.inProcessMode(*sigModels), log)
	if err != nil {
		return err
	}
	defer closeModels()
	deps.apply(&models)
	if err := deps.waitForCompile(ctx, interimStatusAddr(mf, peeked), peeked); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	cacheDir := *pluginCache
	switch cacheDir {
	case "":
		cacheDir = pluginsys.DefaultCacheDir()
	case "off":
		cacheDir = ""
	}
	plugins, err := pluginsys.New(ctx, pluginsys.Options{CacheDir: cacheDir, Dir: *pluginDir, Models: models, Registerer: reg, Logger: log})
	if err != nil {
		return err
	}
	defer plugins.Close()
	catalogOK, nativeOK := catalogGuard(peeked), nativeAPIGuard(peeked)
	guard := func(d *recipes.Document) error {
		d, err := sm.apply(d, model) // the command line's model options hold for every version
		if err != nil {
			return err
		}
		return errors.Join(catalogOK(d), nativeOK(d))
	}
	conf, err := openConfig(ctx, *cfg, mf, ups, plugins, models, guard, log)
	if err != nil {
		return err
	}
	rt := conf.Runtime()
	gen := rt.Current()
	doc, hash := gen.Document(), gen.Hash()
	mAddr, err := managementAddr(mf, conf)
	if err != nil {
		return err
	}
	if *epRecipe != "" && !hasRecipe(doc.Recipes, *epRecipe) {
		return fmt.Errorf("--extproc-recipe %q: the configuration has no such recipe", *epRecipe)
	}
	source := *cfg
	if source == "" {
		source = "built-in configuration (demo backends, no network needed)"
	}

	startup := mgmt.NewStartup()
	startup.Begin()
	deps.report(startup)

	var servers []*http.Server
	var listeners []net.Listener // closed directly on a failed start: Serve may not hold them yet
	var grpcSrv *grpc.Server
	var grpcHealth *health.Server
	// abandon closes what a start that failed half-way had opened.
	abandon := func() {
		shutdown(context.Background(), servers)
		for _, ln := range listeners {
			_ = ln.Close()
		}
		if grpcSrv != nil {
			grpcSrv.Stop()
		}
	}
	errc := make(chan error, len(doc.Listeners)+2)
	start := func(name, addr string, h http.Handler) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s listener on %s: %w (is another process using the port?)", name, addr, err)
		}
		srv := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		servers = append(servers, srv)
		listeners = append(listeners, ln)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s listener: %w", name, err)
			}
		}()
		return nil
	}
	if mAddr != "" {
		api, err := mgmt.New(mgmt.Options{Config: conf, Startup: startup, Logger: log, Version: version, Plugins: plugins})
		if err != nil {
			return err
		}
		if err := start("management", mAddr, api.Handler()); err != nil {
			abandon()
			return err
		}
		log.Info("management API listening", "addr", "http://"+mAddr, "docs", "http://"+mAddr+"/docs")
	}
	// The data-plane listeners open once every model deployment is ready.
	if err := deps.wait(ctx); err != nil {
		abandon()
		if ctx.Err() != nil {
			return nil
		}
		startup.Fail(err.Error())
		return err
	}
	served, err := sm.apply(doc, model)
	if err != nil {
		abandon()
		return err
	}
	if h, addr, err := nativeAPI(served, deps); err != nil {
		abandon()
		return err
	} else if h != nil {
		if err := start("native API", addr, h); err != nil {
			abandon()
			return err
		}
		log.Info("native API listening", "addr", "http://"+addr)
	}
	for _, l := range doc.Listeners {
		if !*gwOn {
			break
		}
		h := gateway.New(gateway.Options{Listener: l, Runtime: rt, Metrics: m, Plugins: plugins, Upstreams: ups, Logger: log})
		addr := net.JoinHostPort(l.Address, strconv.Itoa(l.Port))
		if err := start("gateway "+l.Name, addr, h); err != nil {
			abandon()
			return err
		}
		recipe := l.Entrypoint
		if recipe == "" {
			recipe = doc.DefaultRecipe()
		}
		log.Info("gateway listening", "listener", l.Name, "addr", "http://"+addr, "recipe", recipe)
	}
	if *epOn {
		recipe := *epRecipe
		if recipe == "" {
			recipe = doc.DefaultRecipe()
		}
		ep := doc.Global.Extproc
		addr := net.JoinHostPort(ep.Address, strconv.Itoa(ep.Port))
		srv := extproc.New(extproc.Options{Runtime: rt, Metrics: m, Plugins: plugins, Logger: log, Recipe: *epRecipe, Registerer: reg})
		gs, hs, err := extproc.NewGRPCServer(srv, extproc.GRPCOptions{TLSCertFile: *epCert, TLSKeyFile: *epKey, TLSClientCAFile: *epCA})
		if err != nil {
			abandon()
			return err
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			abandon()
			return fmt.Errorf("ext_proc listener on %s: %w (is another process using the port? set global.extproc or run with --extproc=false)", addr, err)
		}
		grpcSrv, grpcHealth = gs, hs
		go func() {
			if err := gs.Serve(ln); err != nil {
				errc <- fmt.Errorf("ext_proc listener: %w", err)
			}
		}()
		log.Info("ext_proc listening", "addr", addr, "tls", *epCert != "", "mtls", *epCA != "", "recipe", recipe)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			if grpcSrv != nil {
				extproc.Shutdown(ctx, grpcSrv, grpcHealth)
			}
			close(done)
		}()
		shutdown(ctx, servers)
		<-done
	}

	mc := doc.Global.Services.Observability.Metrics
	if mc.Enabled == nil || *mc.Enabled {
		addr := net.JoinHostPort(mc.Address, strconv.Itoa(mc.Port))
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics.Handler(reg))
		if err := start("metrics", addr, mux); err != nil {
			abandon()
			return err
		}
		log.Info("metrics listening", "addr", "http://"+addr+"/metrics")
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go conf.WatchFile(wctx, *mf.watch)
	startup.Complete()
	log.Info("junction serving", "config", source, "hash", hash, "signals", describeMethods(gen))

	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing requests in flight (up to 10s)")
	case err := <-errc:
		log.Error("listener failed", "err", err)
		stop()
		return err
	}
	stop()
	return nil
}

func shutdown(ctx context.Context, servers []*http.Server) {
	for _, s := range servers {
		_ = s.Shutdown(ctx)
	}
}

func hasRecipe(rs []recipes.Recipe, name string) bool {
	for _, r := range rs {
		if r.Name == name {
			return true
		}
	}
	return false
}

// describeMethods says which implementation backs each model-backed signal
// kind, so an operator sees at start-up when lexical fallbacks are in use.
func describeMethods(gen *engine.Generation) string {
	doc := gen.Document()
	var parts []string
	for _, r := range doc.Recipes {
		res, err := gen.Route(context.Background(), r.Name, &engine.Request{Model: engine.ModelMoM})
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, s := range res.Signals {
			k := s.Kind + "=" + s.Method
			if !seen[k] {
				seen[k] = true
				parts = append(parts, r.Name+"/"+k)
			}
		}
	}
	return strings.Join(parts, " ")
}
