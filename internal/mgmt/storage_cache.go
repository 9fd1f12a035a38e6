package mgmt

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/recipes"
)

// ResponseCache is the response cache the plugins' cache_lookup and
// cache_store use (a respcache.Backend: in memory or embedded). The
// management API reads its counts and invalidates or flushes it.
type ResponseCache interface {
	Stats(topN int) (respcache.Stats, error)
	Flush(f respcache.Filter) (epoch uint64, removed int, err error)
	Invalidate(f respcache.Filter, dryRun bool) (entries, namespaces int, err error)
	Info() respcache.Info
}

// The response_cache plugin's namespaces: response_cache/v2, then
// /model=<model>, /decision=<decision>, /user=<hash> as its scope says,
// the request's context and slots, then the router's /recipe=<recipe> and
// /epoch=<configuration epoch> (internal/respcache).
const (
	cacheNamespaceRoot = "response_cache/v2"
	maxCacheScope      = 512
	defaultCacheTop    = 20
	maxCacheTop        = 100
)

// cacheRoute answers 503 while no response cache is wired in.
func (s *Server) cacheRoute(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.ResponseCache == nil {
			writeError(w, newErr(http.StatusServiceUnavailable, CodeServiceUnavailable,
				"the response cache is unavailable: this server has no plugin host (junction serve provides one)"))
			return
		}
		h(w, r)
	}
}

// CacheCapabilities say what the response cache supports.
type CacheCapabilities struct {
	Backend           string   `json:"backend"`
	Backends          []string `json:"backends"`
	Persistent        bool     `json:"persistent"`
	MaxEntries        int      `json:"max_entries"`
	MaxBytes          int64    `json:"max_bytes"`
	Modes             []string `json:"modes"`
	Scopes            []string `json:"scopes"`
	Namespace         string   `json:"namespace"`
	InvalidationKinds []string `json:"invalidation_kinds"`
	FlushScopes       []string `json:"flush_scopes"`
	MaxTopNamespaces  int      `json:"max_top_namespaces"`
}

func (s *Server) cacheCapabilities(w http.ResponseWriter, _ *http.Request) {
	info := s.opts.ResponseCache.Info()
	writeJSON(w, http.StatusOK, CacheCapabilities{
		Backend: info.Name, Backends: []string{respcache.BackendMemory, respcache.BackendEmbedded, respcache.BackendRedis}, Persistent: info.Persistent,
		MaxEntries: info.MaxEntries, MaxBytes: info.MaxBytes,
		Modes:             []string{"exact", "semantic", "exact_then_semantic"},
		Scopes:            []string{"model", "decision", "recipe", "user", "epoch"},
		Namespace:         cacheNamespaceRoot + "[/model=<model>][/decision=<decision>][/user=<sha256 prefix>]/context=<hash>[/slots=<signature>/words=<signature>][/recipe=<recipe>]/epoch=<configuration epoch>",
		InvalidationKinds: []string{"dry_run", "namespace_prefix", "recipe", "decision", "model", "key_prefix", "older_than"},
		FlushScopes:       []string{"global", "namespace_prefix", "recipe", "decision", "model"},
		MaxTopNamespaces:  maxCacheTop,
	})
}

// CacheHealth says whether the cache answers.
type CacheHealth struct {
	Status    string `json:"status"`
	Backend   string `json:"backend"`
	Reachable bool   `json:"reachable"`
	Entries   int    `json:"entries"`
	Error     string `json:"error,omitempty"`
}

