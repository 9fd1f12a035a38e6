package defaultmodels

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference"
)

// Model is one default model loaded into a runtime, in the form the signals
// consume it: Classifier (and Domain or Jailbreak) for DomainName and
// JailbreakName, Embedder for EmbedderName; a joint model (JointNames) sets
// Domain, Jailbreak and Embedder for the models it answers for, and no
// Classifier. It lets a caller load only the models a configuration uses
// (Open loads the three separately).
type Model struct {
	Classifier        signal.Classifier
	Domain, Jailbreak signal.Classifier
	Embedder          signal.Embedder
	md                *inference.Model
}

// OpenModel loads the default model name from dir (what CacheDir returned)
// into rt with threads intra-op threads, adapted exactly as Open adapts it
// (the jailbreak model reads the whole text in windows and has the phrase
// floor). name may be a joint model (JointName), whose one run per text
// answers for each of its models.
func OpenModel(ctx context.Context, rt *inference.Runtime, dir, name string, threads int) (*Model, error) {
	if jointHeads(name) != nil {
		return openJoint(ctx, rt, dir, name, threads)
	}
	md, err := rt.Load(ctx, filepath.Join(dir, name), inference.ModelOptions{Name: name, Threads: threads, Device: "cpu"})
	if err != nil {
		return nil, fmt.Errorf("defaultmodels: loading %s: %w", name, err)
	}
	m := &Model{md: md}
	switch name {
	case EmbedderName:
		m.Embedder = NewEmbedder(md, MethodEmbedder)
	case DomainName:
		m.Classifier = NewClassifier(md, MethodDomain)
		m.Domain = m.Classifier
	case JailbreakName:
		m.Classifier = phraseFloor{classifier{m: md, method: MethodJailbreak, opts: inference.ClassifyOptions{
			InputOptions: inference.InputOptions{Overflow: inference.OverflowWindow}, Aggregate: inference.AggregateMax}}}
		m.Jailbreak = m.Classifier
	default:
		_ = md.Close()
		return nil, fmt.Errorf("defaultmodels: %q is not a default model (%s, %s, %s or a joint model: %s)", name, EmbedderName, DomainName, JailbreakName, strings.Join(JointNames, ", "))
	}
	return m, nil
}

// Close closes the model (calls in flight finish first; later calls fail).
func (m *Model) Close() error { return m.md.Close() }
