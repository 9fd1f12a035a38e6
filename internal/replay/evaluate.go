package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/recipes"
)

// Limits of an evaluation.
const (
	DefaultWindow  = 10_000
	MaxWindow      = 100_000
	DefaultChanges = 100
	MaxChanges     = 1000
)

// Window selects the recorded traffic an evaluation replays: the newest
// Limit records matching the filters.
type Window struct {
	Recipe, Decision, Model string
	Since, Until            time.Time
	Limit                   int
}

// Evaluation is what a candidate configuration would have done with a
// window of recorded traffic. Nothing is applied.
type Evaluation struct {
	// Method says how requests were re-routed.
	Method string `json:"method"`
	// Records is how many records the window held; Evaluated how many of
	// them were re-routed; Skipped the others, by reason.
	Records   int `json:"records"`
	Evaluated int `json:"evaluated"`
	// FromSignals counts the evaluated records that had no recorded
	// input (record_prompt off): routed from their recorded signal
	// results, which a candidate's new signals or changed thresholds
	// cannot change (a signal not recorded does not match).
	FromSignals    int            `json:"from_signals"`
	Skipped        int            `json:"skipped"`
	SkippedReasons map[string]int `json:"skipped_reasons"`
	// Changed counts the evaluated requests whose decision or model
	// would change (DecisionChanged and ModelChanged each).
	Changed         int `json:"changed"`
	DecisionChanged int `json:"decision_changed"`
	ModelChanged    int `json:"model_changed"`
	// BaselineMismatches counts the changed requests that the active
	// configuration, re-routed the same way, does not route as recorded
	// either: the part of Changed that comes from re-routing with
	// model-free signals rather than from the candidate.
	BaselineMismatches int `json:"baseline_mismatches"`
	// ByDecision are the cost and latency deltas grouped by the recorded
	// decision ("" when none matched).
	ByDecision []DecisionDelta `json:"by_decision"`
	// Transitions count each (decision, model) → (decision, model) move.
	Transitions []Transition `json:"transitions"`
	// Changes are the first changed requests, newest first.
	Changes   []Change `json:"changes"`
	Currency  string   `json:"currency,omitempty"`
	ElapsedMS float64  `json:"elapsed_ms"`
}

// DecisionDelta is one recorded decision's share of an evaluation. Costs
// are summed over the requests whose cost is known both ways; latencies are
// means over the requests whose latency is known both ways (a model's
// recorded latency in the window stands for a request moved to it).
type DecisionDelta struct {
	Decision        string  `json:"decision"`
	Requests        int     `json:"requests"`
	Changed         int     `json:"changed"`
	CostBefore      float64 `json:"cost_before"`
	CostAfter       float64 `json:"cost_after"`
	CostDelta       float64 `json:"cost_delta"`
	CostUnknown     int     `json:"cost_unknown"`
	LatencyBeforeMS float64 `json:"latency_before_ms"`
	LatencyAfterMS  float64 `json:"latency_after_ms"`
	LatencyDeltaMS  float64 `json:"latency_delta_ms"`
	LatencyUnknown  int     `json:"latency_unknown"`
}

// Transition is one kind of change.
type Transition struct {
	FromDecision string `json:"from_decision"`
	FromModel    string `json:"from_model"`
	ToDecision   string `json:"to_decision"`
	ToModel      string `json:"to_model"`
	Requests     int    `json:"requests"`
}

// Change is one request that would be routed differently.
type Change struct {
	ReplayID     string   `json:"replay_id"`
	RequestID    string   `json:"request_id"`
	FromDecision string   `json:"from_decision"`
	FromModel    string   `json:"from_model"`
	ToDecision   string   `json:"to_decision"`
	ToModel      string   `json:"to_model"`
	CostDelta    *float64 `json:"cost_delta,omitempty"`
}

