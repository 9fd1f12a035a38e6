// Package mgmt is Junction's management API (the control plane, 127.0.0.1:8080
// by default): the configuration lifecycle (read, validate, plan, PUT/PATCH
// with If-Match, history, rollback, recipes), routing previews and model
// diagnostics that never call a generation backend, plugin inspection and
// previews, stored data (files, vector stores, knowledge bases, memories
// over the storage layer), startup and status documents, the hash-chained
// audit log, bearer authentication with role permissions, endpoint
// discovery, the OpenAPI document and an offline API browser.
//
// Every route is declared once in the route table (routes.go); the router,
// permission checks, audit, discovery (GET /api/v1) and the OpenAPI document
// are all derived from it, so none of them can forget a route.
//
// What this package must not do: call a model backend, hold a generation past
// the call that took it, log request bodies or tokens, or accept a document
// mutation (PUT, PATCH, rollback, recipes) without the exact current ETag;
// knowledge-base mutations, which the spec leaves unguarded, check it when
// given and otherwise never overwrite a pending activation.
package mgmt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference/worker/client"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/tracing"
)

// Options configure a management Server.
type Options struct {
	// Config is the configuration lifecycle (required).
	Config *Config
	// Plugins lists plugin types and previews them; nil uses the native
	// plugins of internal/plugin.
	Plugins PluginRuntime
	// Startup reports startup progress for /ready, /startup-status and status.
	// Nil means startup is not observed (/ready answers 503).
	Startup *Startup
	Logger  *slog.Logger
	// Version is the binary's version, reported by /health.
	Version string
	// Storage serves the stored-data routes (files, vector stores,
	// knowledge bases, memories); nil answers them 503.
	Storage *StorageOptions
	// ResponseCache serves /api/v1/storage/response-cache/*; nil answers
	// them 503.
	ResponseCache ResponseCache
	// ContextRecovery holds context_compression's recovery records and
	// serves POST /api/v1/storage/context-recovery/invalidate; nil answers
	// it 503.
	ContextRecovery ResponseCache
	// Deployment finds the serving configuration's model deployment's
	// client pool by name, for the diagnostics bound under
	// global.model_catalog.bindings (nli, fact_check, user_feedback);
	// nil: none (a bound diagnostic answers 503).
	Deployment func(name string) *client.Pool
	// Backends reports the standalone gateway's passive health of each
	// upstream backend for GET /api/v1/status; nil leaves it out.
	Backends func() []metrics.BackendState
	// Tracer makes a span of each mutation (the audited routes); nil:
	// tracing is off.
	Tracer *tracing.Tracer
	// Replays serve the replay records, their evaluation and the outcomes
	// (/api/v1/observability/replays, /outcomes); nil answers them 503.
	Replays *ReplayOptions
}

// Server is the management API.
type Server struct {
	opts       Options
	cfg        *Config
	plugins    PluginRuntime
	log        *slog.Logger
	router     *mux.Router
	routes     []route
	openapi    *openapi3.T
	openapiRaw []byte
	instanceID string
	started    time.Time
	stats      *classifyStats
	// limits counts global.services.management_api.rate_limit per caller.
	limits *ratelimit.Local

	previewMu    sync.Mutex
	previewCache map[string]previewSets
	langDetector *signal.LanguageDetector

	fallbackOnce sync.Once
	fallback     signal.Models
	fallbackErr  error
}

// New builds the management API around a configuration lifecycle.
func New(opts Options) (*Server, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("mgmt: Options.Config is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Plugins == nil {
		opts.Plugins = NewNativePlugins()
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	s := &Server{opts: opts, cfg: opts.Config, plugins: opts.Plugins, log: opts.Logger,
		instanceID: hex.EncodeToString(id[:]), started: time.Now(), stats: newClassifyStats(), limits: ratelimit.NewLocal()}
	s.routes = s.routeTable()
	doc, raw, err := buildOpenAPI(s.routes, opts.Version)
	if err != nil {
		return nil, fmt.Errorf("mgmt: build the OpenAPI document: %w", err)
	}
	s.openapi, s.openapiRaw = doc, raw
	s.router = mux.NewRouter()
	s.router.StrictSlash(false)
	for i := range s.routes {
		rt := &s.routes[i]
		s.router.Handle(rt.path, s.wrap(rt)).Methods(rt.method)
	}
	s.router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg := "no management route " + r.Method + " " + r.URL.Path + "; GET /api/v1 lists them"
		switch {
		case strings.HasPrefix(r.URL.Path, "/config/router"), r.URL.Path == "/admin/config/update":
			msg += " (the /config/router family is retired: use /api/v1/config)"
		case strings.HasPrefix(r.URL.Path, "/api/v1/response-cache/"), strings.HasPrefix(r.URL.Path, "/api/v1/context-compression/"):
			msg += " (retired: use /api/v1/storage/response-cache/* and /api/v1/plugins/context_compression/*)"
		}
		writeError(w, newErr(http.StatusNotFound, CodeNotFound, "%s", msg))
	})
	s.router.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, newErr(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s is not allowed on %s; GET /api/v1 lists each route's methods", r.Method, r.URL.Path))
	})
	return s, nil
}

