package mgmt

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/recipes"
)

// InputMaxTokens is the input budget of the bindings the diagnostics call
// (estimated tokens, signal.EstimateTokens). The lexical bindings have no
// physical context window; the budget bounds the work one call can ask for.
const InputMaxTokens = 32768

// modelDeadline bounds a typed model call (the spec's two minutes).
const modelDeadline = 2 * time.Minute

// modelsOf returns the generation's bindings, with the lexical fallbacks
// (built once per server) where the generation left a kind unbound.
func (s *Server) modelsOf(gen *engine.Generation) (signal.Models, error) {
	m := gen.Models()
	if m.Domain != nil && m.Jailbreak != nil && m.Embedder != nil {
		return m, nil
	}
	if _, err := s.lexicalModels(); err != nil {
		return m, err
	}
	if m.Domain == nil {
		m.Domain = s.fallback.Domain
	}
	if m.Jailbreak == nil {
		m.Jailbreak = s.fallback.Jailbreak
	}
	if m.Embedder == nil {
		m.Embedder = s.fallback.Embedder
	}
	return m, nil
}

// lexicalModels are the lexical fallbacks, built once per server.
func (s *Server) lexicalModels() (signal.Models, error) {
	s.fallbackOnce.Do(func() {
		var err error
		if s.fallback.Domain, err = signal.LexicalDomain(); err != nil {
			s.fallbackErr = err
			return
		}
		if s.fallback.Jailbreak, err = signal.LexicalJailbreak(); err != nil {
			s.fallbackErr = err
			return
		}
		s.fallback.Embedder = signal.HashedEmbedder()
	})
	if s.fallbackErr != nil {
		return s.fallback, newErr(http.StatusServiceUnavailable, CodeModelNotLoaded, "the lexical fallback models did not load: %v", s.fallbackErr)
	}
	return s.fallback, nil
}

// recipeIn resolves a recipe name (empty: the default) in gen.
func recipeIn(gen *engine.Generation, name string) (*recipes.Recipe, error) {
	if name == "" {
		name = gen.DefaultRecipe()
	}
	rc, ok := gen.Document().Recipe(name)
	if !ok {
		names := make([]string, 0, len(gen.Document().Recipes))
		for _, r := range gen.Document().Recipes {
			names = append(names, r.Name)
		}
		return nil, newErr(http.StatusNotFound, CodeUnknownRecipe, "no recipe %q in the serving configuration; recipes: %s", name, strings.Join(names, ", "))
	}
	return rc, nil
}

// checkText enforces non-empty text within the input budget. Earlier-revision
// paths answer TEXT_TOO_LONG, current ones INVALID_INPUT with the limit.
func checkText(r *http.Request, field string, texts ...string) error {
	total := 0
	for _, t := range texts {
		if strings.TrimSpace(t) == "" {
			return newErr(http.StatusBadRequest, CodeInvalidInput, "%s must be a non-empty string", field)
		}
		total += signal.EstimateTokens(t)
	}
	if total > InputMaxTokens {
		code := CodeInvalidInput
		if strings.HasPrefix(r.URL.Path, "/api/v1/classify/") {
			code = CodeTextTooLong
		}
		e := newErr(http.StatusBadRequest, code, "%s is about %d tokens, over the binding's input budget of %d tokens", field, total, InputMaxTokens)
		e.body.Error.Limit = &InputLimit{InputMaxTokens: InputMaxTokens, InputTokens: total}
		return e
	}
	return nil
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }

// ---- routing preview ----

// PreviewRequest is POST /api/v1/routing/preview: text or a chat messages list.
type PreviewRequest struct {
	Text     string            `json:"text,omitempty" oas:"oneof=input,minLength=1,pattern=\\S"`
	Messages []json.RawMessage `json:"messages,omitempty" oas:"oneof=input,messages"`
	Recipe   string            `json:"recipe,omitempty"`
	// Model is the model the client would ask for; MoM (routing) when empty.
	Model string `json:"model,omitempty"`
}

// PreviewSignal is one configured signal's outcome.
type PreviewSignal struct {
	signal.Result
	// Evaluated is false for a signal no decision references: routing never
	// computes it, so neither does the preview.
	Evaluated bool   `json:"evaluated"`
	Note      string `json:"note,omitempty"`
}

// SignalError is a signal that could not be fully evaluated.
type SignalError struct {
	Type string `json:"type"`
	Name string `json:"name"`
	Code string `json:"code"`
}

// PreviewResponse explains what the live path would do with the request.
type PreviewResponse struct {
	Recipe           string          `json:"recipe"`
	ConfigVersion    int64           `json:"config_version"`
	ConfigHash       string          `json:"config_hash"`
	Signals          []PreviewSignal `json:"signals"`
	SignalErrors     []SignalError   `json:"signal_errors"`
	Decision         string          `json:"decision,omitempty"`
	MatchedRules     []string        `json:"matched_rules"`
	Confidence       float64         `json:"confidence"`
	ReasonCode       string          `json:"reason_code"`
	SelectionStatus  string          `json:"selection_status"`
	SelectionMethod  string          `json:"selection_method,omitempty"`
	SelectedModel    string          `json:"selected_model,omitempty"`
	Reasoning        any             `json:"reasoning,omitempty"`
	Plugins          []string        `json:"plugins"`
	Block            *engine.Block   `json:"block,omitempty"`
	ClassificationMS float64         `json:"classification_time_ms"`
	BackendCalls     int             `json:"backend_calls"`
}