func (s *Server) cacheHealth(w http.ResponseWriter, _ *http.Request) {
	name := s.opts.ResponseCache.Info().Name
	st, err := s.opts.ResponseCache.Stats(0)
	if err != nil {
		writeJSON(w, http.StatusOK, CacheHealth{Status: "degraded", Backend: name, Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, CacheHealth{Status: "ok", Backend: name, Reachable: true, Entries: st.Entries})
}

// CacheKinds are counts by lookup kind.
type CacheKinds struct {
	Exact    uint64 `json:"exact"`
	Semantic uint64 `json:"semantic"`
}

// CacheEvictions are removals by reason.
type CacheEvictions struct {
	Capacity    uint64 `json:"capacity"`
	Expired     uint64 `json:"expired"`
	Invalidated uint64 `json:"invalidated"`
	Flushed     uint64 `json:"flushed"`
}

// CacheNamespaceCount is one namespace's entries.
type CacheNamespaceCount struct {
	Namespace string `json:"namespace"`
	Entries   int    `json:"entries"`
}

// CacheEpoch is a flush scope's epoch.
type CacheEpoch struct {
	Scope string `json:"scope"`
	Epoch uint64 `json:"epoch"`
}

// CacheStatsBody is what the cache holds and how its lookups went since the
// process started.
type CacheStatsBody struct {
	Backend       string                `json:"backend"`
	Entries       int                   `json:"entries"`
	Bytes         int64                 `json:"bytes"`
	Namespaces    int                   `json:"namespaces"`
	Hits          CacheKinds            `json:"hits"`
	Misses        CacheKinds            `json:"misses"`
	HitRatio      float64               `json:"hit_ratio"`
	Evictions     CacheEvictions        `json:"evictions"`
	TopNamespaces []CacheNamespaceCount `json:"top_namespaces"`
	Epochs        []CacheEpoch          `json:"epochs"`
	// Error says why the backend is degraded (its writes fail).
	Error string `json:"error,omitempty"`
}

func (s *Server) cacheStats(w http.ResponseWriter, r *http.Request) {
	top := defaultCacheTop
	if v := r.URL.Query().Get("top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxCacheTop {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "top must be a whole number from 0 to %d (the largest namespaces listed)", maxCacheTop))
			return
		}
		top = n
	}
	// An error (an embedded backend's failing writes) comes with the
	// statistics, which are still what the cache serves from.
	st, err := s.opts.ResponseCache.Stats(top)
	k := st.Counts
	out := CacheStatsBody{Backend: s.opts.ResponseCache.Info().Name, Entries: st.Entries, Bytes: st.Bytes, Namespaces: st.Namespaces,
		Hits: CacheKinds{Exact: k.ExactHits, Semantic: k.SemanticHits}, Misses: CacheKinds{Exact: k.ExactMisses, Semantic: k.SemanticMisses},
		HitRatio:      k.HitRatio(),
		Evictions:     CacheEvictions{Capacity: k.Evictions, Expired: k.Expirations, Invalidated: k.Invalidated, Flushed: k.Flushed},
		TopNamespaces: []CacheNamespaceCount{}, Epochs: []CacheEpoch{}}
	if err != nil {
		out.Error = err.Error()
	}
	for _, n := range st.Top {
		out.TopNamespaces = append(out.TopNamespaces, CacheNamespaceCount{Namespace: n.Namespace, Entries: n.Entries})
	}
	for scope, e := range st.Epochs {
		out.Epochs = append(out.Epochs, CacheEpoch{Scope: scope, Epoch: e})
	}
	sortEpochs(out.Epochs)
	writeJSON(w, http.StatusOK, out)
}

func sortEpochs(es []CacheEpoch) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Scope < es[j-1].Scope; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// CacheFlushRequest names the scope to flush: a namespace prefix
// ("response_cache/v2/model=m1") and/or a recipe, decision and model (each
// given must match); nothing at all is the global scope.
type CacheFlushRequest struct {
	Scope    string `json:"scope,omitempty"`
	Recipe   string `json:"recipe,omitempty"`
	Decision string `json:"decision,omitempty"`
	Model    string `json:"model,omitempty"`
}

// CacheFlushed is a flush's outcome: the scope's name (the namespace
// prefix, then [recipe=…], [decision=…], [model=…]; "" global), its new
// epoch and the entries it removed.
type CacheFlushed struct {
	Scope   string `json:"scope"`
	Epoch   uint64 `json:"epoch"`
	Removed int    `json:"removed"`
}

func (s *Server) cacheFlush(w http.ResponseWriter, r *http.Request) {
	var req CacheFlushRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Scope) > maxCacheScope {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "scope is longer than %d bytes", maxCacheScope))
		return
	}
	f, err := cacheFilter(CacheInvalidateRequest{NamespacePrefix: req.Scope, Recipe: req.Recipe, Decision: req.Decision, Model: req.Model}, time.Now())
	if err != nil {
		writeError(w, err)
		return
	}
	epoch, removed, err := s.opts.ResponseCache.Flush(f)
	if err != nil {
		writeError(w, newErr(http.StatusServiceUnavailable, CodeServiceUnavailable, "flushing the response cache: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, CacheFlushed{Scope: f.Scope(), Epoch: epoch, Removed: removed})
}

// CacheInvalidateRequest selects entries to remove; every given field must
// match. older_than is seconds of age or an RFC 3339 time.
type CacheInvalidateRequest struct {
	DryRun          bool   `json:"dry_run,omitempty"`
	NamespacePrefix string `json:"namespace_prefix,omitempty"`
	Recipe          string `json:"recipe,omitempty"`
	Model           string `json:"model,omitempty"`
	Decision        string `json:"decision,omitempty"`
	KeyPrefix       string `json:"key_prefix,omitempty"`
	OlderThan       any    `json:"older_than,omitempty" oas:"seconds-or-time"`
}

// CacheInvalidated counts what an invalidation removed (or, in a dry run,
// would remove).
type CacheInvalidated struct {
	DryRun     bool `json:"dry_run"`
	Entries    int  `json:"entries"`
	Namespaces int  `json:"namespaces"`
}

func (s *Server) cacheInvalidate(w http.ResponseWriter, r *http.Request) {
	var req CacheInvalidateRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	f, err := cacheFilter(req, time.Now())
	if err != nil {
		writeError(w, err)
		return
	}
	n, nss, err := s.opts.ResponseCache.Invalidate(f, req.DryRun)
	if err != nil {
		writeError(w, newErr(http.StatusServiceUnavailable, CodeServiceUnavailable, "invalidating response cache entries: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, CacheInvalidated{DryRun: req.DryRun, Entries: n, Namespaces: nss})
}

func cacheFilter(req CacheInvalidateRequest, now time.Time) (respcache.Filter, error) {
	f := respcache.Filter{NamespacePrefix: req.NamespacePrefix, KeyPrefix: req.KeyPrefix}
	for name, v := range map[string]string{"namespace_prefix": req.NamespacePrefix, "recipe": req.Recipe, "model": req.Model, "decision": req.Decision, "key_prefix": req.KeyPrefix} {
		if len(v) > maxCacheScope {
			return f, newErr(http.StatusBadRequest, CodeInvalidInput, "%s is longer than %d bytes", name, maxCacheScope)
		}
		if (name == "model" || name == "decision" || name == "recipe") && strings.Contains(v, "/") {
			return f, newErr(http.StatusBadRequest, CodeInvalidInput, "%s must not contain '/'", name)
		}
	}
	if req.Recipe != "" {
		f.Segments = append(f.Segments, "recipe="+req.Recipe)
	}
	if req.Model != "" {
		f.Segments = append(f.Segments, "model="+req.Model)
	}
	if req.Decision != "" {
		f.Segments = append(f.Segments, "decision="+req.Decision)
	}
	switch v := req.OlderThan.(type) {
	case nil:
	case float64:
		if v < 0 {
			return f, newErr(http.StatusBadRequest, CodeInvalidInput, "older_than in seconds must not be negative")
		}
		f.OlderThan = now.Add(-time.Duration(v * float64(time.Second)))
	case string:
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return f, newErr(http.StatusBadRequest, CodeInvalidInput, "older_than must be seconds (a number) or an RFC 3339 time such as 2026-01-02T15:04:05Z: %v", err)
		}
		f.OlderThan = t
	default:
		return f, newErr(http.StatusBadRequest, CodeInvalidInput, "older_than must be seconds (a number) or an RFC 3339 time")
	}
	return f, nil
}

// CacheTestRequest asks what the response_cache plugin of a binding would do
// with a chat completion request.
type CacheTestRequest struct {
	Binding PreviewBinding  `json:"binding"`
	Request json.RawMessage `json:"request"`
	// Model is the model the request is answered by (part of the cache's
	// scope); empty: the model routing selects, or the decision's first
	// model when routing matches another decision.
	Model string `json:"model,omitempty"`
}

// CacheTestResult is what the plugin would do: hit (kind exact or semantic,
// with the similarity), miss (the detail says why, such as a near entry
// whose slots disagree) or skipped (bypass, no user for a per-user scope).
// The lookup is a dry run: it counts in no statistic and makes no entry
// recent.
type CacheTestResult struct {
	Recipe     string            `json:"recipe"`
	Decision   string            `json:"decision"`
	Model      string            `json:"model"`
	Result     string            `json:"result"`
	Kind       string            `json:"kind,omitempty"`
	Similarity string            `json:"similarity,omitempty"`
	Detail     string            `json:"detail"`
	Values     map[string]string `json:"values"`
	// AnswerBytes is the size of the cached answer a hit would send.
	AnswerBytes int `json:"answer_bytes"`
}

func (s *Server) cacheTest(w http.ResponseWriter, r *http.Request) {
	var req CacheTestRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Request) == 0 {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "request (a chat completion request) is required"))
		return
	}
	gen := s.cfg.Runtime().Current()
	rc, err := recipeIn(gen, req.Binding.Recipe)
	if err != nil {
		writeError(w, err)
		return
	}
	idx := slices.IndexFunc(rc.Decisions, func(d recipes.Decision) bool { return d.Name == req.Binding.Decision })
	if idx < 0 {
		writeError(w, newErr(http.StatusNotFound, CodeNotFound, "recipe %q has no decision %q", rc.Name, req.Binding.Decision))
		return
	}
	d := rc.Decisions[idx]
	var refs []recipes.PluginRef
	for _, p := range d.Plugins {
		if p.Type == "response_cache" {
			refs = append(refs, p)
		}
	}
	if len(refs) == 0 {
		writeError(w, newErr(http.StatusNotFound, CodeNotFound, "decision %q of recipe %q has no response_cache plugin", d.Name, rc.Name))
		return
	}
	cr, err := chat.Parse(req.Request)
	if err != nil {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "request: %v", err))
		return
	}
	in := dataplane.Input(cr)
	if err := checkText(r, "the request", strings.Join(in.AllTexts, "\n")); err != nil {
		writeError(w, err)
		return
	}
	model := req.Model
	if model == "" {
		routed, err := gen.Route(r.Context(), rc.Name, &engine.Request{Model: engine.ModelMoM, Input: in})
		if err != nil {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "routing the request for its model: %v", err))
			return
		}
		model = routed.Model
		if routed.Decision != d.Name && len(d.ModelRefs) > 0 {
			model = d.ModelRefs[0].Model
		}
	}
	preq := &plugin.Request{Chat: cr, Header: http.Header{}, Decision: d.Name, Model: model, Mode: plugin.ModeLive}
	for k, v := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-") {
			preq.Header[k] = v // a bypass header is part of what is tested
		}
	}
	// The scope live requests of this binding and model use: the recipe
	// and the configuration epoch.
	ctx := respcache.WithScope(memstore.Peeking(r.Context()), respcache.ScopeOf(gen.Document(), rc.Name, d.Name, model))
	// The plugins before the cache rewrite the request it sees (a system
	// prompt, parameters): run them first, as a probe, which persists
	// nothing (a memory plugin keeps no memory).
	if first := slices.IndexFunc(d.Plugins, func(p recipes.PluginRef) bool { return p.Type == "response_cache" }); first > 0 {
		probe := *preq
		probe.Mode = plugin.ModeProbe
		if _, err := s.plugins.Preview(ctx, d.Plugins[:first], &probe); err != nil {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "the plugins before response_cache: %v", err))
			return
		}
		preq.Chat, preq.Header = probe.Chat, probe.Header
	}
	out, err := s.plugins.Preview(ctx, refs, preq)
	if err != nil && len(out.Reports) == 0 {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "%v", err))
		return
	}
	res := CacheTestResult{Recipe: rc.Name, Decision: d.Name, Model: model, Result: "skipped", Values: map[string]string{}}
	for _, rep := range out.Reports {
		if rep.Type != "response_cache" {
			continue
		}
		res.Detail = rep.Detail
		if rep.Status == plugin.StatusFailed || rep.Status == plugin.StatusUnavailable {
			res.Result = rep.Status
		}
		if rep.Module != nil {
			for k, v := range rep.Module.Values {
				res.Values[k] = v
			}
		}
	}
	switch out.CacheStatus {
	case "hit":
		res.Result = "hit"
	case "miss":
		res.Result = "miss"
	}
	res.Kind, res.Similarity = res.Values["hit"], res.Values["similarity"]
	if out.Immediate != nil {
		res.AnswerBytes = len(out.Immediate.Content)
	}
	writeJSON(w, http.StatusOK, res)
}
