package mgmt

import (
	"net/http"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/plugin"
)

// The context_compression routes: health (the plugin's runtime and the
// serving configuration's bindings), statistics of its live runs (counted
// by the serving plugin system), and context recovery: the records of what
// it dropped, kept by the serving plugin system (internal/pluginsys).

// PluginStatsReader is what a plugin runtime offers when it serves live
// traffic (junction serve's plugin system): the counts of a type's runs.
type PluginStatsReader interface {
	PluginStats(typ string) (PluginRunStats, time.Time)
}

// PluginRunStats are one plugin type's live runs: how many, by status, and
// the sums of the numeric values of their reports.
type PluginRunStats struct {
	Runs     int64              `json:"runs"`
	ByStatus map[string]int64   `json:"by_status"`
	Sums     map[string]float64 `json:"value_sums"`
}

const compressionType = "context_compression"

// CompressionHealth answers GET /api/v1/plugins/context_compression/health.
type CompressionHealth struct {
	Type string `json:"type"`
	// Status is ok, degraded (a binding's configuration is refused by the
	// runtime) or unavailable (no runtime runs the plugin; answered 503).
	Status    string `json:"status"`
	Available bool   `json:"available"`
	Runtime   string `json:"runtime,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Bindings counts the serving configuration's decisions that use the
	// plugin; ValidBindings those whose configuration the runtime accepts;
	// Problems lists the others.
	Bindings      int             `json:"bindings"`
	ValidBindings int             `json:"valid_bindings"`
	Problems      []PluginBinding `json:"problems"`
	// StatsAvailable: live runs are counted (GET
	// /api/v1/observability/plugins/context_compression/stats answers).
	StatsAvailable bool `json:"stats_available"`
	// RecoveryState: what the plugin drops from live requests is kept as
	// context recovery records (POST
	// /api/v1/storage/context-recovery/invalidate removes them).
	RecoveryState bool `json:"recovery_state"`
}

// servedCompression is the context_compression plugin type when a runtime
// serves it; otherwise it answers the error (unknown type, or 503 with the
// runtime's reason) and returns false.
func (s *Server) servedCompression(w http.ResponseWriter) (PluginType, bool) {
	t, err := s.pluginType(compressionType)
	if err != nil {
		writeError(w, err)
		return t, false
	}
	if !t.Available {
		e := newErr(http.StatusServiceUnavailable, CodeServiceUnavailable, "%s", t.Reason)
		e.body.Status = "unavailable"
		writeError(w, e)
		return t, false
	}
	return t, true
}

func (s *Server) compressionHealth(w http.ResponseWriter, r *http.Request) {
	t, ok := s.servedCompression(w)
	if !ok {
		return
	}
	_, stats := s.plugins.(PluginStatsReader)
	h := CompressionHealth{Type: t.Type, Status: "ok", Available: true, Runtime: t.Runtime, Problems: []PluginBinding{}, StatsAvailable: stats, RecoveryState: s.opts.ContextRecovery != nil}
	for _, b := range s.pluginBindingsOf(t, s.cfg.Runtime().Current().Document(), "", "") {
		h.Bindings++
		if b.Valid {
			h.ValidBindings++
		} else {
			h.Problems = append(h.Problems, b)
		}
	}
	if len(h.Problems) > 0 {
		h.Status = "degraded"
	}
	writeJSON(w, http.StatusOK, h)
}

// CompressionStats answers GET
// /api/v1/observability/plugins/context_compression/stats: the plugin's
// live runs since the plugin system started, from their reports.
type CompressionStats struct {
	Type  string    `json:"type"`
	Since time.Time `json:"since"`
	// Runs counts the requests the plugin ran on: Compressed (it changed
	// the messages), WithinBudget (nothing to do), Failed; ByStatus has
	// every status the stage reported.
	Runs         int64 `json:"runs"`
	Compressed   int64 `json:"compressed"`
	WithinBudget int64 `json:"within_budget"`
	Failed       int64 `json:"failed"`
	// OverBudget counts the compressed runs whose messages still exceed
	// the budget (the system messages and newest turns alone do).
	OverBudget int64            `json:"over_budget"`
	ByStatus   map[string]int64 `json:"by_status"`
	// Token and message sums over every run (a run within budget adds the
	// same tokens before and after).
	TokensBefore         int64   `json:"tokens_before"`
	TokensAfter          int64   `json:"tokens_after"`
	TokensSaved          int64   `json:"tokens_saved"`
	SavedRatio           float64 `json:"saved_ratio"`
	MessagesDropped      int64   `json:"messages_dropped"`
	ToolOutputsShortened int64   `json:"tool_outputs_shortened"`
}

func (s *Server) compressionStats(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.servedCompression(w); !ok {
		return
	}
	sr, ok := s.plugins.(PluginStatsReader)
	if !ok {
		writeError(w, newErr(http.StatusServiceUnavailable, CodeServiceUnavailable,
			"context_compression statistics are counted by the plugin system that serves traffic (junction serve); this management API was started without one"))
		return
	}
	ts, since := sr.PluginStats(compressionType)
	out := CompressionStats{Type: compressionType, Since: since.UTC(), Runs: ts.Runs, ByStatus: ts.ByStatus,
		Compressed: ts.ByStatus[plugin.StatusApplied], WithinBudget: ts.ByStatus[plugin.StatusSkipped], Failed: ts.ByStatus[plugin.StatusFailed],
		TokensBefore: int64(ts.Sums["tokens_before"]), TokensAfter: int64(ts.Sums["tokens_after"]),
		MessagesDropped: int64(ts.Sums["messages_dropped"]), ToolOutputsShortened: int64(ts.Sums["tool_outputs_shortened"]),
		OverBudget: int64(ts.Sums["over_budget"])}
	out.TokensSaved = out.TokensBefore - out.TokensAfter
	if out.TokensBefore > 0 {
		out.SavedRatio = float64(out.TokensSaved) / float64(out.TokensBefore)
	}
	writeJSON(w, http.StatusOK, out)
}

// RecoveryInvalidateRequest selects context recovery records: all of them
// when empty.
type RecoveryInvalidateRequest struct {
	DryRun    bool   `json:"dry_run,omitempty"`
	Recipe    string `json:"recipe,omitempty"`
	Decision  string `json:"decision,omitempty"`
	Model     string `json:"model,omitempty"`
	IDPrefix  string `json:"id_prefix,omitempty"`
	OlderThan any    `json:"older_than,omitempty" oas:"seconds-or-time"`
}

// RecoveryInvalidated counts the records an invalidation removed (or, in a
// dry run, would remove).
type RecoveryInvalidated struct {
	DryRun  bool `json:"dry_run"`
	Records int  `json:"records"`
}

// recoveryNamespace is the namespace prefix of the recovery records
// (internal/pluginsys keeps them).
const recoveryNamespace = "context_recovery/"

// recoveryInvalidate answers POST
// /api/v1/storage/context-recovery/invalidate: the records context
// compression kept of what it dropped, selected as the response cache's
// entries are.
func (s *Server) recoveryInvalidate(w http.ResponseWriter, r *http.Request) {
	if s.opts.ContextRecovery == nil {
		writeError(w, newErr(http.StatusServiceUnavailable, CodeServiceUnavailable,
			"context recovery is unavailable: this server has no plugin host (junction serve provides one)"))
		return
	}
	var req RecoveryInvalidateRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.IDPrefix != "" && !strings.HasPrefix(req.IDPrefix, "cr_") && !strings.HasPrefix("cr_", req.IDPrefix) {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "id_prefix must be a prefix of a recovery record id, which starts with cr_ (got %q)", req.IDPrefix))
		return
	}
	f, err := cacheFilter(CacheInvalidateRequest{NamespacePrefix: recoveryNamespace, Recipe: req.Recipe, Decision: req.Decision, Model: req.Model, KeyPrefix: req.IDPrefix, OlderThan: req.OlderThan}, time.Now())
	if err != nil {
		writeError(w, err)
		return
	}
	n, _, err := s.opts.ContextRecovery.Invalidate(f, req.DryRun)
	if err != nil {
		writeError(w, newErr(http.StatusServiceUnavailable, CodeServiceUnavailable, "invalidating context recovery records: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, RecoveryInvalidated{DryRun: req.DryRun, Records: n})
}