func previewInput(req *PreviewRequest) (signal.Input, error) {
	switch {
	case len(req.Messages) > 0 && req.Text != "":
		return signal.Input{}, newErr(http.StatusBadRequest, CodeInvalidInput, "give text or messages, not both")
	case len(req.Messages) > 0:
		body, _ := json.Marshal(map[string]any{"model": engine.ModelMoM, "messages": req.Messages})
		cr, err := chat.Parse(body)
		if err != nil {
			return signal.Input{}, newErr(http.StatusBadRequest, CodeInvalidInput, "messages: %v", err)
		}
		return dataplane.Input(cr), nil
	case strings.TrimSpace(req.Text) != "":
		return signal.Input{Text: req.Text, UserTexts: []string{req.Text}, AllTexts: []string{req.Text}}, nil
	}
	return signal.Input{}, newErr(http.StatusBadRequest, CodeInvalidInput, "give text (a string) or messages (a chat messages list)")
}

func (s *Server) routingPreview(w http.ResponseWriter, r *http.Request) {
	var req PreviewRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	in, err := previewInput(&req)
	if err != nil {
		writeError(w, err)
		return
	}
	// No input budget here: over it, guard and PII signals report
	// input_limit in signal_errors (what they did read still counts) and the
	// unknown-signal policy decides the route, as on the live path.
	if strings.TrimSpace(strings.Join(in.AllTexts, "")) == "" {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "the input must be a non-empty string"))
		return
	}
	gen := s.cfg.Runtime().Current()
	rc, err := recipeIn(gen, req.Recipe)
	if err != nil {
		writeError(w, err)
		return
	}
	model := req.Model
	if model == "" {
		model = engine.ModelMoM
	}
	start := time.Now()
	res, err := gen.Route(r.Context(), rc.Name, &engine.Request{Model: model, Input: in})
	s.stats.observe("routing_preview", time.Since(start), err)
	if err != nil {
		if errors.Is(err, engine.ErrUnknownModel) {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "%v", err))
			return
		}
		writeError(w, err)
		return
	}
	out := PreviewResponse{Recipe: res.Recipe, ConfigVersion: s.cfg.ConfigVersion(), ConfigHash: gen.Hash(),
		SignalErrors: []SignalError{}, MatchedRules: res.MatchedRules, Confidence: res.Confidence, ReasonCode: res.ReasonCode,
		Decision: res.Decision, Block: res.Block, Plugins: []string{}, ClassificationMS: ms(res.ClassificationTime)}
	if out.MatchedRules == nil {
		out.MatchedRules = []string{}
	}
	evaluated := map[string]signal.Result{}
	for _, sr := range res.Signals {
		evaluated[sr.Kind+"\x00"+sr.Name] = sr
		if sr.Error != "" {
			out.SignalErrors = append(out.SignalErrors, SignalError{Type: sr.Kind, Name: sr.Name, Code: sr.Error})
		}
	}
	for _, sig := range configuredSignals(rc) {
		if sr, ok := evaluated[sig[0]+"\x00"+sig[1]]; ok {
			out.Signals = append(out.Signals, PreviewSignal{Result: sr, Evaluated: true})
			continue
		}
		out.Signals = append(out.Signals, PreviewSignal{Result: signal.Result{Kind: sig[0], Name: sig[1]}, Note: "no decision references this signal, so routing does not compute it"})
	}
	s.previewUnreferenced(r.Context(), gen, rc, &in, out.Signals)
	fast := false
	for _, p := range res.Plugins {
		out.Plugins = append(out.Plugins, p.Type)
		if p.Type == "fast_response" {
			fast = true
		}
	}
	switch {
	case res.Block != nil:
		out.SelectionStatus = "blocked"
	case fast:
		out.SelectionStatus, out.SelectionMethod = "not_required", "fast_response"
	default:
		out.SelectionStatus, out.SelectionMethod, out.SelectedModel, out.Reasoning = "selected", res.Selection, res.Model, res.Reasoning
	}
	writeJSON(w, http.StatusOK, out)
}

