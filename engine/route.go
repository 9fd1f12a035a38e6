package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/engine/reasoning"
	"github.com/junction-router/junction/engine/selection"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// Route: one request through a generation's recipe, its signals evaluated
// (staged sets last, within the signal budget), its decision taken and its
// model chosen.

// Request is what routing reads of a client request.
type Request struct {
	// Model is the model the client asked for: MoM, auto, or a configured name.
	Model string
	Input signal.Input
	// Recorded, when not nil, stands for evaluating the signals: each
	// signal takes the recorded result of the same kind and name (a
	// what-if replay of recorded traffic, where the request's text was not
	// kept); a signal with none recorded does not match (Error
	// ErrorNotRecorded). Input is not read then, unless Recompute is set.
	Recorded []signal.Result
	// Recompute, with Recorded, names the signal kinds evaluated from Input
	// after all (a replay that kept the text re-evaluates the model-free
	// kinds): a signal of another kind takes its recorded result, and one
	// with none recorded (new in the configuration) is evaluated from Input
	// as well.
	Recompute []string
}

// ErrorNotRecorded is the Error of a signal Request.Recorded had no
// result for.
const ErrorNotRecorded = "not_recorded"

// Block is a safety verdict that answers the client 403.
type Block struct {
	// Code is pii_detected or jailbreak_detected.
	Code string `json:"code"`
	// Signal names the signal that blocked.
	Signal   string   `json:"signal"`
	Entities []string `json:"entities_found,omitempty"`
	Message  string   `json:"message"`
}

// Result explains one routing decision. The live path and previews return the
// same structure.
type Result struct {
	Recipe         string          `json:"recipe"`
	RequestedModel string          `json:"requested_model"`
	Signals        []signal.Result `json:"signals"`
	// Decision is the matched decision; empty when none matched and the default
	// model was used.
	Decision     string   `json:"decision,omitempty"`
	MatchedRules []string `json:"matched_rules,omitempty"`
	Confidence   float64  `json:"confidence"`
	// Model is the selected backend model; empty when Block is set.
	Model      string              `json:"model,omitempty"`
	ReasonCode string              `json:"reason_code"`
	Selection  string              `json:"selection_method,omitempty"`
	Reasoning  reasoning.Mode      `json:"reasoning"`
	Plugins    []recipes.PluginRef `json:"plugins,omitempty"`
	Block      *Block              `json:"block,omitempty"`
	// PIIDetected and JailbreakDetected summarise the safety signals for the
	// x-security-checks header.
	PIIDetected bool     `json:"pii_detected"`
	PIIEntities []string `json:"pii_entities,omitempty"`
	// PII is where the personal data is: the spans the evaluated pii signals
	// counted (PII.Scanned is false when no pii signal was evaluated).
	// Plugins read it (through the plugin stage); the JSON form leaves it out.
	PII                PIIScan       `json:"-"`
	JailbreakDetected  bool          `json:"jailbreak_detected"`
	ClassificationTime time.Duration `json:"classification_time_ns"`
	// Policy is the decision's reliability and fallback (the recipe's
	// default route's when no decision matched), every layer merged; shared,
	// never nil after a successful Route. For the front ends; left out of
	// the JSON form. (Generation.Candidates gives the models a fallback may
	// move on to: kept out of Result so that a request without a policy
	// carries nothing more.)
	Policy *recipes.Policy `json:"-"`
}

// PIIScan is what the evaluated pii signals detected, placed in the request.
type PIIScan struct {
	// Scanned: at least one pii signal was evaluated (its result may still
	// be Unscanned: past its deadline or budget).
	Scanned bool
	// Spans are the union of the signals' spans, sorted by message and start,
	// at most signal.MaxPIISpans (those of the newest messages).
	Spans []signal.PIISpan
	// Truncated: more spans were detected than Spans holds.
	Truncated bool
	// Unscanned: some user text was not scanned (over the scan budget, past
	// the signal deadline), so personal data may be where no span says.
	Unscanned bool
}