// Handler serves the management API.
func (s *Server) Handler() http.Handler { return s.router }

// statusWriter remembers the status for logs and audit.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (Flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// wrap applies request id, authentication, the route's permission, audit and
// an access log line (method, route template, status, principal: never the
// body, the query string or the Authorization header).
func (s *Server) wrap(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 128 {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = "mgmt-" + hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		sw := &statusWriter{ResponseWriter: w}
		p := anonymous
		if rt.perm != PermPublic {
			p = s.cfg.authenticator().authenticate(r)
			if p == nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="junction-management"`)
				writeError(sw, newErr(http.StatusUnauthorized, CodeUnauthorized, "this route needs Authorization: Bearer <token> (permission %s)", rt.perm))
				s.logAccess(rt, sw.status, "", start)
				return
			}
			if !p.Has(rt.perm) {
				e := newErr(http.StatusForbidden, CodeForbidden, "principal %q lacks permission %s for %s %s", p.Name, rt.perm, rt.method, rt.path)
				e.body.Error.Required = rt.perm
				writeError(sw, e)
				s.logAccess(rt, sw.status, p.Name, start)
				return
			}
		}
		if s.rateLimited(sw, r, rt, p) {
			s.logAccess(rt, sw.status, p.Name, start)
			return
		}
		ctx := context.WithValue(r.Context(), principalKey, p)
		ctx = context.WithValue(ctx, requestIDKey, id)
		var span trace.Span
		if rt.audit != "" && s.opts.Tracer != nil {
			ctx, span = s.opts.Tracer.Start(tracing.Extract(ctx, r.Header), rt.method+" "+rt.path, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(tracing.HTTPRequestMethod.String(rt.method), tracing.HTTPRoute.String(rt.path),
					tracing.ManagementAction.String(rt.audit), tracing.RequestID.String(id)))
		}
		rt.h(sw, r.WithContext(ctx))
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		if span != nil {
			span.SetAttributes(tracing.HTTPResponseStatusCode.Int(sw.status))
			if v := sw.Header().Get("X-Router-Config-Version"); v != "" {
				span.SetAttributes(tracing.ManagementConfigVersion.String(v))
			}
			if sw.status >= 400 {
				span.SetStatus(codes.Error, http.StatusText(sw.status))
			}
			span.End()
		}
		if rt.audit != "" {
			s.cfg.Audit().Record(AuditEntry{Action: rt.audit, Method: rt.method, Route: rt.path, Status: sw.status,
				Principal: p.Name, Role: strings.Join(p.Roles, ","), RequestID: id})
		}
		s.logAccess(rt, sw.status, p.Name, start)
	})
}

func (s *Server) logAccess(rt *route, status int, principal string, start time.Time) {
	s.log.Debug("management request", "method", rt.method, "route", rt.path, "status", status,
		"principal", principal, "ms", time.Since(start).Milliseconds())
}

func (s *Server) whoOf(r *http.Request) who {
	p := principalOf(r.Context())
	return who{principal: p.Name, role: strings.Join(p.Roles, ","), requestID: requestIDOf(r.Context())}
}

// ListenAddr checks that addr may be bound: without bearer authentication
// the management API serves only loopback addresses unless allowRemote says
// the operator knows better (a private network, a tunnel in front).
func ListenAddr(addr string, authMode string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("management address %q: %v (want host:port)", addr, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return fmt.Errorf("management address %q: port %q is not a number", addr, port)
	}
	if authMode == "bearer" || allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("the management API would listen on %s without authentication; bind it to 127.0.0.1, set global.services.management_api.auth.mode: bearer, or pass --management-allow-remote if a private network or tunnel protects it", addr)
	}
	return nil
}
