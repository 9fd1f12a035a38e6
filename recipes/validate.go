package recipes

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
)

// MaxRuleDepth bounds how deeply rule nodes may nest.
const MaxRuleDepth = 32

// KnownPIITypes are the personal-data entity types signals and policies may name.
var KnownPIITypes = []string{"PERSON", "EMAIL", "PHONE", "SSN", "LOCATION", "CREDIT_CARD", "IP_ADDRESS", "IBAN"}

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
	c.ports()
	return c.ps
}

func (c *checker) listeners() {
	seen := map[string]int{}
	for i, l := range c.doc.Listeners {
		p := fmt.Sprintf("/listeners/%d", i)
		if l.Name == "" {
			c.add(p+"/name", CodeMissingField, "a listener needs a name")
		} else if j, dup := seen[l.Name]; dup {
			c.add(p+"/name", CodeDuplicate, "listener name %q is already used by /listeners/%d", l.Name, j)
		} else {
			seen[l.Name] = i
		}
		c.address(p+"/address", l.Address)
		c.port(p+"/port", l.Port)
		if l.Timeout.Duration < 0 {
			c.add(p+"/timeout", CodeInvalidValue, "must not be negative (got %s)", l.Timeout.Duration)
		}
		if l.MaxBodyBytes < 0 {
			c.add(p+"/max_body_bytes", CodeInvalidValue, "must not be negative (got %d)", l.MaxBodyBytes)
		}
		if l.Entrypoint != "" {
			if _, ok := c.doc.Recipe(l.Entrypoint); !ok {
				c.add(p+"/entrypoint", CodeUnknownRef, "listener %q routes with recipe %q, which is not in recipes%s",
					l.Name, l.Entrypoint, knownList(l.Entrypoint, c.recipeNames()))
			}
		}
		for k, key := range l.APIKeys {
			if strings.TrimSpace(key) == "" {
				c.add(fmt.Sprintf("%s/api_keys/%d", p, k), CodeInvalidValue, "an API key must not be empty")
			}
		}
	}
}

func (c *checker) providers() {
	pr := c.doc.Providers
	// Reasoning families, in name order for stable output.
	names := make([]string, 0, len(pr.ReasoningFamilies))
	for n := range pr.ReasoningFamilies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := pr.ReasoningFamilies[n]
		p := "/providers/reasoning_families/" + escapePointer(n)
		if n == "" {
			c.add(p, CodeInvalidValue, "a reasoning family needs a non-empty name")
		}
		switch f.Type {
		case FamilyChatTemplateKwargs, FamilyReasoningEffort:
		default:
			c.add(p+"/type", CodeInvalidValue, "must be %s or %s (got %q)", FamilyChatTemplateKwargs, FamilyReasoningEffort, f.Type)
		}
		if strings.TrimSpace(f.Parameter) == "" {
			c.add(p+"/parameter", CodeMissingField, "name the request parameter that switches reasoning (for example enable_thinking)")
		}
	}

	models := c.modelNames()
	if len(pr.Models) == 0 {
		c.add("/providers/models", CodeMissingField, "configure at least one model")
	}
	if dm := pr.Defaults.DefaultModel; dm == "" {
		c.add("/providers/defaults/default_model", CodeMissingField, "name the model used when no decision matches%s", knownList("", models))
	} else if _, ok := c.doc.Model(dm); !ok {
		c.add("/providers/defaults/default_model", CodeUnknownRef, "default_model %q is not in providers.models%s", dm, knownList(dm, models))
	}
	if e := pr.Defaults.DefaultReasoningEffort; e != "" {
		c.effort("/providers/defaults/default_reasoning_effort", e)
	}

	seen := map[string]int{}
	for i, m := range pr.Models {
		p := fmt.Sprintf("/providers/models/%d", i)
		switch {
		case m.Name == "":
			c.add(p+"/name", CodeMissingField, "a model needs a name")
		case isReserved(m.Name):
			c.add(p+"/name", CodeInvalidValue, "%q is reserved: clients send MoM or auto to ask for routing; choose another name", m.Name)
		default:
			if j, dup := seen[m.Name]; dup {
				c.add(p+"/name", CodeDuplicate, "model name %q is already used by /providers/models/%d", m.Name, j)
			} else {
				seen[m.Name] = i
			}
		}
		if m.ReasoningFamily != "" {
			if _, ok := pr.ReasoningFamilies[m.ReasoningFamily]; !ok {
				c.add(p+"/reasoning_family", CodeUnknownRef, "model %q uses reasoning family %q, which is not in providers.reasoning_families%s",
					m.Name, m.ReasoningFamily, knownList(m.ReasoningFamily, names))
			}
		}
		switch m.APIFormat {
		case "", "openai", "anthropic":
		default:
			c.add(p+"/api_format", CodeInvalidValue, "must be openai or anthropic (got %q)", m.APIFormat)
		}
		if pc := m.Pricing; pc != nil {
			nonNeg := func(field string, v float64) {
				if v < 0 {
					c.add(p+"/pricing/"+field, CodeInvalidValue, "a price must not be negative (got %v)", v)
				}
			}
			nonNeg("prompt_per_1m", pc.PromptPer1M)
			nonNeg("completion_per_1m", pc.CompletionPer1M)
			if pc.CachedInputPer1M != nil {
				nonNeg("cached_input_per_1m", *pc.CachedInputPer1M)
			}
			if pc.CacheWritePer1M != nil {
				nonNeg("cache_write_per_1m", *pc.CacheWritePer1M)
			}
		}
		if pp := m.PIIPolicy; pp != nil {
			for k, t := range pp.TypesAllowed {
				c.piiType(fmt.Sprintf("%s/pii_policy/pii_types_allowed/%d", p, k), t)
			}
		}
		if len(m.BackendRefs) == 0 {
			c.add(p+"/backend_refs", CodeMissingField, "model %q needs at least one backend", m.Name)
		}
		for j, b := range m.BackendRefs {
			c.backend(fmt.Sprintf("%s/backend_refs/%d", p, j), b)
		}
	}
}

