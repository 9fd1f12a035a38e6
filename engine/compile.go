package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/junction-router/junction/engine/decision"
	"github.com/junction-router/junction/engine/selection"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// Compile: a validated document becomes a Generation, each recipe's signals
// compiled into sets and its decisions into rules, with result slots laid out
// once so Route allocates no maps.

// decisionRoute is how a decision's request goes on once it matched: its
// selector, its reliability and fallback (every layer merged) and its
// modelRefs (the fallback candidates).
type decisionRoute struct {
	selector  selection.Selector
	policy    *recipes.Policy
	modelRefs []recipes.ModelRef
}

type compiledRecipe struct {
	name      string
	sets      []compiledSet
	nSlots    int
	decisions *decision.Set
	// decisions' selector, policy and modelRefs by name, looked up once
	// per request.
	routes        map[string]*decisionRoute
	defaultPolicy *recipes.Policy
	blockers      []blocker
	composers     []composer
	staged        bool // some set asks through a signal.Stage
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
		cr, err := compileRecipe(doc, doc.Recipes[i], opts.Models, opts.Language)
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

func compileRecipe(doc *recipes.Document, r recipes.Recipe, models signal.Models, lang *signal.LanguageDetector) (*compiledRecipe, error) {
	isUsed := UsedSignals(r)
	sets, err := signal.CompileWith(context.Background(), r.Signals, isUsed, models, signal.Options{Language: lang})
	if err != nil {
		return nil, err
	}
	cr := &compiledRecipe{name: r.Name, routes: map[string]*decisionRoute{}, defaultPolicy: doc.DecisionPolicy(&r, nil)}
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
		cr.routes[d.Name] = &decisionRoute{selector: sel, policy: doc.DecisionPolicy(&r, &d), modelRefs: d.ModelRefs}
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
	for _, k := range recipes.Kinds {
		if names := s.Names(k); len(names) > 0 {
			o[k] = names
		}
	}
	return o
}
