// Package engine is Junction's request pipeline: it compiles a configuration
// into an immutable Generation and, for each request, computes the recipe's
// signals, evaluates its decisions, selects a model and resolves the reasoning
// mode. It never talks to a backend: the data-plane adapters (internal/gateway for
// HTTP, internal/extproc for Envoy) do that with the Result it returns, so both
// front ends route through the same code and a preview explains exactly what the
// live path would do.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/engine/decision"
	"github.com/junction-router/junction/engine/reasoning"
	"github.com/junction-router/junction/engine/selection"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// Routing model names: they ask Junction to choose.
const (
	ModelMoM  = "MoM"
	ModelAuto = "auto"
)

// Reason codes, as llm_routing_reason_codes_total labels them.
const (
	ReasonAutoRouting         = "auto_routing"
	ReasonDefaultModel        = "default_model"
	ReasonModelSpecified      = "model_specified"
	ReasonPIIAlternative      = "pii_policy_alternative_selected"
	ReasonSecurityBlocked     = "security_blocked"
	defaultServedSignalBudget = 45 * time.Second
)

// ErrUnknownModel is returned for a request naming a model that is neither a
// routing name nor configured.
var ErrUnknownModel = errors.New("unknown model")

// ErrUnknownRecipe is returned when a listener or preview names a missing recipe.
var ErrUnknownRecipe = errors.New("unknown recipe")

// IsRoutingName reports whether model asks Junction to choose.
func IsRoutingName(model string) bool {
	return model == ModelMoM || strings.EqualFold(model, ModelAuto)
}

// Options are what a Generation needs beyond the document.
type Options struct {
	// Models supplies model-backed signals; nil fields use lexical fallbacks.
	Models signal.Models
	// Health tells the selector which models have a usable backend; nil means all.
	Health selection.Health
	// Plugins checks each decision plugin's configuration; nil skips the check.
	Plugins PluginValidator
	// Language is a language detector to share across generations (lingua's
	// models take a while to load); it must know every language the
	// document's language signals name. Nil builds one per recipe.
	Language *signal.LanguageDetector
}

// PluginValidator checks one decision plugin's configuration. An error that
// implements FieldError names the offending field inside the plugin reference.
type PluginValidator interface {
	Validate(ref recipes.PluginRef) error
}

// FieldError is an error that knows which field of a plugin reference it is
// about, as a dotted path with [i] indexes ("configuration.add[1].name").
type FieldError interface {
	error
	FieldPath() string
}

// Generation is everything compiled from one configuration version. It is
// immutable once built and safe for concurrent use; a request keeps the
// generation it started on even when a newer one is activated.
type Generation struct {
	doc           *recipes.Document
	hash          string
	recipes       map[string]*compiledRecipe
	defaultRecipe string
	models        map[string]*recipes.Model
	health        selection.Health
	signalTimeout time.Duration
	bindings      signal.Models
	language      *signal.LanguageDetector
}

type compiledRecipe struct {
	name      string
	sets      []compiledSet
	nSlots    int
	decisions *decision.Set
	selectors map[string]selection.Selector
	blockers  []blocker
	composers []composer
	staged    bool // some set asks through a signal.Stage
}

// composer gates a complexity signal on other conditions: the signal grades
// only when every one of them holds.
type composer struct {
	slot   int
	leaves []int
	labels []string
}

type compiledSet struct {
	set    signal.Set
	base   int // slot of the set's first result
	n      int
	staged bool // its model asks through the request's signal.Stage
}

// blocker is a safety signal whose match answers 403 instead of routing.
type blocker struct {
	slot int
	code string // pii_detected, jailbreak_detected
}

