package recipes

import (
	"fmt"
	"strings"
)

// Validation of a recipe's signals: names unique per kind, thresholds, PII types,
// language codes, and the complexity signal's paired candidates.

// KnownPIITypes are the personal-data entity types signals and policies may name.
var KnownPIITypes = []string{"PERSON", "EMAIL", "PHONE", "SSN", "LOCATION", "CREDIT_CARD", "IP_ADDRESS", "IBAN"}

func (c *checker) signals(p string, r *Recipe) {
	s := &r.Signals
	for _, kind := range Kinds {
		seen := map[string]int{}
		for j, n := range s.Names(kind) {
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

func (c *checker) unit(p string, v float64) {
	if v < 0 || v > 1 {
		c.add(p, CodeInvalidValue, "must be between 0 and 1 (got %v)", v)
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