// DemoProvider is the provider whose backends the gateway answers in-process.
const DemoProvider = "demo"

func (c *checker) backend(p string, b BackendRef) {
	if b.Provider == DemoProvider {
		if b.BaseURL != "" {
			c.add(p+"/base_url", CodeConflict, "provider %q is answered in-process and takes no base_url; remove base_url or name the real provider", DemoProvider)
		}
	} else {
		c.baseURL(p+"/base_url", b.BaseURL)
	}
	if b.ChatPath != "" && !strings.HasPrefix(b.ChatPath, "/") {
		c.add(p+"/chat_path", CodeInvalidValue, "must start with / (got %q)", b.ChatPath)
	}
	hdrs := make([]string, 0, len(b.ExtraHeaders))
	for h := range b.ExtraHeaders {
		hdrs = append(hdrs, h)
	}
	sort.Strings(hdrs)
	for _, h := range hdrs {
		hp := p + "/extra_headers/" + escapePointer(h)
		if !isToken(h) {
			c.add(hp, CodeInvalidValue, "%q is not a valid HTTP header name", h)
		}
		if strings.ContainsAny(b.ExtraHeaders[h], "\r\n\x00") {
			c.add(hp, CodeInvalidValue, "a header value must not contain line breaks")
		}
	}
	if b.APIKeyEnv != "" && !isEnvName(b.APIKeyEnv) {
		c.add(p+"/api_key_env", CodeInvalidValue, "name an environment variable (letters, digits, _), not the key itself")
	}
	if b.Timeout.Duration < 0 {
		c.add(p+"/timeout", CodeInvalidValue, "must not be negative (got %s)", b.Timeout.Duration)
	}
}

