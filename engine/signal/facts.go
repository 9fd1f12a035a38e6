package signal

// ModelFacts are what a model-backed classifier or embedder knows of the
// runtime behind it, for the management inventory (document 000,
// inventory and diagnostics fields). Zero values are unknown, and the
// inventory omits them.
type ModelFacts struct {
	// ForwardMaxTokens is one forward pass's capacity in tokens.
	ForwardMaxTokens int
	// ResourceID is the physical runtime identity: the loaded package
	// (name and digest), or the worker deployment and served model.
	ResourceID string
	// SourceRepoID and SourceRevision are the checkpoint a derived local
	// graph declares it was built from, where it declares one; the
	// inventory reports registry.repo_id when they match a registered
	// checkpoint.
	SourceRepoID, SourceRevision string
	// Windowed: a long input is read in windows (overflow window); then
	// DocumentMaxTokens bounds the whole input and WindowSize and
	// WindowOverlap the windows, where known.
	Windowed                                     bool
	DocumentMaxTokens, WindowSize, WindowOverlap int
}

// FactReporter is implemented by models that know their ModelFacts.
type FactReporter interface {
	ModelFacts() ModelFacts
}

// FactsOf reports the facts of m (a Classifier or an Embedder), or of the
// model it wraps (Unwrap), and whether any layer knows them.
func FactsOf(m any) (ModelFacts, bool) {
	for m != nil {
		if r, ok := m.(FactReporter); ok {
			return r.ModelFacts(), true
		}
		switch u := m.(type) {
		case interface{ Unwrap() Classifier }:
			m = u.Unwrap()
		case interface{ Unwrap() Embedder }:
			m = u.Unwrap()
		default:
			return ModelFacts{}, false
		}
	}
	return ModelFacts{}, false
}