// MethodModelFree is the evaluation method: a record with its routing
// input is re-routed by engine.Compile + Route evaluating the model-free
// kinds (ModelFreeKinds) from it, its recorded results standing for the
// model-backed signals (a model-backed signal with no recorded result, new
// in the candidate, takes its lexical fallback); a record without its
// input is routed from its recorded signal results.
const MethodModelFree = "recorded input re-routed: keyword, context and language signals evaluated from it, model-backed signals from their recorded results (lexical fallbacks for those not recorded); records without it routed from their recorded signal results"

// ModelFreeKinds are the signal kinds a replay evaluates from a record's
// text: they need no model, so they answer as live routing did. The
// others (domain, pii, jailbreak, embedding, complexity) may have been
// answered by a model or a deployment the evaluation does not call: their
// recorded results stand in, so a candidate's changed threshold on one of
// them does not change its result.
var ModelFreeKinds = []string{recipes.KindKeyword, recipes.KindContext, recipes.KindLanguage}

// Evaluate routes the window's records with candidate and with active
// (the serving document, for the baseline), both compiled model-free, and
// reports what would change. lang, when it knows every language the
// documents name, is shared with the compiles (lingua loads slowly).
func Evaluate(ctx context.Context, store storage.Replays, candidate, active *recipes.Document, w Window, changesLimit int, lang *signal.LanguageDetector) (*Evaluation, error) {
	return evaluate(ctx, store, candidate, active, w, changesLimit, lang, runtime.GOMAXPROCS(0))
}