func (c *checker) baseURL(p, raw string) {
	if raw == "" {
		c.add(p, CodeMissingField, "every backend needs a base_url such as http://127.0.0.1:8000/v1 unless its provider is %q", DemoProvider)
		return
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		c.add(p, CodeInvalidValue, "must be an absolute http or https URL such as http://127.0.0.1:8000/v1 (got %q)", raw)
		return
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		c.add(p, CodeInvalidValue, "scheme must be http or https (got %q)", u.Scheme)
	}
	if u.User != nil {
		c.add(p, CodeInvalidValue, "must not carry credentials; put the key in an environment variable and name it in api_key_env")
	}
	if u.Fragment != "" || u.RawQuery != "" {
		c.add(p, CodeInvalidValue, "must not have a query or fragment (got %q)", raw)
	}
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

// signalNames returns the names of a recipe's signals of one kind, in order.
func signalNames(s *Signals, kind string) []string {
	var out []string
	switch kind {
	case KindKeyword:
		for _, x := range s.Keywords {
			out = append(out, x.Name)
		}
	case KindDomain:
		for _, x := range s.Domains {
			out = append(out, x.Name)
		}
	case KindPII:
		for _, x := range s.PII {
			out = append(out, x.Name)
		}
	case KindJailbreak:
		for _, x := range s.Jailbreak {
			out = append(out, x.Name)
		}
	case KindContext:
		for _, x := range s.Context {
			out = append(out, x.Name)
		}
	case KindLanguage:
		for _, x := range s.Language {
			out = append(out, x.Name)
		}
	case KindEmbedding:
		for _, x := range s.Embeddings {
			out = append(out, x.Name)
		}
	case KindComplexity:
		for _, x := range s.Complexity {
			out = append(out, x.Name)
		}
	}
	return out
}

// SignalsKey is the key under signals that holds conditions of a kind
// ("keyword" → "keywords").
func SignalsKey(kind string) string {
	switch kind {
	case KindKeyword:
		return "keywords"
	case KindDomain:
		return "domains"
	case KindEmbedding:
		return "embeddings"
	}
	return kind
}

func (c *checker) signals(p string, r *Recipe) {
	s := &r.Signals
	for _, kind := range Kinds {
		seen := map[string]int{}
		for j, n := range signalNames(s, kind) {
			np := fmt.Sprintf("%s/%s/%d/name", p, SignalsKey(kind), j)
			if n == "" {
				c.add(np, CodeMissingField, "a signal needs a name")
				continue
			}
			if k, dup := seen[n]; dup {
				c.add(np, CodeDuplicate, "%s signal name %q is already used by %s/%s/%d", kind, n, p, SignalsKey(kind), k)
			} else {
				seen[n] = j
			}
		}
	}

	for j, k := range s.Keywords {
		kp := fmt.Sprintf("%s/keywords/%d", p, j)
		if k.Operator != OpAND && k.Operator != OpOR && k.Operator != "" {
			c.add(kp+"/operator", CodeInvalidValue, "must be AND or OR (got %q)", k.Operator)
		}
		if len(k.Keywords) == 0 {
			c.add(kp+"/keywords", CodeMissingField, "list at least one keyword")
		}
		for x, w := range k.Keywords {
			if strings.TrimSpace(w) == "" {
				c.add(fmt.Sprintf("%s/keywords/%d", kp, x), CodeInvalidValue, "a keyword must not be empty")
			}
		}
	}
	for j, d := range s.Domains {
		dp := fmt.Sprintf("%s/domains/%d", p, j)
		c.unit(dp+"/threshold", d.Threshold)
		for x, cat := range d.MMLUCategories {
			if strings.TrimSpace(cat) == "" {
				c.add(fmt.Sprintf("%s/mmlu_categories/%d", dp, x), CodeInvalidValue, "a category must not be empty")
			}
		}
	}
	for j, x := range s.PII {
		xp := fmt.Sprintf("%s/pii/%d", p, j)
		for k, t := range x.Types {
			c.piiType(fmt.Sprintf("%s/types/%d", xp, k), t)
		}
		c.unit(xp+"/threshold", x.Threshold)
		c.unscanned(xp, x.OnUnscanned, x.Action)
	}
	for j, x := range s.Jailbreak {
		xp := fmt.Sprintf("%s/jailbreak/%d", p, j)
		c.unit(xp+"/threshold", x.Threshold)
		c.unscanned(xp, x.OnUnscanned, x.Action)
	}
	for j, x := range s.Context {
		xp := fmt.Sprintf("%s/context/%d", p, j)
		if x.MinTokens < 0 {
			c.add(xp+"/min_tokens", CodeInvalidValue, "must not be negative (got %d)", x.MinTokens)
		}
		if x.MaxTokens < 0 {
			c.add(xp+"/max_tokens", CodeInvalidValue, "must not be negative (got %d); leave it out for no upper bound", x.MaxTokens)
		} else if x.MaxTokens > 0 && x.MaxTokens < x.MinTokens {
			c.add(xp+"/max_tokens", CodeConflict, "max_tokens (%d) is below min_tokens (%d): the signal could never match", x.MaxTokens, x.MinTokens)
		}
	}
	for j, x := range s.Language {
		xp := fmt.Sprintf("%s/language/%d", p, j)
		if len(x.Languages) == 0 {
			c.add(xp+"/languages", CodeMissingField, "list at least one language code such as en or de")
		}
		for k, code := range x.Languages {
			if !iso6391[strings.ToLower(code)] {
				c.add(fmt.Sprintf("%s/languages/%d", xp, k), CodeInvalidValue, "%q is not an ISO 639-1 language code (two letters, such as en, de, fr, zh)", code)
			}
		}
	}
	for j, x := range s.Embeddings {
		xp := fmt.Sprintf("%s/embeddings/%d", p, j)
		c.unit(xp+"/threshold", x.Threshold)
		c.candidates(xp+"/candidates", x.Candidates, "an embedding signal needs at least one candidate phrase to compare with")
		switch x.Aggregation {
		case "", "max", "mean":
		default:
			c.add(xp+"/aggregation", CodeInvalidValue, "must be max or mean (got %q)", x.Aggregation)
		}
	}
	for j := range s.Complexity {
		c.complexity(fmt.Sprintf("%s/complexity/%d", p, j), r, &s.Complexity[j])
	}
}

func (c *checker) candidates(p string, list []string, emptyMsg string) {
	if len(list) == 0 {
		c.add(p, CodeMissingField, "%s", emptyMsg)
	}
	for k, s := range list {
		if strings.TrimSpace(s) == "" {
			c.add(fmt.Sprintf("%s/%d", p, k), CodeInvalidValue, "a candidate must not be empty")
		}
	}
}

func (c *checker) complexity(p string, r *Recipe, x *ComplexitySignal) {
	if strings.Contains(x.Name, ":") {
		c.add(p+"/name", CodeInvalidValue, "a complexity signal name must not contain a colon: conditions write it as %q", "name:level")
	}
	val := func(field string, d Decimal) (float64, bool) {
		if !d.IsSet() {
			return 0, false
		}
		f, err := d.Float()
		if err != nil {
			c.add(p+"/"+field, CodeInvalidValue, "must be a decimal such as \"0.1\" (got %q)", string(d))
			return 0, false
		}
		return f, true
	}
	th, thOK := val("threshold", x.Threshold)
	ha, haOK := val("hard_above", x.HardAbove)
	eb, ebOK := val("easy_below", x.EasyBelow)
	hb, hbOK := val("hard_below", x.HardBelow)
	ea, eaOK := val("easy_above", x.EasyAbove)

	useTh := x.Threshold.IsSet()
	useAbove := x.HardAbove.IsSet() || x.EasyBelow.IsSet()
	useBelow := x.HardBelow.IsSet() || x.EasyAbove.IsSet()

	if thOK && (th < 0 || th > 1) {
		c.add(p+"/threshold", CodeInvalidValue, "must be between 0 and 1 (got %s): a score above it is hard, below its negative easy", x.Threshold)
	}
	// Mutual exclusion: report at the first field of each extra group.
	groups := 0
	for _, g := range []struct {
		used  bool
		field string
	}{{useTh, "threshold"}, {useAbove, firstSet(x.HardAbove, "hard_above", "easy_below")}, {useBelow, firstSet(x.HardBelow, "hard_below", "easy_above")}} {
		if !g.used {
			continue
		}
		groups++
		if groups > 1 {
			c.add(p+"/"+g.field, CodeConflict, "threshold, hard_above/easy_below and hard_below/easy_above are mutually exclusive; keep one of them")
		}
	}
	if useAbove {
		switch {
		case !x.EasyBelow.IsSet():
			c.add(p+"/easy_below", CodeMissingField, "hard_above and easy_below are used together; set easy_below too")
		case !x.HardAbove.IsSet():
			c.add(p+"/hard_above", CodeMissingField, "hard_above and easy_below are used together; set hard_above too")
		case haOK && ebOK && ha < eb:
			c.add(p+"/hard_above", CodeConflict, "hard_above (%s) must be at least easy_below (%s): scores above hard_above are hard, below easy_below easy", x.HardAbove, x.EasyBelow)
		}
	}
	if useBelow {
		switch {
		case !x.EasyAbove.IsSet():
			c.add(p+"/easy_above", CodeMissingField, "hard_below and easy_above are used together; set easy_above too")
		case !x.HardBelow.IsSet():
			c.add(p+"/hard_below", CodeMissingField, "hard_below and easy_above are used together; set hard_below too")
		case hbOK && eaOK && hb > ea:
			c.add(p+"/hard_below", CodeConflict, "hard_below (%s) must be at most easy_above (%s): scores below hard_below are hard, above easy_above easy", x.HardBelow, x.EasyAbove)
		}
		c.add(p+"/"+firstSet(x.HardBelow, "hard_below", "easy_above"), CodeUnsupported,
			"hard_below/easy_above grade with a score-type backend (complexity_model), which Junction does not provide; use threshold or hard_above/easy_below with local scoring")
	}
	if !useTh && !useAbove && !useBelow {
		c.add(p, CodeMissingField, "complexity signal %q has no boundaries: set threshold (for example \"0.1\") or hard_above and easy_below", x.Name)
	}
	if useTh || useAbove {
		for _, set := range []struct {
			field string
			cs    *CandidateSet
		}{{"hard", x.Hard}, {"easy", x.Easy}} {
			msg := fmt.Sprintf("local complexity scoring needs %s example phrasings: add %s: {candidates: [...]}", set.field, set.field)
			if set.cs == nil {
				c.add(p+"/"+set.field, CodeMissingField, "%s", msg)
				continue
			}
			c.candidates(p+"/"+set.field+"/candidates", set.cs.Candidates, msg)
		}
	}
	for k, n := range x.Composer {
		np := fmt.Sprintf("%s/composer/%d", p, k)
		if !n.IsLeaf() {
			c.add(np, CodeInvalidValue, "composer lists signal conditions {type, name}, not operator nodes")
			continue
		}
		if n.Type == KindComplexity {
			c.add(np+"/type", CodeInvalidValue, "a complexity composer cannot depend on a complexity signal")
			continue
		}
		c.leaf(np, r, fmt.Sprintf("complexity signal %q", x.Name), n)
	}
}

func firstSet(d Decimal, ifSet, otherwise string) string {
	if d.IsSet() {
		return ifSet
	}
	return otherwise
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
	known := signalNames(&r.Signals, n.Type)
	for _, k := range known {
		if k == name {
			return
		}
	}
	c.add(p+"/name", CodeUnknownRef, "%s references %s signal %q, which is not in signals.%s of recipe %q%s",
		who, n.Type, name, SignalsKey(n.Type), r.Name, knownList(name, known))
}

func (c *checker) global() {
	s := &c.doc.Global.Services
	c.address("/global/services/management_api/address", s.ManagementAPI.Address)
	c.port("/global/services/management_api/port", s.ManagementAPI.Port)
	switch s.ManagementAPI.Auth.Mode {
	case "", "none", "bearer":
	default:
		c.add("/global/services/management_api/auth/mode", CodeInvalidValue, "must be none or bearer (got %q)", s.ManagementAPI.Auth.Mode)
	}
	c.managementAuth(&s.ManagementAPI.Auth)
	if n := s.API.BatchClassification.MaxBatchSize; n < 1 {
		c.add("/global/services/api/batch_classification/max_batch_size", CodeInvalidValue, "must be at least 1 (got %d)", n)
	}
	m := s.Observability.Metrics
	c.address("/global/services/observability/metrics/address", m.Address)
	c.port("/global/services/observability/metrics/port", m.Port)
	c.address("/global/extproc/address", c.doc.Global.Extproc.Address)
	c.port("/global/extproc/port", c.doc.Global.Extproc.Port)
	if mc := c.doc.Global.ModelCatalog; mc != nil && mc.SignalTimeoutMS < 0 {
		c.add("/global/model_catalog/signal_timeout_ms", CodeInvalidValue, "must not be negative (got %d)", mc.SignalTimeoutMS)
	}
	if mc := c.doc.Global.ModelCatalog; mc != nil {
		c.deployments(mc)
	}
	c.nativeAPI()
	if !c.doc.Global.ModelRuntimeEnabled() {
		if mc := c.doc.Global.ModelCatalog; mc != nil {
			for _, nb := range mc.Bindings.Each() {
				c.add("/global/model_catalog/bindings/"+nb.Kind, CodeConflict,
					"global.router.enabled is false, so no model deployment runs and the %s signal would have nothing to ask; remove this binding (the signal then runs in-process) or set global.router.enabled: true", nb.Kind)
			}
		}
	}
}

// ports reports two listening sockets on the same port and overlapping address.
func (c *checker) ports() {
	type sock struct {
		path, what, addr string
		port             int
	}
	var socks []sock
	for i, l := range c.doc.Listeners {
		socks = append(socks, sock{fmt.Sprintf("/listeners/%d/port", i), fmt.Sprintf("listener %q", l.Name), l.Address, l.Port})
	}
	g := c.doc.Global
	socks = append(socks, sock{"/global/services/management_api/port", "the management API", g.Services.ManagementAPI.Address, g.Services.ManagementAPI.Port})
	if m := g.Services.Observability.Metrics; m.Enabled == nil || *m.Enabled {
		socks = append(socks, sock{"/global/services/observability/metrics/port", "metrics", m.Address, m.Port})
	}
	socks = append(socks, sock{"/global/extproc/port", "ext_proc", g.Extproc.Address, g.Extproc.Port})
	if n := g.Services.NativeAPI; n != nil && n.Enabled {
		port := n.Port
		if port == 0 {
			port = DefaultNativeAPIPort
		}
		addr := n.Address
		if addr == "" {
			addr = DefaultAddress
		}
		socks = append(socks, sock{"/global/services/native_api/port", "the native API", addr, port})
	}
	for i := range socks {
		for j := 0; j < i; j++ {
			a, b := socks[i], socks[j]
			if a.port != 0 && a.port == b.port && addrsOverlap(a.addr, b.addr) {
				c.add(a.path, CodeConflict, "port %d on %s is already used by %s (%s); choose another port", a.port, a.addr, b.what, strings.TrimSuffix(b.path, "/port"))
				break
			}
		}
	}
}

func addrsOverlap(a, b string) bool {
	wild := func(s string) bool { return s == "" || s == "0.0.0.0" || s == "::" || s == "[::]" }
	return a == b || wild(a) || wild(b)
}

func (c *checker) address(p, a string) {
	if a == "" {
		return // defaults fill it
	}
	host := strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
	if net.ParseIP(host) != nil {
		return
	}
	if strings.Contains(a, "://") || strings.Contains(a, "/") {
		c.add(p, CodeInvalidValue, "must be a host name or IP address such as 127.0.0.1, not a URL (got %q)", a)
		return
	}
	if strings.Contains(a, ":") {
		c.add(p, CodeInvalidValue, "must be a host name or IP address without a port; put the port in port (got %q)", a)
		return
	}
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			c.add(p, CodeInvalidValue, "%q is not a valid host name or IP address", a)
			return
		}
	}
}