// merge adds a pii signal's spans to the scan. Every pii signal of a
// recipe reads the same scan, so two signals' spans are equal or disjoint.
func (p *PIIScan) merge(r *signal.Result) {
	p.Scanned = true
	p.Unscanned = p.Unscanned || r.Unscanned
	p.Truncated = p.Truncated || r.SpansTruncated
	if len(r.Spans) == 0 {
		return
	}
	if len(p.Spans) == 0 {
		p.Spans = r.Spans
		return
	}
	merged := make([]signal.PIISpan, 0, len(p.Spans)+len(r.Spans))
	a, b := p.Spans, r.Spans
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && (a[0].Message < b[0].Message || a[0].Message == b[0].Message && a[0].Start < b[0].Start):
			merged, a = append(merged, a[0]), a[1:]
		case len(a) == 0 || b[0].Message < a[0].Message || b[0].Message == a[0].Message && b[0].Start < a[0].Start:
			merged, b = append(merged, b[0]), b[1:]
		default: // the same span
			merged, a, b = append(merged, a[0]), a[1:], b[1:]
		}
	}
	if len(merged) > signal.MaxPIISpans {
		// As each signal does: the newest messages' spans are kept.
		merged, p.Truncated = merged[len(merged)-signal.MaxPIISpans:], true
	}
	p.Spans = merged
}

// Route classifies req under recipe (empty: the default recipe) and decides
// where it goes. It calls no backend. Errors are ErrUnknownRecipe and
// ErrUnknownModel (wrapped with detail).
func (g *Generation) Route(ctx context.Context, recipe string, req *Request) (*Result, error) {
	if recipe == "" {
		recipe = g.defaultRecipe
	}
	cr, ok := g.recipes[recipe]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownRecipe, recipe)
	}
	explicit := !IsRoutingName(req.Model)
	if explicit {
		if _, ok := g.models[req.Model]; !ok {
			return nil, fmt.Errorf("%w %q: use MoM, auto or one of the configured models", ErrUnknownModel, req.Model)
		}
	}
	start := time.Now()
	res := &Result{Recipe: cr.name, RequestedModel: req.Model}
	switch {
	case req.Recorded != nil && len(req.Recompute) > 0:
		res.Signals = g.evaluate(ctx, cr, &req.Input)
		standRecorded(cr, req.Recorded, req.Recompute, res.Signals)
	case req.Recorded != nil:
		res.Signals = recordedSignals(cr, req.Recorded)
	default:
		res.Signals = g.evaluate(ctx, cr, &req.Input)
	}
	applyComposers(cr.composers, res.Signals)
	res.ClassificationTime = time.Since(start)
	for i := range res.Signals {
		s := &res.Signals[i]
		switch s.Kind {
		case recipes.KindPII:
			res.PII.merge(s)
			if len(s.Entities) > 0 {
				res.PIIDetected = true
				res.PIIEntities = mergeSorted(res.PIIEntities, s.Entities)
			}
		case recipes.KindJailbreak:
			if s.Matched {
				res.JailbreakDetected = true
			}
		}
	}
	for _, b := range cr.blockers {
		s := &res.Signals[b.slot]
		if !s.Matched {
			continue
		}
		blk := &Block{Code: b.code, Signal: s.Name}
		switch {
		case s.Unscanned:
			blk.Message = fmt.Sprintf("the request could not be fully checked by safety signal %q (%s) and its policy blocks unscanned input", s.Name, s.Error)
		case b.code == "pii_detected":
			blk.Entities = s.Entities
			blk.Message = "the request contains personal data that this route does not accept: " + strings.Join(s.Entities, ", ")
		default:
			blk.Message = "the request was classified as a jailbreak or prompt-injection attempt"
		}
		res.Block = blk
		res.ReasonCode = ReasonSecurityBlocked
		return res, nil
	}

	var candidates []recipes.ModelRef
	var dr *decisionRoute
	res.Policy = cr.defaultPolicy
	if m, ok := cr.decisions.Evaluate(res.Signals); ok {
		d := m.Decision.Config
		dr = cr.routes[d.Name]
		res.Policy = dr.policy
		res.Decision, res.MatchedRules, res.Confidence = d.Name, m.Matched, m.Confidence
		res.Plugins = d.Plugins
		candidates = d.ModelRefs
		res.ReasonCode = ReasonAutoRouting
		res.Selection = dr.selector.Name()
	} else {
		res.ReasonCode = ReasonDefaultModel
	}
	if len(candidates) == 0 {
		candidates = []recipes.ModelRef{{Model: g.doc.Providers.Defaults.DefaultModel}}
		if res.Selection == "" {
			res.Selection = "default_model"
		}
	}
	if explicit {
		// The client's model stands; the decision's plugins still apply.
		res.Model = req.Model
		res.ReasonCode = ReasonModelSpecified
		res.Selection = "model_specified"
		m := g.models[req.Model]
		res.Reasoning = reasoning.Mode{Family: m.ReasoningFamily}
		return res, nil
	}
	if res.PIIDetected {
		allowed := candidates[:0:0]
		for _, c := range candidates {
			if g.modelAccepts(c.Model, res.PIIEntities) {
				allowed = append(allowed, c)
			}
		}
		switch {
		case len(allowed) == 0:
			res.Block = &Block{Code: "pii_detected", Entities: res.PIIEntities,
				Message: "the request contains personal data (" + strings.Join(res.PIIEntities, ", ") + ") that no candidate model's pii_policy accepts"}
			res.ReasonCode = ReasonSecurityBlocked
			return res, nil
		case allowed[0].Model != candidates[0].Model:
			res.ReasonCode = ReasonPIIAlternative
		}
		candidates = allowed
	}
	var sel selection.Selector = selection.FirstHealthy{}
	if res.Decision != "" {
		sel = dr.selector
	}
	ref, _ := sel.Select(ctx, candidates, g.health)
	res.Model = ref.Model
	res.Reasoning = g.Reasoning(ref)
	return res, nil
}

