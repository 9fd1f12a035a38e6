package junction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/junction-router/junction/internal/deploy"
	"github.com/junction-router/junction/internal/extproc"
	"github.com/junction-router/junction/internal/gateway"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/pluginsys"
	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/replay"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/internal/tracing/otlp"
	"github.com/junction-router/junction/recipes"
)

// run is the server assembly, in the order its parts depend on each other:
// model deployments (workers start first: they take longest), the signal
// models, stored data (the store, ingestion and retrieval, which the plugin
// host and the management API use), the plugin system, the configuration
// lifecycle, then the
// listeners (management first, so that /startup-status answers while the
// deployments become ready; the data plane once they are).
func (s *Server) run(ctx context.Context) error {
	o, log, reg := &s.opts, s.log, s.reg
	m := metrics.New(reg)
	ups := gateway.NewUpstreams(gateway.UpstreamOptions{})
	defer ups.Close()
	started := o.Document
	if o.ConfigPath != "" {
		started = deploy.PeekDocument(o.ConfigPath)
	}
	peeked, err := o.Model.Apply(started)
	if err != nil {
		return err
	}
	deps, err := deploy.Start(peeked, deploy.Options{Registerer: reg, Logger: log, Stderr: o.WorkerStderr})
	if err != nil {
		return err
	}
	defer deps.Close()
	// A changed global.model_catalog starts its own deployments (live).
	fleet := deploy.NewFleet(deps, peeked, deploy.Options{Registerer: reg, Logger: log, Stderr: o.WorkerStderr}, o.Model.Apply)
	defer fleet.Close()
	// Models load when a configuration first needs them (compile), not
	// here: a configuration whose decisions read no model-backed signal
	// never loads ONNX Runtime, a model or lingua.
	local, err := deploy.NewLoader(o.SignalModels, deps.Bound(), log, reg)
	if err != nil {
		return err
	}
	defer local.Close() // after everything that uses the models
	models := local.OnDemand()
	// What the configuration file needs loads while stored data and the
	// plugin host open; its first compile finds it loaded (or waits for it).
	prefetched := local.Prefetch(ctx, deploy.NeedOf(peeked))
	defer prefetched()
	if err := deps.WaitForCompile(ctx, interimStatusAddr(o.ManagementAddr, o.ManagementAllowRemote, peeked), peeked, o.Version); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil // stopped while waiting
		}
		return err // a deployment failed (reported as phase error until stopped)
	}
	tracer, err := startTracing(peeked, o.Version, log)
	if err != nil {
		return err
	}
	defer stopTracing(tracer, log) // after the listeners: their last spans are flushed
	// global.state redis: one Redis connection for the rate limits, the
	// response cache, the response store and the memories of every
	// replica; closed last.
	shared, err := openSharedState(ctx, peeked, reg, log)
	if err != nil {
		return err
	}
	defer shared.close()
	stored, err := openStoredData(ctx, o.DataDir, peeked, models.Embedder, deps, shared.client(), log)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer stored.close(log) // after the plugins, listeners and ingestion that use it
	var responseCfg recipes.ResponseAPI
	if peeked != nil {
		responseCfg = peeked.Global.Services.ResponseAPI
	}
	responses := responseStore(responseCfg, stored.embedded, shared.client())
	cache, err := responseCache(ctx, peeked, stored.dir, shared.client(), log)
	if err != nil {
		return err
	}
	// The entries of a replaced configuration are swept in the background.
	sweeper := respcache.NewSweeper(cache, log)
	defer func() { // after the plugins that use it
		sweeper.Wait()
		if err := cache.Close(); err != nil {
			log.Warn("closing the response cache", "error", err)
		}
	}()
	cacheDir := o.PluginCacheDir
	switch cacheDir {
	case "":
		cacheDir = pluginsys.DefaultCacheDir()
	case "off":
		cacheDir = ""
	}
	plugins, err := pluginsys.New(ctx, pluginsys.Options{CacheDir: cacheDir, Dir: o.PluginDir, Models: models,
		Retriever: stored.library.Retriever(), Memory: stored.library.Memory(), ResponseCache: cache, Deployment: fleet.Pool, Registerer: reg, Logger: log})
	if err != nil {
		return err
	}
	defer plugins.Close()
	plugins.WatchMetrics(m)
	// router_replay's records go to stored data, written behind the
	// requests; the recorder stops (writing what it holds) before stored
	// data closes.
	recorder := replay.New(replay.Options{Store: stored.store, Logger: log, Registerer: reg})
	defer recorder.Close()
	if _, err := replay.MeasureAccuracy(ctx, stored.store, m); err != nil {
		log.Warn("measuring classification accuracy from stored outcomes failed", "error", err)
	}
	catalogOK, nativeOK := deploy.CatalogGuard(peeked), deploy.NativeAPIGuard(peeked)
	guard := func(d *recipes.Document) error {
		d, err := o.Model.Apply(d) // the model options hold for every version
		if err != nil {
			return err
		}
		// A backend key missing from the environment is refused here (at
		// start-up and on every activation), not at validation: see
		// recipes.CheckCredentials.
		return errors.Join(catalogOK(d), nativeOK(d), recipes.CheckCredentials(d, os.LookupEnv))
	}
	source := recipes.BuiltinYAML()
	if o.Document != nil {
		if source, err = recipes.Canonical(o.Document); err != nil {
			return fmt.Errorf("Options.Document: %w", err)
		}
	}
	conf, err := openConfig(ctx, o.ConfigPath, source, o.ConfigHistoryLimit, ups, plugins, local, fleet, o.modelGrace, guard, sweeper.Activated, log)
	prefetched() // the serving generation holds its own lease now
	if err != nil {
		return err
	}
	// A knowledge-base change activates in the background; let it finish
	// (it writes the history and uses the plugins and stored data) before
	// those close.
	defer conf.WaitActivations()
	rt := conf.Runtime()
	stored.serve(rt)
	gen := rt.Current()
	doc, hash := gen.Document(), gen.Hash()
	mAddr, err := managementAddr(o.ManagementAddr, o.ManagementAllowRemote, conf)
	if err != nil {
		return err
	}
	if o.ExtprocRecipe != "" && !hasRecipe(doc.Recipes, o.ExtprocRecipe) {
		return fmt.Errorf("--extproc-recipe %q: the configuration has no such recipe", o.ExtprocRecipe)
	}
	described := o.ConfigPath
	switch {
	case described != "":
	case o.Document != nil:
		described = "the document given to junction.New"
	default:
		described = "built-in configuration (demo backends, no network needed)"
	}

	startup := mgmt.NewStartup()
	startup.Begin()
	fleet.Report(startup)

	ls := &listeners{log: log, errc: make(chan error, len(doc.Listeners)+4), recorded: s.setAddr}
	fail := func(err error) error { ls.abandon(); return err }
	if mAddr != "" {
		api, err := mgmt.New(mgmt.Options{Config: conf, Startup: startup, Logger: log, Version: o.Version, Plugins: plugins,
			Storage: stored.management(), ResponseCache: plugins.Cache(), ContextRecovery: plugins.Recovery(), Backends: ups.Health().Snapshot, Deployment: fleet.Pool, Tracer: tracer,
			Replays: &mgmt.ReplayOptions{Store: stored.store, Metrics: m, Flush: recorder.Flush}})
		if err != nil {
			return err
		}
		if _, err := ls.http("management", mAddr, api.Handler()); err != nil {
			return fail(err)
		}
		s.mu.Lock()
		s.mgmt = api.Handler()
		s.mu.Unlock()
		log.Info("management API listening", "addr", "http://"+mAddr, "docs", "http://"+mAddr+"/docs")
	}
	// The data-plane listeners open once every model deployment is ready.
	if err := deps.Wait(ctx); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			ls.abandon()
			return nil // stopped while waiting
		}
		// Start-up has ended: the management API keeps answering /ready
		// and /startup-status with phase error and the reason until serve
		// is stopped (the data-plane listeners never open).
		startup.Fail(err.Error())
		if mAddr != "" {
			deps.HoldFailure(ctx, err, ls.errc)
		}
		ls.abandon()
		return err
	}
	served, err := o.Model.Apply(doc)
	if err != nil {
		return fail(err)
	}
	if h, addr, err := deploy.NativeAPI(served, deps); err != nil {
		return fail(err)
	} else if h != nil {
		if _, err := ls.http("native API", addr, h); err != nil {
			return fail(err)
		}
		log.Info("native API listening", "addr", "http://"+addr)
	}
	// One limiter for every front end: a limit counts across them, and its
	// buckets outlive configuration changes (rate limits apply live).
	// global.state redis puts the buckets in Redis, so a limit counts across replicas too. The
	// shared state was opened from the configuration file read at start; when that did not parse and
	// the document serving came from the history instead, it is opened from that document here.
	if shared == nil {
		if shared, err = openSharedState(ctx, doc, reg, log); err != nil {
			return fail(err)
		}
		defer shared.close()
	}
	limiter := ratelimit.New(shared.rateLimits(), nil)
	for _, l := range doc.Listeners {
		if o.DisableGateway {
			break
		}
		h := gateway.New(gateway.Options{Listener: l, Runtime: rt, Metrics: m, Plugins: plugins, Upstreams: ups, Logger: log,
			Files: stored.store, Responses: responses, Tracer: tracer, Limiter: limiter, Replays: recorder})
		addr := net.JoinHostPort(l.Address, strconv.Itoa(l.Port))
		if a, ok := o.ListenerAddrs[l.Name]; ok {
			addr = a
		}
		bound, err := ls.http("gateway "+l.Name, addr, h)
		if err != nil {
			return fail(err)
		}
		s.setAddr(firstGateway, bound)
		recipe := l.Entrypoint
		if recipe == "" {
			recipe = doc.DefaultRecipe()
		}
		log.Info("gateway listening", "listener", l.Name, "addr", "http://"+addr, "recipe", recipe)
	}
	if !o.DisableExtproc {
		if err := s.serveExtproc(ls, doc, extproc.Options{Runtime: rt, Metrics: m, Plugins: plugins, Logger: log, Recipe: o.ExtprocRecipe, Registerer: reg,
			Files: stored.store, Responses: responses, Tracer: tracer, Limiter: limiter, Replays: recorder}); err != nil {
			return fail(err)
		}
	}
	mc := doc.Global.Services.Observability.Metrics
	if mc.Enabled == nil || *mc.Enabled {
		addr := net.JoinHostPort(mc.Address, strconv.Itoa(mc.Port))
		if o.MetricsAddr != "" {
			addr = o.MetricsAddr
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics.Handler(reg))
		if _, err := ls.http("metrics", addr, mux); err != nil {
			return fail(err)
		}
		log.Info("metrics listening", "addr", "http://"+addr+"/metrics")
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go conf.WatchFile(wctx, o.ConfigWatch)
	startup.Complete()
	log.Info("junction serving", "config", described, "hash", hash, "signals", describeMethods(gen))
	s.markReady()

	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing requests in flight (up to 10s)")
	case err := <-ls.errc:
		log.Error("listener failed", "err", err)
		ls.stop()
		return err
	}
	ls.stop()
	return nil
}