func (c *checker) port(p string, port int) {
	if port < 1 || port > 65535 {
		c.add(p, CodeInvalidValue, "must be a port between 1 and 65535 (got %d)", port)
	}
}

func (c *checker) unit(p string, v float64) {
	if v < 0 || v > 1 {
		c.add(p, CodeInvalidValue, "must be between 0 and 1 (got %v)", v)
	}
}

func (c *checker) effort(p, e string) {
	switch e {
	case "low", "medium", "high":
	default:
		c.add(p, CodeInvalidValue, "must be low, medium or high (got %q)", e)
	}
}

func (c *checker) unscanned(p, onUnscanned, action string) {
	switch onUnscanned {
	case "", UnscannedBlock, UnscannedAllow:
	default:
		c.add(p+"/on_unscanned", CodeInvalidValue, "must be block or allow (got %q)", onUnscanned)
	}
	switch action {
	case "", ActionRoute, ActionBlock:
	default:
		c.add(p+"/action", CodeInvalidValue, "must be route or block (got %q)", action)
	}
}

func (c *checker) piiType(p, t string) {
	u := strings.ToUpper(strings.TrimSpace(t))
	for _, k := range KnownPIITypes {
		if u == k {
			return
		}
	}
	c.add(p, CodeInvalidValue, "unknown personal-data type %q (known: %s)", t, strings.Join(KnownPIITypes, ", "))
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

func isKind(t string) bool {
	for _, k := range Kinds {
		if k == t {
			return true
		}
	}
	return false
}

func isJSONObject(raw []byte) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, "{") || s == "null"
}