// evaluate is Evaluate routing on workers goroutines.
func evaluate(ctx context.Context, store storage.Replays, candidate, active *recipes.Document, w Window, changesLimit int, lang *signal.LanguageDetector, workers int) (*Evaluation, error) {
	start := time.Now()
	if w.Limit <= 0 {
		w.Limit = DefaultWindow
	}
	if w.Limit > MaxWindow {
		return nil, fmt.Errorf("%w: the window holds at most %d records (got %d)", storage.ErrInvalid, MaxWindow, w.Limit)
	}
	if changesLimit <= 0 {
		changesLimit = DefaultChanges
	}
	cand, err := compileModelFree(candidate, lang)
	if err != nil {
		return nil, fmt.Errorf("the candidate configuration does not compile: %w", err)
	}
	base, err := compileModelFree(active, lang)
	if err != nil {
		return nil, fmt.Errorf("the active configuration does not compile model-free: %w", err)
	}
	var recs []Record
	err = store.ScanReplays(ctx, storage.ReplayQuery{Recipe: w.Recipe, Decision: w.Decision, Model: w.Model, Since: w.Since, Until: w.Until}, w.Limit,
		func(r storage.Replay) error {
			rec, err := Decode(r.Record)
			if err != nil {
				rec = Record{ID: r.ID, Recipe: r.Recipe, Decision: r.Decision, Model: r.Model} // counted as undecodable below
			}
			if rec.ID == "" {
				rec.ID = r.ID
			}
			recs = append(recs, rec)
			return nil
		})
	if err != nil {
		return nil, err
	}
	ev := &Evaluation{Method: MethodModelFree, Records: len(recs), SkippedReasons: map[string]int{}, ByDecision: []DecisionDelta{}, Transitions: []Transition{}, Changes: []Change{}}
	// A model's recorded latency stands for requests moved to it.
	latSum, latN := map[string]float64{}, map[string]int{}
	for _, r := range recs {
		if r.Model != "" && r.Status < 400 && r.LatencyMS > 0 {
			latSum[r.Model] += r.LatencyMS
			latN[r.Model]++
		}
	}
	type acc struct {
		DecisionDelta
		latBefore, latAfter float64
		latN                int
	}
	by := map[string]*acc{}
	trans := map[[4]string]int{}
	skip := func(reason string) { ev.Skipped++; ev.SkippedReasons[reason]++ }
	routed := reroute(ctx, cand, base, recs, workers)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i := range recs {
		r, o := &recs[i], &routed[i]
		if o.skip != "" {
			skip(o.skip)
			continue
		}
		res := o.res
		ev.Evaluated++
		if o.fromSignals {
			ev.FromSignals++
		}
		toDecision, toModel := res.Decision, res.Model
		if res.Block != nil {
			toDecision, toModel = "blocked:"+res.Block.Code, ""
		}
		if o.baselineMismatch {
			ev.BaselineMismatches++
		}
		a := by[r.Decision]
		if a == nil {
			a = &acc{DecisionDelta: DecisionDelta{Decision: r.Decision}}
			by[r.Decision] = a
		}
		a.Requests++
		changed := toDecision != r.Decision || toModel != r.Model
		var costDelta *float64
		before, okB := recordedCost(r, candidate)
		after, okA := priced(candidate, toModel, r.Usage)
		if okB && okA {
			a.CostBefore += before
			a.CostAfter += after
			d := after - before
			costDelta = &d
			if ev.Currency == "" {
				ev.Currency = currencyOf(candidate, toModel)
			}
		} else {
			a.CostUnknown++
		}
		if r.LatencyMS > 0 && r.Status < 400 {
			latAfter, ok := r.LatencyMS, true
			if toModel != r.Model {
				if n := latN[toModel]; n > 0 {
					latAfter = latSum[toModel] / float64(n)
				} else {
					ok = false
				}
			}
			if ok {
				a.latBefore += r.LatencyMS
				a.latAfter += latAfter
				a.latN++
			} else {
				a.LatencyUnknown++
			}
		} else {
			a.LatencyUnknown++
		}
		if !changed {
			continue
		}
		ev.Changed++
		a.Changed++
		if toDecision != r.Decision {
			ev.DecisionChanged++
		}
		if toModel != r.Model {
			ev.ModelChanged++
		}
		trans[[4]string{r.Decision, r.Model, toDecision, toModel}]++
		if len(ev.Changes) < changesLimit {
			ev.Changes = append(ev.Changes, Change{ReplayID: r.ID, RequestID: r.RequestID, FromDecision: r.Decision, FromModel: r.Model,
				ToDecision: toDecision, ToModel: toModel, CostDelta: costDelta})
		}
	}
	for _, a := range by {
		a.CostDelta = a.CostAfter - a.CostBefore
		if a.latN > 0 {
			a.LatencyBeforeMS = a.latBefore / float64(a.latN)
			a.LatencyAfterMS = a.latAfter / float64(a.latN)
			a.LatencyDeltaMS = a.LatencyAfterMS - a.LatencyBeforeMS
		}
		ev.ByDecision = append(ev.ByDecision, a.DecisionDelta)
	}
	slices.SortFunc(ev.ByDecision, func(x, y DecisionDelta) int { return cmp.Compare(x.Decision, y.Decision) })
	for k, n := range trans {
		ev.Transitions = append(ev.Transitions, Transition{FromDecision: k[0], FromModel: k[1], ToDecision: k[2], ToModel: k[3], Requests: n})
	}
	slices.SortFunc(ev.Transitions, func(x, y Transition) int {
		if c := cmp.Compare(y.Requests, x.Requests); c != 0 {
			return c
		}
		return cmp.Compare(x.FromDecision+"\x00"+x.ToDecision+"\x00"+x.ToModel, y.FromDecision+"\x00"+y.ToDecision+"\x00"+y.ToModel)
	})
	ev.ElapsedMS = ms(time.Since(start))
	return ev, nil
}

// rerouted is one record's routing by the candidate.
type rerouted struct {
	res              *engine.Result
	skip             string // why it was not routed
	baselineMismatch bool
	fromSignals      bool // routed from the recorded signal results
}

// reroute routes every record with cand, across the cores (routing is
// CPU-bound: the model-free signals), and, for those cand routes otherwise
// than recorded, with base too.
func reroute(ctx context.Context, cand, base *engine.Generation, recs []Record, workers int) []rerouted {
	out := make([]rerouted, len(recs))
	workers = max(1, min(workers, len(recs)/64))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(recs) || ctx.Err() != nil {
					return
				}
				out[i] = rerouteOne(ctx, cand, base, &recs[i])
			}
		}()
	}
	wg.Wait()
	return out
}