// Compile builds a generation from a validated document.
func Compile(doc *recipes.Document, hash string, opts Options) (*Generation, error) {
	g := &Generation{
		doc:           doc,
		hash:          hash,
		recipes:       map[string]*compiledRecipe{},
		defaultRecipe: doc.DefaultRecipe(),
		models:        map[string]*recipes.Model{},
		health:        opts.Health,
		bindings:      opts.Models,
		language:      opts.Language,
	}
	if g.health == nil {
		g.health = selection.AllHealthy{}
	}
	if mc := doc.Global.ModelCatalog; mc != nil && mc.SignalTimeoutMS > 0 {
		g.signalTimeout = time.Duration(mc.SignalTimeoutMS) * time.Millisecond
	}
	for i := range doc.Providers.Models {
		m := &doc.Providers.Models[i]
		g.models[m.Name] = m
	}
	if opts.Plugins != nil {
		if err := validatePlugins(doc, opts.Plugins); err != nil {
			return nil, err
		}
	}
	for i := range doc.Recipes {
		cr, err := compileRecipe(doc.Recipes[i], opts.Models, opts.Language)
		if err != nil {
			return nil, fmt.Errorf("recipe %q: %w", doc.Recipes[i].Name, err)
		}
		g.recipes[cr.name] = cr
	}
	return g, nil
}

