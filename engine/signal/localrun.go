package signal

// LocalRunner is implemented by a Classifier or an Embedder whose calls are
// a forward pass in this process, run on the calling goroutine under a
// Detached context (the in-process ONNX models): CPU work bounded by the
// model's input limits, as language detection is, not a wait on a worker.
//
// LocalRun identifies the run that answers a text, as a comparable value:
// models that report the same one (the heads of one joint model) answer a
// request's text from a single run, the first of them to ask running it and
// the others reading its answers. The engine then runs the request's model
// sets on the request's own goroutine, one after another, instead of handing
// them to goroutines of their own: one run leaves nothing to overlap, and the
// hand-off (a goroutine start, a thread wake-up, the request's goroutine
// parked and woken again) costs more CPU than it saves.
type LocalRunner interface {
	LocalRun() any
}

// LocalRunSet is implemented by the ModelSets that can say which local run
// (LocalRunner) answers them.
type LocalRunSet interface {
	ModelSet
	// LocalRun is the LocalRun of the set's model, nil when the model is not
	// a LocalRunner (a worker, a test double) or the set calls none.
	LocalRun() any
}

// LocalRunOf reports m's LocalRun (m a Classifier or an Embedder), or that
// of the model it wraps (Unwrap); nil when no layer is a LocalRunner.
func LocalRunOf(m any) any {
	for m != nil {
		if r, ok := m.(LocalRunner); ok {
			return r.LocalRun()
		}
		switch u := m.(type) {
		case interface{ Unwrap() Classifier }:
			m = u.Unwrap()
		case interface{ Unwrap() Embedder }:
			m = u.Unwrap()
		default:
			return nil
		}
	}
	return nil
}

func (s *domainSet) LocalRun() any {
	if isLexical(s.clf) {
		return nil
	}
	return LocalRunOf(s.clf)
}

func (s *jailbreakSet) LocalRun() any {
	if isLexical(s.clf) {
		return nil
	}
	return LocalRunOf(s.clf)
}

func (s *embeddingSet) LocalRun() any {
	if s.emb.lexical() {
		return nil
	}
	return LocalRunOf(s.emb.e)
}

func (s *complexitySet) LocalRun() any {
	if s.emb.lexical() {
		return nil
	}
	return LocalRunOf(s.emb.e)
}
