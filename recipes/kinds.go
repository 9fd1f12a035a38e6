package recipes

// The eight signal kinds: their names as rule conditions spell them, their
// order, and where each keeps its signals in a recipe.

// Signal kinds as rule conditions name them (the `type` of a condition).
const (
	KindKeyword    = "keyword"
	KindDomain     = "domain"
	KindPII        = "pii"
	KindJailbreak  = "jailbreak"
	KindContext    = "context"
	KindLanguage   = "language"
	KindEmbedding  = "embedding"
	KindComplexity = "complexity"
)

// Kinds lists every signal kind in a fixed order.
var Kinds = []string{KindKeyword, KindDomain, KindPII, KindJailbreak, KindContext, KindLanguage, KindEmbedding, KindComplexity}

// Names returns the names of a recipe's signals of one kind, in
// configuration order. This switch and Kinds are the one place that pairs
// the kinds with their Signals fields: the engine and the management API
// iterate Kinds and call Names, and engine/signal's compiler, which needs each
// kind's typed signals, is held to Kinds by its TestCompileEveryKind;
// TestSignalsNamesCoversEveryField holds this switch to Signals.
func (s *Signals) Names(kind string) []string {
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

func isKind(t string) bool {
	for _, k := range Kinds {
		if k == t {
			return true
		}
	}
	return false
}