// Candidates are the models a fallback of res may move on to, in
// configuration order: the matched decision's modelRefs (the default model
// when it has none, or none matched), less those whose pii_policy refuses
// the personal data routing detected. Nil when the client named its model
// or routing blocked the request.
func (g *Generation) Candidates(res *Result) []recipes.ModelRef {
	if res == nil || res.Block != nil || res.ReasonCode == ReasonModelSpecified {
		return nil
	}
	var refs []recipes.ModelRef
	if cr, ok := g.recipes[res.Recipe]; ok && res.Decision != "" {
		if dr := cr.routes[res.Decision]; dr != nil {
			refs = dr.modelRefs
		}
	}
	if len(refs) == 0 {
		refs = []recipes.ModelRef{{Model: g.doc.Providers.Defaults.DefaultModel}}
	}
	if !res.PIIDetected {
		return refs
	}
	allowed := make([]recipes.ModelRef, 0, len(refs))
	for _, c := range refs {
		if g.modelAccepts(c.Model, res.PIIEntities) {
			allowed = append(allowed, c)
		}
	}
	return allowed
}

// Reasoning is the reasoning mode of modelRef ref in its model's family
// syntax: what Route decides for the model it selects, and what a fallback
// to another candidate writes instead.
func (g *Generation) Reasoning(ref recipes.ModelRef) reasoning.Mode {
	m, ok := g.models[ref.Model]
	if !ok {
		return reasoning.Mode{}
	}
	var fam *recipes.ReasoningFamily
	if f, ok := g.doc.Providers.ReasoningFamilies[m.ReasoningFamily]; ok {
		fam = &f
	}
	return reasoning.Resolve(ref, g.doc.Providers.Defaults, m.ReasoningFamily, fam)
}

// applyComposers withdraws the grade of a complexity signal whose composer
// conditions do not all hold.
func applyComposers(composers []composer, results []signal.Result) {
	for _, c := range composers {
		for i, leaf := range c.leaves {
			if !results[leaf].Matched {
				r := &results[c.slot]
				r.Matched = false
				r.Value = "composer condition " + c.labels[i] + " does not hold"
				break
			}
		}
	}
}

func (g *Generation) modelAccepts(model string, entities []string) bool {
	m, ok := g.models[model]
	if !ok {
		return false
	}
	for _, e := range entities {
		if !m.PIIPolicy.Allows(e) {
			return false
		}
	}
	return true
}

func mergeSorted(a, b []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(a)+len(b))
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sortStrings(out)
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// SignalBudget is the time signals may take for a request with ctx's deadline:
// the configured signal_timeout_ms, else the deadline less a tenth of the time
// left (at least one second), else 45 seconds.
func (g *Generation) SignalBudget(ctx context.Context) time.Duration {
	if g.signalTimeout > 0 {
		return g.signalTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		margin := left / 10
		if margin < time.Second {
			margin = time.Second
		}
		if left-margin > 0 {
			return left - margin
		}
		return 0
	}
	return defaultServedSignalBudget
}

