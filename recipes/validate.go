package recipes

import (
	"fmt"
	"strings"
)

// MaxRuleDepth bounds how deeply rule nodes may nest.
const MaxRuleDepth = 32

// ReservedModelNames are the special model names clients send to ask for
// routing; no provider model may use them (compared case-insensitively).
var ReservedModelNames = []string{"MoM", "auto"}

// Validate checks a document against the JSON Schema (as encoded by
// encoding/json) and the semantic rules below. Call it after ApplyDefaults:
// Parse does both. Errors are *ValidationError with every problem found.
//
// Semantic rules: names unique (listeners, models, recipes, decisions within a
// recipe, signals within a kind of a recipe); providers.defaults.default_model,
// every modelRef, every model's reasoning_family and every listener entrypoint
// name something that exists; rule conditions name a signal of their kind in the
// same recipe (complexity conditions as "name:hard|medium|easy"); NOT has one
// condition, OR at least one; complexity boundaries are consistent; thresholds
// lie in [0,1]; personal-data types and language codes are known; ports are in
// range and not shared; durations, prices, token counts are not negative;
// backend base_url is an absolute http(s) URL (none for provider demo).
func (d *Document) Validate() error {
	if d == nil {
		return &ValidationError{Problems: []Problem{{Code: CodeMissingField, Message: "no document"}}}
	}
	raw, err := Canonical(d)
	if err != nil {
		return &ValidationError{Problems: []Problem{{Code: CodeInvalidValue, Message: err.Error()}}}
	}
	v, err := decodeGeneric(raw)
	if err != nil {
		return &ValidationError{Problems: []Problem{{Code: CodeInternal, Message: err.Error()}}}
	}
	if ps := validateSchema(v); len(ps) > 0 {
		return newValidationError(ps)
	}
	if ps := d.semanticProblems(); len(ps) > 0 {
		return newValidationError(ps)
	}
	return nil
}

type checker struct {
	doc *Document
	ps  []Problem
}

