package engine

import (
	"strings"

	"github.com/junction-router/junction/recipes"
)

// UsedSignals reports which of r's signals compile and run: those a
// decision's rules name, the safety signals with action block (they run
// whether or not a decision names them), and the composer conditions of a
// used complexity signal. Signals it leaves out are neither compiled nor
// evaluated, so their models need not be loaded.
func UsedSignals(r recipes.Recipe) func(kind, name string) bool {
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
	for _, c := range r.Signals.Complexity {
		if used[key(recipes.KindComplexity, c.Name)] {
			for _, n := range c.Composer {
				used[key(n.Type, n.Name)] = true
			}
		}
	}
	return func(kind, name string) bool { return used[key(kind, name)] }
}

// UsedKinds are the signal kinds of doc that have at least one used signal
// (UsedSignals) in some recipe: what a caller loads models or detectors for
// before Compile, so that a configuration whose decisions read no
// model-backed signal loads no model.
func UsedKinds(doc *recipes.Document) map[string]bool {
	kinds := map[string]bool{}
	for _, r := range doc.Recipes {
		used := UsedSignals(r)
		add := func(kind string, names []string) {
			for _, n := range names {
				if used(kind, n) {
					kinds[kind] = true
					return
				}
			}
		}
		s := r.Signals
		add(recipes.KindKeyword, names(s.Keywords, func(x recipes.KeywordSignal) string { return x.Name }))
		add(recipes.KindDomain, names(s.Domains, func(x recipes.DomainSignal) string { return x.Name }))
		add(recipes.KindPII, names(s.PII, func(x recipes.PIISignal) string { return x.Name }))
		add(recipes.KindJailbreak, names(s.Jailbreak, func(x recipes.JailbreakSignal) string { return x.Name }))
		add(recipes.KindContext, names(s.Context, func(x recipes.ContextSignal) string { return x.Name }))
		add(recipes.KindLanguage, names(s.Language, func(x recipes.LanguageSignal) string { return x.Name }))
		add(recipes.KindEmbedding, names(s.Embeddings, func(x recipes.EmbeddingSignal) string { return x.Name }))
		add(recipes.KindComplexity, names(s.Complexity, func(x recipes.ComplexitySignal) string { return x.Name }))
	}
	return kinds
}

// UsedLanguages are the language codes the used language signals of doc
// name (what the language detector must know).
func UsedLanguages(doc *recipes.Document) []string {
	var codes []string
	for _, r := range doc.Recipes {
		used := UsedSignals(r)
		for _, l := range r.Signals.Language {
			if used(recipes.KindLanguage, l.Name) {
				codes = append(codes, l.Languages...)
			}
		}
	}
	return codes
}

func names[T any](xs []T, name func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return out
}
