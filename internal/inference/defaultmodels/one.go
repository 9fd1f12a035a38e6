package defaultmodels

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference"
)

// Model is one default model loaded into a runtime, in the form the signals
// consume it: Classifier for DomainName and JailbreakName, Embedder for
// EmbedderName. It lets a caller load only the models a configuration uses
// (Open loads all three).
type Model struct {
	Classifier signal.Classifier
	Embedder   signal.Embedder
	md         *inference.Model
}

// OpenModel loads the default model name from dir (what CacheDir returned)
// into rt with threads intra-op threads, adapted exactly as Open adapts it
// (the jailbreak model reads the whole text in windows and has the phrase
// floor).
func OpenModel(ctx context.Context, rt *inference.Runtime, dir, name string, threads int) (*Model, error) {
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
	case JailbreakName:
		m.Classifier = phraseFloor{classifier{m: md, method: MethodJailbreak, opts: inference.ClassifyOptions{
			InputOptions: inference.InputOptions{Overflow: inference.OverflowWindow}, Aggregate: inference.AggregateMax}}}
	default:
		_ = md.Close()
		return nil, fmt.Errorf("defaultmodels: %q is not a default model (%s, %s or %s)", name, EmbedderName, DomainName, JailbreakName)
	}
	return m, nil
}

// Close closes the model (calls in flight finish first; later calls fail).
func (m *Model) Close() error { return m.md.Close() }