// isToken reports whether s is an HTTP token (RFC 9110), as header names are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(ch)) {
			return false
		}
	}
	return true
}

func isEnvName(s string) bool {
	for i, r := range s {
		if r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return s != ""
}

// iso6391 holds the ISO 639-1 two-letter language codes.
var iso6391 = func() map[string]bool {
	const codes = "aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy " +
		"da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz " +
		"ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt " +
		"lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt " +
		"qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to " +
		"tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu"
	m := map[string]bool{}
	for _, c := range strings.Fields(codes) {
		m[c] = true
	}
	return m
}()

// IsLanguageCode reports whether code is an ISO 639-1 two-letter code (case-insensitive).
func IsLanguageCode(code string) bool { return iso6391[strings.ToLower(code)] }

// managementAuth checks roles and token sources: unique names, known
// permissions, known roles, exactly one source per token, and at least one
// token when bearer mode is on (otherwise nobody could call the API).
func (c *checker) managementAuth(a *Auth) {
	const base = "/global/services/management_api/auth"
	known := map[string]bool{"*": true}
	for _, p := range ManagementPermissions {
		known[p] = true
	}
	roles := map[string]bool{}
	for i, r := range a.Roles {
		p := fmt.Sprintf("%s/roles/%d", base, i)
		if roles[r.Name] {
			c.add(p+"/name", CodeDuplicate, "role %q is defined twice", r.Name)
		}
		roles[r.Name] = true
		for j, perm := range r.Permissions {
			if !known[perm] {
				c.add(fmt.Sprintf("%s/permissions/%d", p, j), CodeInvalidValue, "unknown permission %q; use one of %s or \"*\"", perm, strings.Join(ManagementPermissions, ", "))
			}
		}
	}
	names := map[string]bool{}
	for i, t := range a.Tokens {
		p := fmt.Sprintf("%s/tokens/%d", base, i)
		if names[t.Name] {
			c.add(p+"/name", CodeDuplicate, "token %q is defined twice", t.Name)
		}
		names[t.Name] = true
		if (t.Env == "") == (t.File == "") {
			c.add(p, CodeConflict, "token %q needs exactly one source: env (an environment variable name) or file (a path); tokens are never written inline", t.Name)
		}
		for j, r := range t.Roles {
			if !roles[r] {
				c.add(fmt.Sprintf("%s/roles/%d", p, j), CodeUnknownRef, "token %q names role %q, which is not in auth.roles", t.Name, r)
			}
		}
	}
	if a.Mode == "bearer" && len(a.Tokens) == 0 {
		c.add(base+"/tokens", CodeMissingField, "bearer mode needs at least one token source (name, roles, env or file)")
	}
}
