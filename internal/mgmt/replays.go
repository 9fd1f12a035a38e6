package mgmt

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/replay"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/recipes"
)

// ReplayOptions serve the replay loop: router_replay's records, the what-if
// evaluation over them and the outcomes submitted on them.
type ReplayOptions struct {
	// Store keeps the records and outcomes (required).
	Store storage.Replays
	// Metrics receives router_classification_accuracy, measured from the
	// outcomes; nil publishes none.
	Metrics *metrics.Metrics
	// Flush, when set, waits until the records of finished requests are
	// written (the recorder writes behind the requests), so that an
	// evaluation sees the traffic up to the moment it is asked.
	Flush func(ctx context.Context) error
}

// replayRoute answers 503 while there is no replay store.
func (s *Server) replayRoute(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Replays == nil || s.opts.Replays.Store == nil {
			writeError(w, newErr(http.StatusServiceUnavailable, CodeServiceUnavailable,
				"the replay store is unavailable: junction serve keeps router_replay's records in its stored data (the data directory, or global.storage's backend)"))
			return
		}
		h(w, r)
	}
}

// ReplaySummary is one record in a list.
type ReplaySummary struct {
	ID        string   `json:"id"`
	Object    string   `json:"object"`
	RequestID string   `json:"request_id"`
	CreatedAt int64    `json:"created_at"`
	Recipe    string   `json:"recipe"`
	Decision  string   `json:"decision"`
	Model     string   `json:"model"`
	Status    int      `json:"status"`
	LatencyMS float64  `json:"latency_ms"`
	Cost      *float64 `json:"cost,omitempty"`
	Currency  string   `json:"currency,omitempty"`
	// HasInput: the routing input was recorded (record_prompt), so an
	// evaluation can re-route the request.
	HasInput  bool `json:"has_input"`
	HasShadow bool `json:"has_shadow"`
}

// ReplayObject is one record with everything router_replay kept.
type ReplayObject struct {
	replay.Record
	Object string `json:"object"`
}

var replayQuery = []string{"recipe", "decision", "model", "request_id", "since", "until"}

// parseWhen reads a time bound: RFC 3339, or Unix seconds.
func parseWhen(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	var t time.Time
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		t = time.Unix(0, 0).Add(time.Duration(n * 1e9)).UTC()
		if n < 0 || n > 9e9 {
			t = time.Time{}
		}
	} else if t, err = time.Parse(time.RFC3339, v); err != nil {
		return time.Time{}, newErr(http.StatusBadRequest, CodeInvalidInput, "%s must be an RFC 3339 time (2026-01-02T15:04:05Z) or Unix seconds (got %q)", name, v)
	}
	// Records keep nanoseconds since 1970 in 64 bits: years 1970 to 2261.
	if t.Year() < 1970 || t.Year() > 2261 {
		return time.Time{}, newErr(http.StatusBadRequest, CodeInvalidInput, "%s must lie between 1970 and 2261 (got %q)", name, v)
	}
	return t, nil
}

func (s *Server) replayQueryOf(r *http.Request) (storage.ReplayQuery, error) {
	q := r.URL.Query()
	rq := storage.ReplayQuery{Recipe: q.Get("recipe"), Decision: q.Get("decision"), Model: q.Get("model"), RequestID: q.Get("request_id")}
	var err error
	if rq.Since, err = parseWhen("since", q.Get("since")); err != nil {
		return rq, err
	}
	if rq.Until, err = parseWhen("until", q.Get("until")); err != nil {
		return rq, err
	}
	return rq, nil
}

// shown is a record as principal may see it: the recorded input (already
// without personal data) needs secret_view, as request text does.
func shown(r *http.Request, rec replay.Record) replay.Record {
	if rec.Input != nil && !principalOf(r.Context()).Has(PermSecretView) {
		in := *rec.Input
		in.Text, in.UserTexts, in.AllTexts = redacted, nil, nil
		rec.Input = &in
	}
	return rec
}

func (s *Server) listReplays(w http.ResponseWriter, r *http.Request) {
	rq, err := s.replayQueryOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	o, err := listOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	page, err := s.opts.Replays.Store.ListReplays(r.Context(), rq, o)
	if err != nil {
		writeError(w, storageErr("replays", err))
		return
	}
	writeJSON(w, http.StatusOK, listOf(page, func(rp storage.Replay) ReplaySummary {
		sum := ReplaySummary{ID: rp.ID, Object: "replay", RequestID: rp.RequestID, CreatedAt: rp.CreatedAt.Unix(), Recipe: rp.Recipe, Decision: rp.Decision, Model: rp.Model, Status: rp.Status}
		if rec, err := replay.Decode(rp.Record); err == nil {
			sum.LatencyMS, sum.Cost, sum.Currency, sum.HasInput, sum.HasShadow = rec.LatencyMS, rec.Cost, rec.Currency, rec.Input != nil, rec.Shadow != nil
		}
		return sum
	}, func(v ReplaySummary) string { return v.ID }))
}

