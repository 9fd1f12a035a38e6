package mgmt

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Startup tracks the local startup writer: serve calls Begin when it starts
// opening listeners and Complete (or Fail) when it is done. Before Begin
// nothing is observed and /ready answers 503.
type Startup struct {
	mu     sync.Mutex
	state  string // "", starting, complete, failed
	reason string
	deps   []ModelDeployment
}

// ModelDeployment is one managed model deployment.
type ModelDeployment struct {
	Name     string `json:"name"`
	Artifact string `json:"artifact"`
	Process  string `json:"process"`
	State    string `json:"state"`
	Ready    bool   `json:"ready"`
	Reason   string `json:"reason,omitempty"`
}

// NewStartup returns an unobserved startup tracker.
func NewStartup() *Startup { return &Startup{} }

// Begin reports that startup is under way.
func (s *Startup) Begin() { s.set("starting", "") }

// Complete reports that every listener is open and every model ready.
func (s *Startup) Complete() { s.set("complete", "") }

// Fail reports that startup ended in failure; reason is kept out of the
// status document (it may hold paths) but shown by /startup-status.
func (s *Startup) Fail(reason string) { s.set("failed", reason) }

// SetDeployments records the model deployments of global.model_catalog
// (serve keeps them up to date as its workers' health changes).
func (s *Startup) SetDeployments(d []ModelDeployment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deps = append([]ModelDeployment(nil), d...)
}

func (s *Startup) set(state, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.reason = state, reason
}