// serveExtproc opens the ext_proc hook (gRPC) on global.extproc or
// Options.ExtprocAddr.
func (s *Server) serveExtproc(ls *listeners, doc *recipes.Document, eo extproc.Options) error {
	o := &s.opts
	recipe := o.ExtprocRecipe
	if recipe == "" {
		recipe = doc.DefaultRecipe()
	}
	ep := doc.Global.Extproc
	addr := net.JoinHostPort(ep.Address, strconv.Itoa(ep.Port))
	if o.ExtprocAddr != "" {
		addr = o.ExtprocAddr
	}
	srv := extproc.New(eo)
	gs, hs, err := extproc.NewGRPCServer(srv, extproc.GRPCOptions{TLSCertFile: o.ExtprocTLS.CertFile, TLSKeyFile: o.ExtprocTLS.KeyFile, TLSClientCAFile: o.ExtprocTLS.ClientCAFile})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ext_proc listener on %s: %w (is another process using the port? set global.extproc or run with --extproc=false)", addr, err)
	}
	ls.grpc, ls.health = gs, hs
	go func() {
		if err := gs.Serve(ln); err != nil {
			ls.errc <- fmt.Errorf("ext_proc listener: %w", err)
		}
	}()
	s.setAddr("ext_proc", ln.Addr().String())
	s.log.Info("ext_proc listening", "addr", addr, "tls", o.ExtprocTLS.CertFile != "", "mtls", o.ExtprocTLS.ClientCAFile != "", "recipe", recipe)
	return nil
}