func (s *Server) getReplay(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	rp, err := s.opts.Replays.Store.GetReplay(r.Context(), id)
	if err != nil {
		writeError(w, storageErr("replay "+id, err))
		return
	}
	rec, err := replay.Decode(rp.Record)
	if err != nil {
		writeError(w, newErr(http.StatusInternalServerError, CodeInternal, "replay %s: the stored record does not decode: %v", id, err))
		return
	}
	writeJSON(w, http.StatusOK, ReplayObject{Record: shown(r, rec), Object: "replay"})
}

// ReplayEvaluateRequest is POST /api/v1/observability/replays/evaluate: a
// candidate (a whole configuration, a merge patch of the active one, or a
// merge patch of one recipe) routed over a window of recorded traffic.
type ReplayEvaluateRequest struct {
	// Config is a whole candidate configuration (JSON).
	Config json.RawMessage `json:"config,omitempty" oas:"oneof=candidate,object"`
	// Patch is a JSON merge patch (RFC 7386) of the active configuration.
	Patch json.RawMessage `json:"patch,omitempty" oas:"oneof=candidate,object"`
	// RecipePatch is a JSON merge patch of one recipe.
	RecipePatch *RecipePatch `json:"recipe_patch,omitempty" oas:"oneof=candidate"`
	// Window selects the records (default: the newest 10,000).
	Window *ReplayWindow `json:"window,omitempty"`
	// ChangesLimit bounds the changed requests listed (1-1000, default 100).
	ChangesLimit int `json:"changes_limit,omitempty" oas:"min=1,max=1000"`
}

// RecipePatch is a merge patch of one recipe of the active configuration.
type RecipePatch struct {
	Recipe string          `json:"recipe" oas:"required,minLength=1"`
	Patch  json.RawMessage `json:"patch" oas:"required,object"`
}

// ReplayWindow selects records: the newest limit matching the filters.
type ReplayWindow struct {
	Recipe   string `json:"recipe,omitempty"`
	Decision string `json:"decision,omitempty"`
	Model    string `json:"model,omitempty"`
	Since    string `json:"since,omitempty" oas:"date-time"`
	Until    string `json:"until,omitempty" oas:"date-time"`
	// Limit is the most records evaluated (1-100000, default 10000).
	Limit int `json:"limit,omitempty" oas:"min=1,max=100000"`
}

// evaluateDeadline bounds one evaluation (408 past it: narrow the window).
const evaluateDeadline = 2 * time.Minute

// ReplayEvaluation answers an evaluation: nothing was applied.
type ReplayEvaluation struct {
	replay.Evaluation
	Applied bool `json:"applied"`
	// CandidateHash is the candidate document's runtime hash.
	CandidateHash string `json:"candidate_hash"`
}

func (s *Server) evaluateReplays(w http.ResponseWriter, r *http.Request) {
	if !principalOf(r.Context()).Has(PermConfigRead) {
		writeError(w, newErr(http.StatusForbidden, CodeForbidden, "evaluating a candidate configuration needs permission %s besides %s", PermConfigRead, PermDataRead))
		return
	}
	var req ReplayEvaluateRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	n := 0
	for _, given := range []bool{len(req.Config) > 0, len(req.Patch) > 0, req.RecipePatch != nil} {
		if given {
			n++
		}
	}
	if n != 1 {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "give exactly one candidate: config (a whole configuration), patch (a merge patch of the active one) or recipe_patch {recipe, patch}"))
		return
	}
	if req.ChangesLimit < 0 || req.ChangesLimit > replay.MaxChanges {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "changes_limit must be from 1 to %d", replay.MaxChanges))
		return
	}
	var win replay.Window
	if wq := req.Window; wq != nil {
		win = replay.Window{Recipe: wq.Recipe, Decision: wq.Decision, Model: wq.Model, Limit: wq.Limit}
		var err error
		if win.Since, err = parseWhen("window.since", wq.Since); err != nil {
			writeError(w, err)
			return
		}
		if win.Until, err = parseWhen("window.until", wq.Until); err != nil {
			writeError(w, err)
			return
		}
		if wq.Limit < 0 || wq.Limit > replay.MaxWindow {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "window.limit must be from 1 to %d", replay.MaxWindow))
			return
		}
	}
	cur, _, _ := s.cfg.persisted()
	raw, err := candidateSource(cur, &req)
	if err != nil {
		writeError(w, err)
		return
	}
	doc, _, err := recipes.ParseSource(raw)
	if err != nil {
		stage := "validate"
		if ve, ok := recipes.AsValidationError(err); ok && len(ve.Problems) > 0 {
			stage = ve.Problems[0].Stage()
		}
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidConfig, "the candidate configuration is invalid; see reasons").withReasons(reasonsOf(stage, err)))
		return
	}
	if f := s.opts.Replays.Flush; f != nil {
		fctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		_ = f(fctx) // what is not written by then is left out
		cancel()
	}
	gen := s.cfg.Runtime().Current()
	ctx, cancel := context.WithTimeout(r.Context(), evaluateDeadline)
	defer cancel()
	ev, err := replay.Evaluate(ctx, s.opts.Replays.Store, doc, gen.Document(), win, req.ChangesLimit, gen.Language())
	if err != nil {
		if errors.Is(err, storage.ErrInvalid) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			writeError(w, storageErr("the evaluation", err))
			return
		}
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidConfig, "%v", err))
		return
	}
	writeJSON(w, http.StatusOK, ReplayEvaluation{Evaluation: *ev, Applied: false, CandidateHash: recipes.Hash(doc)})
}