// previewUnreferenced computes, for the preview only, the signals no
// decision references (routing skips them). The full signal sets are
// compiled once per generation and recipe, with the generation's bindings.
func (s *Server) previewUnreferenced(ctx context.Context, gen *engine.Generation, rc *recipes.Recipe, in *signal.Input, out []PreviewSignal) {
	missing := false
	for _, p := range out {
		missing = missing || !p.Evaluated
	}
	if !missing {
		return
	}
	sets, err := s.allSignals(ctx, gen, rc)
	if err != nil {
		for i := range out {
			if !out[i].Evaluated {
				out[i].Error, out[i].Note = signal.CodeModelError, "could not compile this signal for the preview: "+err.Error()
			}
		}
		return
	}
	byKey := map[string]signal.Result{}
	for _, set := range sets {
		for _, r := range set.Evaluate(ctx, in) {
			byKey[r.Kind+"\x00"+r.Name] = r
		}
	}
	for i := range out {
		if out[i].Evaluated {
			continue
		}
		if r, ok := byKey[out[i].Kind+"\x00"+out[i].Name]; ok {
			out[i].Result, out[i].Evaluated = r, true
			out[i].Note = "no decision references this signal: computed for this preview only"
		}
	}
}

type previewSets struct {
	gen  *engine.Generation
	sets []signal.Set
}

func (s *Server) allSignals(ctx context.Context, gen *engine.Generation, rc *recipes.Recipe) ([]signal.Set, error) {
	s.previewMu.Lock()
	defer s.previewMu.Unlock()
	if p, ok := s.previewCache[rc.Name]; ok && p.gen == gen {
		return p.sets, nil
	}
	models, err := s.modelsOf(gen)
	if err != nil {
		return nil, err
	}
	var opts signal.Options
	if len(rc.Signals.Language) > 0 {
		var codes []string
		for _, l := range rc.Signals.Language {
			codes = append(codes, l.Languages...)
		}
		det := gen.Language()
		if det == nil {
			det = s.langDetector
		}
		for _, c := range codes {
			if det == nil || !det.Knows(c) {
				det = nil
				break
			}
		}
		if det == nil {
			// Built once per server, not per generation: lingua's models
			// take seconds to load.
			if det, err = signal.NewLanguageDetector(codes...); err != nil {
				return nil, err
			}
			s.langDetector = det
		}
		opts.Language = det
	}
	sets, err := signal.CompileWith(ctx, rc.Signals, nil, models, opts)
	if err != nil {
		return nil, err
	}
	if s.previewCache == nil {
		s.previewCache = map[string]previewSets{}
	}
	s.previewCache[rc.Name] = previewSets{gen: gen, sets: sets}
	return sets, nil
}

// configuredSignals lists a recipe's signals as (kind, name) in kind order.
func configuredSignals(rc *recipes.Recipe) [][2]string {
	var out [][2]string
	for _, kind := range recipes.Kinds {
		for _, n := range rc.Signals.Names(kind) {
			out = append(out, [2]string{kind, n})
		}
	}
	return out
}

// ---- statistics ----

// ClassificationMetrics answers GET /api/v1/observability/classification-metrics.
type ClassificationMetrics struct {
	Tasks []TaskMetrics `json:"tasks"`
	Since string        `json:"since"`
}

// TaskMetrics counts one diagnostics task's calls.
type TaskMetrics struct {
	Task         string  `json:"task"`
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	AverageMS    float64 `json:"average_latency_ms"`
	MaxLatencyMS float64 `json:"max_latency_ms"`
}

type classifyStats struct {
	mu    sync.Mutex
	since time.Time
	tasks map[string]*taskStat
}

type taskStat struct {
	n, errs int64
	total   time.Duration
	max     time.Duration
}

func newClassifyStats() *classifyStats {
	return &classifyStats{since: time.Now(), tasks: map[string]*taskStat{}}
}

func (c *classifyStats) observe(task string, d time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tasks[task]
	if t == nil {
		t = &taskStat{}
		c.tasks[task] = t
	}
	t.n++
	if err != nil {
		t.errs++
	}
	t.total += d
	t.max = max(t.max, d)
}

func (c *classifyStats) snapshot() ClassificationMetrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := ClassificationMetrics{Tasks: []TaskMetrics{}, Since: c.since.UTC().Format(time.RFC3339)}
	for name, t := range c.tasks {
		tm := TaskMetrics{Task: name, Requests: t.n, Errors: t.errs, MaxLatencyMS: ms(t.max)}
		if t.n > 0 {
			tm.AverageMS = ms(t.total / time.Duration(t.n))
		}
		out.Tasks = append(out.Tasks, tm)
	}
	sort.Slice(out.Tasks, func(i, j int) bool { return out.Tasks[i].Task < out.Tasks[j].Task })
	return out
}

func (s *Server) classificationMetrics(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.stats.snapshot())
}

// ---- honest refusals ----

func (s *Server) notImplemented(why string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeError(w, newErr(http.StatusNotImplemented, CodeNotImplemented, "%s %s is a placeholder of the earlier revision: %s", r.Method, r.URL.Path, why))
	}
}

// TextRequest is a body with one text.
type TextRequest struct {
	Text   string `json:"text" oas:"required,minLength=1"`
	Recipe string `json:"recipe,omitempty"`
}

// modelErr maps a model failure: a deadline is 504, anything else 500.
func modelErr(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return newErr(http.StatusRequestTimeout, CodeTimeout, "%s did not finish within %s", what, modelDeadline)
	}
	return newErr(http.StatusInternalServerError, CodeClassificationError, "%s failed: %v", what, err)
}