// startTracing builds the tracer global.services.observability.tracing
// describes, as serve starts (a change needs a restart); nil when tracing
// is off.
func startTracing(doc *recipes.Document, version string, log *slog.Logger) (*tracing.Tracer, error) {
	if doc == nil {
		return nil, nil
	}
	cfg := doc.Global.Services.Observability.Tracing
	t, err := otlp.New(cfg, otlp.Options{Version: version})
	if err != nil {
		return nil, fmt.Errorf("global.services.observability.tracing: %w", err)
	}
	if t != nil {
		ep := cfg.Exporter.Endpoint
		if ep == "" {
			ep = recipes.DefaultTracingEndpointGRPC
			if cfg.Exporter.Protocol == recipes.TracingProtocolHTTP {
				ep = recipes.DefaultTracingEndpointHTTP
			}
		}
		protocol := cfg.Exporter.Protocol
		if protocol == "" {
			protocol = recipes.TracingProtocolGRPC
		}
		log.Info("tracing on", "exporter", "otlp", "protocol", protocol, "endpoint", ep, "capture_content", cfg.CaptureContent)
	}
	return t, nil
}

// stopTracing sends the spans still queued, for up to 5 seconds.
func stopTracing(t *tracing.Tracer, log *slog.Logger) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("tracing: spans still queued at shutdown were not all sent", "error", err.Error())
	}
}