func rerouteOne(ctx context.Context, cand, base *engine.Generation, r *Record) rerouted {
	in := &engine.Request{Model: r.RequestedModel}
	// The recorded signal results stand for the signals
	// (engine.Request.Recorded): all of them without the text; with it, the
	// model-backed ones, while the model-free kinds are evaluated from the
	// text (Recompute), as is a model-backed signal nothing was recorded
	// for (its model-free fallback).
	in.Recorded = make([]signal.Result, len(r.Signals))
	for i, s := range r.Signals {
		in.Recorded[i] = signal.Result{Kind: s.Kind, Name: s.Name, Matched: s.Matched, Score: s.Score, Level: s.Level, Method: s.Method,
			Unscanned: s.Unscanned, Error: s.Error, Entities: s.Entities}
	}
	if r.Input != nil {
		in.Input = signal.Input{Text: r.Input.Text, UserTexts: r.Input.UserTexts, AllTexts: r.Input.AllTexts}
		in.Recompute = ModelFreeKinds
	}
	if in.Model == "" {
		in.Model = engine.ModelMoM
	}
	res, err := route(ctx, cand, r.Recipe, in)
	switch {
	case errors.Is(err, engine.ErrUnknownModel):
		return rerouted{skip: "unknown_model"}
	case err != nil:
		return rerouted{skip: "route_failed"}
	}
	o := rerouted{res: res, fromSignals: r.Input == nil}
	if res.Block != nil || res.Decision != r.Decision || res.Model != r.Model {
		b, err := route(ctx, base, r.Recipe, in)
		o.baselineMismatch = err == nil && (b.Decision != r.Decision || b.Model != r.Model)
	}
	return o
}

// compileModelFree compiles doc with the lexical fallbacks for every
// model-backed signal (engine.Options without models).
func compileModelFree(doc *recipes.Document, lang *signal.LanguageDetector) (*engine.Generation, error) {
	opts := engine.Options{}
	if lang != nil && knowsAll(lang, doc) {
		opts.Language = lang
	}
	return engine.Compile(doc, "", opts)
}

func knowsAll(lang *signal.LanguageDetector, doc *recipes.Document) bool {
	for _, r := range doc.Recipes {
		for _, l := range r.Signals.Language {
			for _, c := range l.Languages {
				if !lang.Knows(c) {
					return false
				}
			}
		}
	}
	return true
}

// route routes in with gen in recipe, or in gen's default recipe when gen
// has no such recipe (a candidate that renamed it).
func route(ctx context.Context, gen *engine.Generation, recipe string, in *engine.Request) (*engine.Result, error) {
	res, err := gen.Route(ctx, recipe, in)
	if errors.Is(err, engine.ErrUnknownRecipe) {
		return gen.Route(ctx, "", in)
	}
	return res, err
}

func usageOf(u *Usage) cost.Usage {
	cu := cost.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	if u.CachedTokens > 0 {
		cu.PromptTokensDetails = &cost.PromptDetail{CachedTokens: u.CachedTokens}
	}
	return cu
}

// priced is the cost of usage on model under doc's pricing.
func priced(doc *recipes.Document, model string, u *Usage) (float64, bool) {
	if u == nil || model == "" {
		return 0, u != nil && model == "" // a blocked request costs nothing
	}
	for i := range doc.Providers.Models {
		if m := &doc.Providers.Models[i]; m.Name == model {
			amount, _, ok := cost.Of(m.Pricing, usageOf(u))
			return amount, ok
		}
	}
	return 0, false
}

// recordedCost is what the request cost: as recorded, else its usage
// priced under doc.
func recordedCost(r *Record, doc *recipes.Document) (float64, bool) {
	if r.Cost != nil {
		return *r.Cost, true
	}
	return priced(doc, r.Model, r.Usage)
}

func currencyOf(doc *recipes.Document, model string) string {
	for i := range doc.Providers.Models {
		if m := &doc.Providers.Models[i]; m.Name == model && m.Pricing != nil {
			if m.Pricing.Currency != "" {
				return m.Pricing.Currency
			}
			return "USD"
		}
	}
	return ""
}