// validatePlugins reports every bad plugin configuration with its JSON pointer.
func validatePlugins(doc *recipes.Document, v PluginValidator) error {
	var problems []recipes.Problem
	for ri, r := range doc.Recipes {
		for di, d := range r.Decisions {
			for pi, p := range d.Plugins {
				err := v.Validate(p)
				if err == nil {
					continue
				}
				path := fmt.Sprintf("/recipes/%d/decisions/%d/plugins/%d", ri, di, pi)
				var fe FieldError
				if errors.As(err, &fe) && fe.FieldPath() != "" {
					path += dottedToPointer(fe.FieldPath())
				}
				problems = append(problems, recipes.Problem{Path: path, Code: recipes.CodeInvalidValue, Message: err.Error()})
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &recipes.ValidationError{Problems: problems}
}

// dottedToPointer turns "configuration.add[1].name" into "/configuration/add/1/name".
func dottedToPointer(field string) string {
	var b strings.Builder
	for _, part := range strings.Split(strings.ReplaceAll(field, "[", ".["), ".") {
		if part == "" {
			continue
		}
		part = strings.TrimSuffix(strings.TrimPrefix(part, "["), "]")
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(part, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func key(kind, name string) string { return kind + "\x00" + name }

func compileRecipe(r recipes.Recipe, models signal.Models, lang *signal.LanguageDetector) (*compiledRecipe, error) {
	used := map[string]bool{}
	var walk func(n recipes.RuleNode)
	walk = func(n recipes.RuleNode) {
		if n.IsLeaf() {
			name := n.Name
			if n.Type == recipes.KindComplexity {
				if i := strings.LastIndexByte(name, ':'); i >= 0 {
					name = name[:i]
				}
			}
			used[key(n.Type, name)] = true
			return
		}
		for _, c := range n.Conditions {
			walk(c)
		}
	}
	for _, d := range r.Decisions {
		walk(d.Rules)
	}
	// Blocking safety signals run whether or not a decision names them.
	for _, s := range r.Signals.PII {
		if s.Action == recipes.ActionBlock {
			used[key(recipes.KindPII, s.Name)] = true
		}
	}
	for _, s := range r.Signals.Jailbreak {
		if s.Action == recipes.ActionBlock {
			used[key(recipes.KindJailbreak, s.Name)] = true
		}
	}
	// A used complexity signal's composer conditions must be computed too.
	for _, c := range r.Signals.Complexity {
		if used[key(recipes.KindComplexity, c.Name)] {
			for _, n := range c.Composer {
				used[key(n.Type, n.Name)] = true
			}
		}
	}
	isUsed := func(kind, name string) bool { return used[key(kind, name)] }
	sets, err := signal.CompileWith(context.Background(), r.Signals, isUsed, models, signal.Options{Language: lang})
	if err != nil {
		return nil, err
	}
	cr := &compiledRecipe{name: r.Name, selectors: map[string]selection.Selector{}}
	slots := map[string]int{}
	// Sets report results in configuration order of their used signals; lay the
	// slots out the same way.
	order := signalOrder(r.Signals)
	for _, s := range sets {
		cs := compiledSet{set: s, base: cr.nSlots}
		if ss, ok := s.(signal.StagedSet); ok && ss.Staged() {
			cs.staged = true
			cr.staged = true
		}
		for _, name := range order[s.Kind()] {
			if isUsed(s.Kind(), name) {
				slots[key(s.Kind(), name)] = cr.nSlots
				cr.nSlots++
				cs.n++
			}
		}
		cr.sets = append(cr.sets, cs)
	}
	lookup := func(kind, name string) (int, bool) {
		i, ok := slots[key(kind, name)]
		return i, ok
	}
	cr.decisions, err = decision.Compile(r, lookup)
	if err != nil {
		return nil, err
	}
	for _, d := range r.Decisions {
		algo := ""
		if d.Algorithm != nil {
			algo = d.Algorithm.Type
		}
		sel, ok := selection.ByName(algo)
		if !ok {
			return nil, fmt.Errorf("decision %q: unknown selection algorithm %q (known: first_healthy)", d.Name, algo)
		}
		cr.selectors[d.Name] = sel
	}
	for _, c := range r.Signals.Complexity {
		slot, ok := slots[key(recipes.KindComplexity, c.Name)]
		if !ok || len(c.Composer) == 0 {
			continue
		}
		comp := composer{slot: slot}
		for _, n := range c.Composer {
			leaf, ok := slots[key(n.Type, n.Name)]
			if !ok {
				return nil, fmt.Errorf("complexity signal %q: composer names %s signal %q, which the recipe does not define", c.Name, n.Type, n.Name)
			}
			comp.leaves = append(comp.leaves, leaf)
			comp.labels = append(comp.labels, n.Type+":"+n.Name)
		}
		cr.composers = append(cr.composers, comp)
	}
	for _, s := range r.Signals.PII {
		if s.Action == recipes.ActionBlock {
			cr.blockers = append(cr.blockers, blocker{slot: slots[key(recipes.KindPII, s.Name)], code: "pii_detected"})
		}
	}
	for _, s := range r.Signals.Jailbreak {
		if s.Action == recipes.ActionBlock {
			cr.blockers = append(cr.blockers, blocker{slot: slots[key(recipes.KindJailbreak, s.Name)], code: "jailbreak_detected"})
		}
	}
	return cr, nil
}

func signalOrder(s recipes.Signals) map[string][]string {
	o := map[string][]string{}
	for _, x := range s.Keywords {
		o[recipes.KindKeyword] = append(o[recipes.KindKeyword], x.Name)
	}
	for _, x := range s.Domains {
		o[recipes.KindDomain] = append(o[recipes.KindDomain], x.Name)
	}
	for _, x := range s.PII {
		o[recipes.KindPII] = append(o[recipes.KindPII], x.Name)
	}
	for _, x := range s.Jailbreak {
		o[recipes.KindJailbreak] = append(o[recipes.KindJailbreak], x.Name)
	}
	for _, x := range s.Context {
		o[recipes.KindContext] = append(o[recipes.KindContext], x.Name)
	}
	for _, x := range s.Language {
		o[recipes.KindLanguage] = append(o[recipes.KindLanguage], x.Name)
	}
	for _, x := range s.Embeddings {
		o[recipes.KindEmbedding] = append(o[recipes.KindEmbedding], x.Name)
	}
	for _, x := range s.Complexity {
		o[recipes.KindComplexity] = append(o[recipes.KindComplexity], x.Name)
	}
	return o
}

// Document returns the configuration this generation was compiled from.
func (g *Generation) Document() *recipes.Document { return g.doc }

// Hash returns the configuration hash this generation was compiled from.
func (g *Generation) Hash() string { return g.hash }

// Model returns a configured model.
func (g *Generation) Model(name string) (*recipes.Model, bool) {
	m, ok := g.models[name]
	return m, ok
}

// Models returns the model bindings the generation was compiled with (nil
// fields: the lexical fallbacks, built per recipe). Diagnostics use them so a
// call runs on the same models as the routing it explains.
func (g *Generation) Models() signal.Models { return g.bindings }

// Language returns the shared language detector the generation was compiled
// with, or nil when each recipe built its own.
func (g *Generation) Language() *signal.LanguageDetector { return g.language }

// DefaultRecipe is the recipe used when a listener or request names none.
func (g *Generation) DefaultRecipe() string { return g.defaultRecipe }

// Request is what routing reads of a client request.
type Request struct {
	// Model is the model the client asked for: MoM, auto, or a configured name.
	Model string
	Input signal.Input
}

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
	res.Signals = g.evaluate(ctx, cr, &req.Input)
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
	if m, ok := cr.decisions.Evaluate(res.Signals); ok {
		d := m.Decision.Config
		res.Decision, res.MatchedRules, res.Confidence = d.Name, m.Matched, m.Confidence
		res.Plugins = d.Plugins
		candidates = d.ModelRefs
		res.ReasonCode = ReasonAutoRouting
		res.Selection = cr.selectors[d.Name].Name()
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
		sel = cr.selectors[res.Decision]
	}
	ref, _ := sel.Select(ctx, candidates, g.health)
	res.Model = ref.Model
	m := g.models[ref.Model]
	var fam *recipes.ReasoningFamily
	if f, ok := g.doc.Providers.ReasoningFamilies[m.ReasoningFamily]; ok {
		fam = &f
	}
	res.Reasoning = reasoning.Resolve(ref, g.doc.Providers.Defaults, m.ReasoningFamily, fam)
	return res, nil
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

	pending := make([]compiledSet, 0, npending)
	for i, cs := range cr.sets {
		if !inline[i] {
			pending = append(pending, cs)
		}
	}
	type done struct {
		cs  compiledSet
		res []signal.Result
	}
	ch := make(chan done, len(pending))
	// The sets whose model asks a deployment questions gather them in one
	// stage per request (signal.Stage: one decisions call per deployment).
	// Every participant joins before any starts, so that none asks alone.
	var parts []stagePart
	if cr.staged {
		stage := signal.NewStage()
		for i, cs := range pending {
			if cs.staged {
				ctx, p := stage.Join(sctx)
				parts = append(parts, stagePart{i, ctx, p})
			}
		}
	}
	for i, cs := range pending {
		if len(parts) > 0 && parts[0].index == i {
			sp := parts[0]
			parts = parts[1:]
			go func(cs compiledSet) {
				res := cs.set.Evaluate(sp.ctx, in)
				sp.p.Finish()
				ch <- done{cs, res}
			}(cs)
			continue
		}
		go func(cs compiledSet) { ch <- done{cs, cs.set.Evaluate(sctx, in)} }(cs)
	}
	for i, cs := range cr.sets {
		if inline[i] {
			copy(results[cs.base:cs.base+cs.n], cs.set.Evaluate(sctx, in))
		}
	}
	finished := make([]bool, len(pending))
	for n := 0; n < len(pending); n++ {
		select {
		case d := <-ch:
			copy(results[d.cs.base:d.cs.base+d.cs.n], d.res)
			for i := range pending {
				if pending[i].base == d.cs.base {
					finished[i] = true
				}
			}
		case <-sctx.Done():
			for i, cs := range pending {
				if !finished[i] {
					copy(results[cs.base:cs.base+cs.n], cs.set.Missing("deadline"))
				}
			}
			return results
		}
	}
	return results
}

// stagePart is a pending set's place in the request's signal.Stage.
type stagePart struct {
	index int
	ctx   context.Context
	p     *signal.Participant
}

// Runtime holds the serving generation and swaps it atomically.
type Runtime struct {
	cur atomic.Pointer[Generation]
	mu  sync.Mutex // serialises activations
}

// NewRuntime returns a runtime serving g.
func NewRuntime(g *Generation) *Runtime {
	r := &Runtime{}
	r.cur.Store(g)
	return r
}

// Current returns the serving generation; hold on to it for the whole request.
func (r *Runtime) Current() *Generation { return r.cur.Load() }

// Activate makes g the serving generation and returns the one it replaced.
func (r *Runtime) Activate(g *Generation) *Generation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Swap(g)
}