func (c *checker) add(path, code, format string, args ...any) {
	c.ps = append(c.ps, Problem{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
}

// semanticProblems runs the semantic rules on a schema-valid, defaulted document.
func (d *Document) semanticProblems() []Problem {
	c := &checker{doc: d}
	if d.Version != "v1" {
		c.add("/version", CodeInvalidValue, "must be \"v1\" (got %q)", d.Version)
	}
	c.listeners()
	c.providers()
	c.recipes()
	c.global()
	c.rateLimits()
	c.externalModels()
	c.ports()
	return c.ps
}

func (c *checker) recipes() {
	if len(c.doc.Recipes) == 0 {
		c.add("/recipes", CodeMissingField, "configure at least one recipe")
	}
	seen := map[string]int{}
	for i := range c.doc.Recipes {
		r := &c.doc.Recipes[i]
		p := fmt.Sprintf("/recipes/%d", i)
		if r.Name == "" {
			c.add(p+"/name", CodeMissingField, "a recipe needs a name")
		} else if j, dup := seen[r.Name]; dup {
			c.add(p+"/name", CodeDuplicate, "recipe name %q is already used by /recipes/%d", r.Name, j)
		} else {
			seen[r.Name] = i
		}
		c.signals(p+"/signals", r)
		c.reliability(p+"/reliability", r.Reliability)
		c.fallback(p+"/fallback", r.Fallback)
		dseen := map[string]int{}
		for j, dec := range r.Decisions {
			dp := fmt.Sprintf("%s/decisions/%d", p, j)
			if dec.Name == "" {
				c.add(dp+"/name", CodeMissingField, "a decision needs a name")
			} else if k, dup := dseen[dec.Name]; dup {
				c.add(dp+"/name", CodeDuplicate, "decision name %q is already used by %s/decisions/%d", dec.Name, p, k)
			} else {
				dseen[dec.Name] = j
			}
			c.decision(dp, r, dec)
		}
	}
}

func (c *checker) decision(p string, r *Recipe, dec Decision) {
	who := fmt.Sprintf("decision %q", dec.Name)
	c.rule(p+"/rules", r, who, dec.Rules, 1)
	models := c.modelNames()
	for k, ref := range dec.ModelRefs {
		rp := fmt.Sprintf("%s/modelRefs/%d", p, k)
		if ref.Model == "" {
			c.add(rp+"/model", CodeMissingField, "name a model from providers.models%s", knownList("", models))
		} else if _, ok := c.doc.Model(ref.Model); !ok {
			c.add(rp+"/model", CodeUnknownRef, "%s references model %q, which is not in providers.models%s", who, ref.Model, knownList(ref.Model, models))
		}
		if ref.ReasoningEffort != "" {
			c.effort(rp+"/reasoning_effort", ref.ReasoningEffort)
		}
		if ref.Weight < 0 {
			c.add(rp+"/weight", CodeInvalidValue, "must not be negative (got %v)", ref.Weight)
		}
	}
	for k, pl := range dec.Plugins {
		pp := fmt.Sprintf("%s/plugins/%d", p, k)
		if strings.TrimSpace(pl.Type) == "" {
			c.add(pp+"/type", CodeMissingField, "name the plugin type (for example system_prompt)")
		}
		switch pl.OnError {
		case "", OnErrorSkip, OnErrorFail:
		default:
			c.add(pp+"/on_error", CodeInvalidValue, "must be skip or fail (got %q)", pl.OnError)
		}
		if len(pl.Configuration) > 0 && !isJSONObject(pl.Configuration) {
			c.add(pp+"/configuration", CodeWrongType, "must be an object")
		}
	}
	c.reliability(p+"/reliability", dec.Reliability)
	c.fallback(p+"/fallback", dec.Fallback)
	c.preferredEndpoints(p, &dec)
	if a := dec.Algorithm; a != nil {
		if strings.TrimSpace(a.Type) == "" {
			c.add(p+"/algorithm/type", CodeMissingField, "name the selection algorithm")
		}
		if len(a.Options) > 0 && !isJSONObject(a.Options) {
			c.add(p+"/algorithm/options", CodeWrongType, "must be an object")
		}
	}
}

// rule checks one rule node and its children.
func (c *checker) rule(p string, r *Recipe, who string, n RuleNode, depth int) {
	if depth > MaxRuleDepth {
		c.add(p, CodeInvalidValue, "rules nest deeper than %d levels; flatten them", MaxRuleDepth)
		return
	}
	if n.IsLeaf() {
		if len(n.Conditions) > 0 {
			c.add(p+"/operator", CodeMissingField, "a node with conditions needs an operator: AND, OR or NOT")
			return
		}
		c.leaf(p, r, who, n)
		return
	}
	if n.Type != "" || n.Name != "" {
		c.add(p, CodeConflict, "a node is either an operator node {operator, conditions} or a signal condition {type, name}, not both")
	}
	switch n.Operator {
	case OpAND:
	case OpOR:
		if len(n.Conditions) == 0 {
			c.add(p+"/conditions", CodeInvalidValue, "an empty OR never matches; add conditions, or write {operator: AND, conditions: []} for a catch-all")
		}
	case OpNOT:
		if len(n.Conditions) != 1 {
			c.add(p+"/conditions", CodeInvalidValue, "NOT takes exactly one condition (got %d); wrap several in AND or OR", len(n.Conditions))
		}
	default:
		c.add(p+"/operator", CodeInvalidValue, "must be AND, OR or NOT (got %q)", n.Operator)
	}
	for k, child := range n.Conditions {
		c.rule(fmt.Sprintf("%s/conditions/%d", p, k), r, who, child, depth+1)
	}
}

// leaf checks that a signal condition names a signal of its kind in the recipe.
func (c *checker) leaf(p string, r *Recipe, who string, n RuleNode) {
	if n.Type == "" {
		c.add(p+"/type", CodeMissingField, "a signal condition needs a type: one of %s", strings.Join(Kinds, ", "))
		return
	}
	if !isKind(n.Type) {
		c.add(p+"/type", CodeInvalidValue, "must be one of %s (got %q)", strings.Join(Kinds, ", "), n.Type)
		return
	}
	if n.Name == "" {
		c.add(p+"/name", CodeMissingField, "a signal condition needs the name of a %s signal", n.Type)
		return
	}
	name := n.Name
	if n.Type == KindComplexity {
		sig, level, ok := SplitComplexityCondition(n.Name)
		if !strings.Contains(n.Name, ":") {
			c.add(p+"/name", CodeInvalidValue, "a complexity condition names a level: write %q, %q or %q",
				n.Name+":hard", n.Name+":medium", n.Name+":easy")
			return
		}
		if !ok {
			c.add(p+"/name", CodeInvalidValue, "complexity level %q is not hard, medium or easy (write %q)", level, sig+":hard")
			return
		}
		name = sig
	}
	known := r.Signals.Names(n.Type)
	for _, k := range known {
		if k == name {
			return
		}
	}
	c.add(p+"/name", CodeUnknownRef, "%s references %s signal %q, which is not in signals.%s of recipe %q%s",
		who, n.Type, name, SignalsKey(n.Type), r.Name, knownList(name, known))
}

func (c *checker) modelNames() []string {
	out := make([]string, 0, len(c.doc.Providers.Models))
	for _, m := range c.doc.Providers.Models {
		out = append(out, m.Name)
	}
	return out
}

func (c *checker) recipeNames() []string {
	out := make([]string, 0, len(c.doc.Recipes))
	for _, r := range c.doc.Recipes {
		out = append(out, r.Name)
	}
	return out
}

// knownList renders " (known: a, b, c)" with a "did you mean" when name is close
// to one of them, or " (none are defined)".
func knownList(name string, known []string) string {
	if len(known) == 0 {
		return " (none are defined)"
	}
	shown := known
	if len(shown) > 20 {
		shown = append(shown[:20:20], fmt.Sprintf("… %d more", len(known)-20))
	}
	s := " (known: " + strings.Join(shown, ", ") + ")"
	if name != "" {
		if m := suggest(name, known); m != "" && m != name {
			s += fmt.Sprintf("; did you mean %q?", m)
		}
	}
	return s
}

func isReserved(name string) bool {
	for _, r := range ReservedModelNames {
		if strings.EqualFold(name, r) {
			return true
		}
	}
	return false
}

func isJSONObject(raw []byte) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, "{") || s == "null"
}