// evaluate runs every compiled Set: cheap ones inline, the rest concurrently,
// all under the signal budget. A Set that has not finished by then contributes
// its Missing results (the on_unscanned policy for safety signals).
//
// A Set that is cheap for this input (signal.InlineSet: a short text for a
// CPU-only scan) runs inline too. When every Set runs inline nothing waits,
// so no budget timer is armed unless the budget is already spent: inline
// evaluation is bounded by being cheap, and the request's own context still
// cancels it.
// recordedSignals lays recorded results out in cr's slots (Request.Recorded).
func recordedSignals(cr *compiledRecipe, rec []signal.Result) []signal.Result {
	results := make([]signal.Result, cr.nSlots)
	by := make(map[[2]string]int, len(rec))
	for i := range rec {
		by[[2]string{rec[i].Kind, rec[i].Name}] = i
	}
	for _, cs := range cr.sets {
		for j, r := range cs.set.Missing(ErrorNotRecorded) {
			if i, ok := by[[2]string{r.Kind, r.Name}]; ok {
				r = rec[i]
			} else {
				// Not recorded is not unscanned: a safety signal the
				// recording did not know does not block.
				r.Matched, r.Unscanned = false, false
			}
			results[cs.base+j] = r
		}
	}
	return results
}

// standRecorded replaces, in results (evaluated from the input), the
// results of the signals whose kind is not in recompute by their recorded
// ones, where one was recorded (Request.Recompute).
func standRecorded(cr *compiledRecipe, rec []signal.Result, recompute []string, results []signal.Result) {
	by := make(map[[2]string]int, len(rec))
	for i := range rec {
		by[[2]string{rec[i].Kind, rec[i].Name}] = i
	}
	for _, cs := range cr.sets {
		for j, r := range cs.set.Missing(ErrorNotRecorded) {
			if slices.Contains(recompute, r.Kind) {
				continue
			}
			if i, ok := by[[2]string{r.Kind, r.Name}]; ok {
				results[cs.base+j] = rec[i]
			}
		}
	}
}