// candidateSource builds the candidate document's source from the active
// persisted document cur and the request's candidate.
func candidateSource(cur []byte, req *ReplayEvaluateRequest) ([]byte, error) {
	if len(req.Config) > 0 {
		return req.Config, nil
	}
	base, err := decodeGeneric(cur)
	if err != nil {
		return nil, err
	}
	if len(req.Patch) > 0 {
		p, err := decodeGeneric(req.Patch)
		if _, ok := p.(map[string]any); err != nil || !ok {
			return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "patch must be a JSON merge patch object")
		}
		merged := mergePatch(base, p)
		curV, _ := decodeGeneric(cur)
		restoreRedacted(merged, curV)
		return json.Marshal(merged)
	}
	rp := req.RecipePatch
	p, err := decodeGeneric(rp.Patch)
	if _, ok := p.(map[string]any); err != nil || !ok {
		return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "recipe_patch.patch must be a JSON merge patch object")
	}
	doc := base.(map[string]any)
	list, i := recipeIndex(doc, rp.Recipe)
	if i < 0 {
		return nil, newErr(http.StatusNotFound, CodeUnknownRecipe, "no recipe %q to patch", rp.Recipe)
	}
	patched := mergePatch(list[i], p)
	if m, ok := patched.(map[string]any); ok {
		m["name"] = rp.Recipe
	}
	list[i] = patched
	doc["recipes"] = list
	curV, _ := decodeGeneric(cur)
	restoreRedacted(doc, curV)
	return json.Marshal(doc)
}

// OutcomeObject is a kept outcome.
type OutcomeObject struct {
	ID        string   `json:"id"`
	Object    string   `json:"object"`
	ReplayID  string   `json:"replay_id"`
	Target    string   `json:"target"`
	Verdict   string   `json:"verdict"`
	Score     *float64 `json:"score,omitempty"`
	Source    string   `json:"source,omitempty"`
	Principal string   `json:"principal"`
	Category  string   `json:"category"`
	CreatedAt int64    `json:"created_at"`
	// Replayed: an earlier submission with the same Idempotency-Key.
	Replayed bool `json:"replayed"`
}

func (s *Server) submitOutcome(w http.ResponseWriter, r *http.Request) {
	var req OutcomeRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	for name, v := range map[string]string{"replay_id": req.ReplayID, "target": req.Target, "verdict": req.Verdict} {
		if strings.TrimSpace(v) == "" {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "%s is required", name))
			return
		}
	}
	if req.Target == replay.TargetDecision && req.Verdict != replay.VerdictCorrect && req.Verdict != replay.VerdictIncorrect {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "an outcome on target decision has verdict correct or incorrect (got %q)", req.Verdict))
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if len(key) > storage.MaxIdempotencyKey {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "Idempotency-Key is longer than %d bytes", storage.MaxIdempotencyKey))
		return
	}
	// Provenance is the authenticated principal; the body's source is kept
	// as a label only.
	p := principalOf(r.Context())
	o, created, err := s.opts.Replays.Store.AddOutcome(r.Context(), storage.Outcome{ReplayID: req.ReplayID, Target: req.Target, Verdict: req.Verdict,
		Score: req.Score, Source: req.Source, Principal: p.Name, IdempotencyKey: key})
	if err != nil {
		writeError(w, storageErr("outcome", err))
		return
	}
	if created && o.Target == replay.TargetDecision {
		if _, err := replay.MeasureAccuracy(context.WithoutCancel(r.Context()), s.opts.Replays.Store, s.opts.Replays.Metrics); err != nil {
			s.log.Warn("measuring classification accuracy from outcomes failed", "error", err)
		}
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	writeJSON(w, status, OutcomeObject{ID: o.ID, Object: "outcome", ReplayID: o.ReplayID, Target: o.Target, Verdict: o.Verdict, Score: o.Score, Source: o.Source,
		Principal: o.Principal, Category: o.Category, CreatedAt: o.CreatedAt.Unix(), Replayed: !created})
}