func (s *Startup) snapshot() (string, string, []ModelDeployment) {
	if s == nil {
		return "", "", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.reason, append([]ModelDeployment(nil), s.deps...)
}

// ReadyStatus answers /ready.
type ReadyStatus struct {
	Ready         bool     `json:"ready"`
	Phase         string   `json:"phase"`
	PendingModels []string `json:"pending_models"`
	ReadyModels   int      `json:"ready_models"`
	TotalModels   int      `json:"total_models"`
	Message       string   `json:"message,omitempty"`
}

// StartupStatus answers /startup-status: /ready's fields plus every managed
// model deployment (kept after startup completes).
type StartupStatus struct {
	ReadyStatus
	ModelDeployments []ModelDeployment `json:"model_deployments"`
}

func (s *Server) startup() (int, StartupStatus) {
	state, reason, deps := s.opts.Startup.snapshot()
	out := StartupStatus{ReadyStatus: ReadyStatus{PendingModels: []string{}, TotalModels: len(deps)}}
	for _, d := range deps {
		if d.Ready {
			out.ReadyModels++
		} else {
			out.PendingModels = append(out.PendingModels, d.Name)
		}
	}
	out.ModelDeployments = deps
	if out.ModelDeployments == nil {
		out.ModelDeployments = []ModelDeployment{}
	}
	switch state {
	case "complete":
		out.Ready, out.Phase = true, "complete"
		return http.StatusOK, out
	case "failed":
		out.Phase, out.Message = "error", reason
	case "starting":
		out.Phase = "starting"
		if len(out.PendingModels) > 0 {
			out.Phase = "loading_model_deployments"
		}
	default:
		out.Phase, out.Message = "unobserved", "the startup writer has not reported progress yet"
	}
	return http.StatusServiceUnavailable, out
}

// HealthResponse is GET /health (the earlier revision's shape).
type HealthResponse struct {
	Status  string            `json:"status"`
	Version string            `json:"version"`
	Uptime  int64             `json:"uptime"`
	Models  map[string]string `json:"models"`
	Cache   HealthCache       `json:"cache"`
	// Endpoints are the upstream backends by base URL: healthy, or degraded
	// while passive health has ejected one (empty when no gateway serves in
	// this process).
	Endpoints map[string]string `json:"endpoints"`
}

// HealthCache is the response cache in the earlier health shape: status is
// healthy, degraded when its store does not answer, or disabled when no
// response cache is wired in.
type HealthCache struct {
	Status  string  `json:"status"`
	Entries int     `json:"entries"`
	HitRate float64 `json:"hit_rate"`
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	out := HealthResponse{Status: "healthy", Version: s.opts.Version, Uptime: int64(time.Since(s.started).Seconds()),
		Models:    map[string]string{"category_classifier": "loaded", "pii_detector": "loaded", "jailbreak_guard": "loaded"},
		Cache:     HealthCache{Status: "disabled"},
		Endpoints: map[string]string{}}
	if s.opts.ResponseCache != nil {
		// topN 0: counts only, no namespace listing, so liveness stays cheap.
		if st, err := s.opts.ResponseCache.Stats(0); err != nil {
			out.Cache.Status = "degraded"
		} else {
			out.Cache = HealthCache{Status: "healthy", Entries: st.Entries, HitRate: st.Counts.HitRatio()}
		}
	}
	if s.opts.Backends != nil {
		for _, b := range s.opts.Backends() {
			out.Endpoints[b.Backend] = "healthy"
			if b.Ejected {
				out.Endpoints[b.Backend] = "degraded"
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	code, st := s.startup()
	writeJSON(w, code, st.ReadyStatus)
}

func (s *Server) startupStatus(w http.ResponseWriter, r *http.Request) {
	code, st := s.startup()
	writeJSON(w, code, st)
}

// StatusDocument is GET /api/v1/status.
type StatusDocument struct {
	SchemaVersion string      `json:"schema_version"`
	InstanceID    string      `json:"instance_id"`
	ObservedAt    string      `json:"observed_at"`
	Conditions    []Condition `json:"conditions"`
	// ActiveConfigHash is the serving document's hash (kept at the last known
	// good one after a failed reload).
	ActiveConfigHash string `json:"active_config_hash,omitempty"`
	ActivationStage  string `json:"activation_stage,omitempty"`
	// Backends is the standalone gateway's passive health of each upstream
	// backend (absent when no gateway serves in this process).
	Backends []BackendStatus `json:"backends,omitempty"`
}

// BackendStatus is one upstream backend as passive health sees it.
type BackendStatus struct {
	// Backend is its base URL.
	Backend string `json:"backend"`
	// State is healthy, or ejected while it is skipped for its cool-down
	// after failing too often in a row.
	State               string `json:"state"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
	Ejections           uint64 `json:"ejections"`
}

// Condition is one status condition.
type Condition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	doc := StatusDocument{SchemaVersion: "v1", InstanceID: s.instanceID, ObservedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	cond := func(t, st, reason string) { doc.Conditions = append(doc.Conditions, Condition{t, st, reason}) }
	cond("Live", "True", "ProcessRunning")
	state, _, _ := s.opts.Startup.snapshot()
	switch state {
	case "complete":
		cond("StartupComplete", "True", "StartupComplete")
	case "failed":
		cond("StartupComplete", "False", "StartupFailed")
	case "starting":
		cond("StartupComplete", "False", "StartupIncomplete")
	default:
		cond("StartupComplete", "Unknown", "StartupUnobserved")
	}
	gen := s.cfg.Runtime().Current()
	if gen == nil {
		cond("ActiveConfigAvailable", "False", "NoActiveConfig")
	} else {
		cond("ActiveConfigAvailable", "True", "ActiveConfigAvailable")
		doc.ActiveConfigHash = gen.Hash()
	}
	h := s.cfg.Hashes()
	if h.Activation != nil {
		doc.ActivationStage = h.Activation.Stage
	}
	failed := false
	switch {
	case h.ActivationStatus == StatusFailed:
		cond("ConfigConverged", "False", "ConfigActivationFailed")
		failed = true
	case h.ActivationStatus == StatusPending && h.Activation != nil && h.Activation.Result == "superseded":
		cond("ConfigConverged", "False", "ConfigActivationSuperseded")
	case h.ActivationStatus == StatusPending:
		cond("ConfigConverged", "False", "ConfigActivationPending")
	case h.ActivationStatus == StatusUnknown || gen == nil:
		cond("ConfigConverged", "Unknown", "ConfigIdentityUnobserved")
	case gen.Hash() == h.SourceConfigHash:
		cond("ConfigConverged", "True", "ConfigHashesMatch")
	default:
		cond("ConfigConverged", "False", "ConfigActivationPending")
	}
	// Known failures make Ready false; otherwise readiness depends on
	// upstream backends this process has not observed, so it is Unknown —
	// never True while dependencies are unobserved.
	switch {
	case state == "failed":
		cond("Ready", "False", "StartupFailed")
	case state != "complete" && state != "":
		cond("Ready", "False", "StartupIncomplete")
	case state == "":
		cond("Ready", "Unknown", "StartupUnobserved")
	case gen == nil:
		cond("Ready", "False", "NoActiveConfig")
	case failed:
		cond("Ready", "False", "ConfigActivationFailed")
	default:
		cond("Ready", "Unknown", "RequiredDependenciesUnobserved")
	}
	if s.opts.Backends != nil {
		for _, b := range s.opts.Backends() {
			st := BackendStatus{Backend: b.Backend, State: "healthy", ConsecutiveFailures: b.ConsecutiveFailures, Ejections: b.Ejections}
			if b.Ejected {
				st.State = "ejected"
			}
			doc.Backends = append(doc.Backends, st)
		}
	}
	writeJSON(w, http.StatusOK, doc)
}

// Discovery answers GET /api/v1.
type Discovery struct {
	Service   string          `json:"service"`
	Version   string          `json:"version"`
	OpenAPI   string          `json:"openapi"`
	Endpoints []EndpointEntry `json:"endpoints"`
}

// EndpointEntry describes one route.
type EndpointEntry struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Summary     string `json:"summary"`
	Permission  string `json:"permission"`
	Sensitivity string `json:"sensitivity"`
	Mutation    bool   `json:"mutation"`
	Audited     bool   `json:"audited"`
}

func (s *Server) discovery(w http.ResponseWriter, r *http.Request) {
	out := Discovery{Service: "junction-management", Version: s.opts.Version, OpenAPI: "/openapi.json", Endpoints: make([]EndpointEntry, 0, len(s.routes))}
	for _, rt := range s.routes {
		perm := rt.perm
		if perm == PermPublic {
			perm = "public"
		}
		out.Endpoints = append(out.Endpoints, EndpointEntry{Method: rt.method, Path: rt.path, Summary: rt.summary, Permission: perm,
			Sensitivity: rt.sensitivity, Mutation: rt.method != "GET" && rt.audit != "", Audited: rt.audit != ""})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "limit must be an integer from 1 to 1000 (got %q)", v))
			return
		}
		limit = n
	}
	var after int64
	if v := q.Get("after_sequence"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "after_sequence must be a non-negative integer (got %q)", v))
			return
		}
		after = n
	}
	writeJSON(w, http.StatusOK, s.cfg.Audit().List(q.Get("action"), after, limit))
}

// OutcomeRequest is an outcome submission.
type OutcomeRequest struct {
	// ReplayID is a replay record's id (GET /api/v1/observability/replays).
	ReplayID string `json:"replay_id" oas:"required,minLength=1,maxLength=256"`
	// Target is what is judged: decision (was the routed decision right?)
	// is measured as router_classification_accuracy; others are kept.
	Target string `json:"target" oas:"required,minLength=1,maxLength=256"`
	// Verdict is correct or incorrect on target decision; free on others.
	Verdict string   `json:"verdict" oas:"required,minLength=1,maxLength=256"`
	Score   *float64 `json:"score,omitempty"`
	// Source labels where the verdict came from (user, judge); provenance
	// is the authenticated principal, whatever this says.
	Source string `json:"source,omitempty" oas:"maxLength=256"`
}