func (g *Generation) evaluate(ctx context.Context, cr *compiledRecipe, in *signal.Input) []signal.Result {
	results := make([]signal.Result, cr.nSlots)
	if cr.nSlots == 0 {
		return results
	}
	var inlineBuf [8]bool
	inline := inlineBuf[:0]
	npending := 0
	for _, cs := range cr.sets {
		ok := cs.set.Cheap()
		if !ok {
			if is, can := cs.set.(signal.InlineSet); can {
				ok = is.CheapFor(in)
			}
		}
		inline = append(inline, ok)
		if !ok {
			npending++
		}
	}
	budget := g.SignalBudget(ctx)
	sctx := ctx
	if npending > 0 || budget <= 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	if npending == 0 {
		for _, cs := range cr.sets {
			copy(results[cs.base:cs.base+cs.n], cs.set.Evaluate(sctx, in))
		}
		return results
	}

	// The pending sets that call a model (signal.ModelSet) run one after
	// another on one goroutine, whose model calls run directly on it
	// (signal.Detached): this goroutine stops waiting for it at the signal
	// deadline, so no model call needs a goroutine of its own to abandon.
	// The other pending sets (CPU work bounded by their input limits, such
	// as language detection) run here meanwhile. The sets whose model asks a
	// deployment questions (signal.Stage) each get their own goroutine,
	// since a participant waits for the others to ask and would wait for
	// one queued behind it. A goroutine per set, and one more per model
	// call, cost more than most sets: each start, hand-off and wake-up is
	// a futex call and a scheduling round on a busy server
	// (docs/benchmarks.md, "Issue 16, session 12: semantic path"). When
	// one run in this process answers every model set (oneLocalRun: the
	// joint default model on a short text), no goroutine is started: the
	// model sets run here, then the others.
	r := &pendingRun{sets: make([]compiledSet, 0, npending), res: make([][]signal.Result, npending), fin: make([]bool, npending), left: npending}
	var staged, local []int
	for i, cs := range cr.sets {
		if inline[i] {
			continue
		}
		k := len(r.sets)
		r.sets = append(r.sets, cs)
		switch ms, ok := cs.set.(signal.ModelSet); {
		case cs.staged:
			staged = append(staged, k)
		case ok && ms.CallsModel():
			r.models = append(r.models, k)
		default:
			local = append(local, k)
		}
	}
	// Every participant of the stage joins before any starts, so that none
	// asks alone.
	if len(staged) > 0 {
		stage := signal.NewStage()
		parts := make([]stagePart, len(staged))
		for k, i := range staged {
			ctx, p := stage.Join(sctx)
			parts[k] = stagePart{i, ctx, p}
		}
		for _, sp := range parts {
			go func(sp stagePart) {
				res := r.sets[sp.index].set.Evaluate(sp.ctx, in)
				sp.p.Finish()
				r.finish(sp.index, res)
			}(sp)
		}
	}
	if len(r.models) > 0 {
		mctx := signal.Detached(sctx)
		if oneLocalRun(r, in, budget) {
			// One run in this process answers every model set: run it
			// here, before the other sets, rather than hand it to a lane.
			r.work(mctx, in)
		} else {
			for range min(len(r.models), modelLanes) {
				go r.work(mctx, in)
			}
		}
	}
	for i, cs := range cr.sets {
		if inline[i] {
			copy(results[cs.base:cs.base+cs.n], cs.set.Evaluate(sctx, in))
		}
	}
	for _, i := range local {
		if sctx.Err() != nil {
			break
		}
		r.finish(i, r.sets[i].set.Evaluate(sctx, in))
	}
	if !r.finished() {
		select {
		case <-r.waitDone():
		case <-sctx.Done():
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abandoned = true
	for i, cs := range r.sets {
		if r.fin[i] {
			copy(results[cs.base:cs.base+cs.n], r.res[i])
		} else {
			copy(results[cs.base:cs.base+cs.n], cs.set.Missing("deadline"))
		}
	}
	return results
}

// pendingRun holds one request's sets that do not run inline and their
// results until the evaluating goroutine copies them out; a set that
// finishes after the signal deadline (abandoned) is not read.
type pendingRun struct {
	sets   []compiledSet
	models []int        // indexes into sets of the ModelSets, taken in turn
	next   atomic.Int32 // the next of models to take

	mu        sync.Mutex
	res       [][]signal.Result
	fin       []bool
	left      int
	done      chan struct{} // made by a waiter, closed when left reaches 0
	abandoned bool
}

// modelLanes is how many goroutines take a request's model sets: two, so
// that on a server with a core to spare two models' forward passes overlap
// (with language detection on the request's own goroutine beside them),
// where one goroutine for all of them made a request wait for the sum of
// its model calls.
const modelLanes = 2

// Bounds of running a request's model sets on its own goroutine
// (oneLocalRun): the user text a model reads, which keeps the run to one
// window of a few hundred tokens (~0.1–0.8 ms of CPU on the default
// models), and the signal budget, which must leave such a run far inside
// it, so that running it where the request waits does not stretch the
// request's wait past its deadline (the deadline bounds the wait; a running
// forward pass is not interrupted).
const (
	inlineModelBytes  = 4 << 10
	inlineModelBudget = 100 * time.Millisecond
)

// oneLocalRun reports whether r's model sets are all answered by one run of
// one model in this process (signal.LocalRunSet: the joint default model),
// on an input and within a budget small enough to run it on the request's
// goroutine (inlineModelBytes, inlineModelBudget). Then two lanes have
// nothing to overlap but language detection, and the hand-off to them (a
// goroutine start and wake-up per lane, the request's goroutine parked and
// woken) costs more CPU than the overlap saves on a busy server
// (docs/benchmarks.md, "Issue 16, session 14: semantic path").
func oneLocalRun(r *pendingRun, in *signal.Input, budget time.Duration) bool {
	if budget < inlineModelBudget || userBytes(in, inlineModelBytes) > inlineModelBytes {
		return false
	}
	var run any
	for _, k := range r.models {
		ls, ok := r.sets[k].set.(signal.LocalRunSet)
		if !ok {
			return false
		}
		x := ls.LocalRun()
		if x == nil || run != nil && x != run {
			return false
		}
		run = x
	}
	return run != nil
}

// userBytes is the size of the text in's model sets read (every user
// message, and Text), up to limit: past it the exact size does not matter.
func userBytes(in *signal.Input, limit int) int {
	n := 0
	for _, t := range in.UserTexts {
		n += len(t)
		if n > limit {
			break
		}
	}
	return max(n, len(in.Text))
}

// work evaluates model sets, taking them in turn with the other lanes,
// until none is left or ctx is done.
func (r *pendingRun) work(ctx context.Context, in *signal.Input) {
	for ctx.Err() == nil {
		k := int(r.next.Add(1)) - 1
		if k >= len(r.models) {
			return
		}
		i := r.models[k]
		r.finish(i, r.sets[i].set.Evaluate(ctx, in))
	}
}

func (r *pendingRun) finish(i int, res []signal.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.abandoned {
		return
	}
	r.res[i], r.fin[i] = res, true
	r.left--
	if r.left == 0 && r.done != nil {
		close(r.done)
	}
}

func (r *pendingRun) finished() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.left == 0
}

// waitDone returns a channel closed once every set has finished.
func (r *pendingRun) waitDone() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		r.done = make(chan struct{})
		if r.left == 0 {
			close(r.done)
		}
	}
	return r.done
}

// stagePart is a pending set's place in the request's signal.Stage.
type stagePart struct {
	index int
	ctx   context.Context
	p     *signal.Participant
}
