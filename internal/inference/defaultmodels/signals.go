package defaultmodels

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/lexical"
)

// Methods the signals report for the default models.
const (
	MethodDomain    = "onnx:" + DomainName
	MethodJailbreak = "onnx:" + JailbreakName
	MethodEmbedder  = "onnx:" + EmbedderName
)

// Models are the default models loaded into a runtime.
type Models struct {
	// Signals holds the three models as the router's signals consume them.
	Signals signal.Models
	loaded  []*inference.Model
}

// Open writes the committed bundle's model directories (once, under
// cacheRoot, or the user cache directory when empty) and loads the three
// models into rt as one joint model (JointGraph: one run per text answers
// all three) with threads intra-op threads (0: the runtime's default).
func Open(ctx context.Context, rt *inference.Runtime, cacheRoot string, threads int) (*Models, error) {
	dir, err := CacheDir(cacheRoot)
	if err != nil {
		return nil, err
	}
	jm, err := OpenModel(ctx, rt, dir, JointName(ModelNames), threads)
	if err != nil {
		return nil, err
	}
	return &Models{Signals: signal.Models{Domain: jm.Domain, Jailbreak: jm.Jailbreak, Embedder: jm.Embedder}, loaded: []*inference.Model{jm.md}}, nil
}

// OpenEach is Open with the three models loaded separately (one session and
// one run each): what a caller that asks one model alone loads.
func OpenEach(ctx context.Context, rt *inference.Runtime, cacheRoot string, threads int) (*Models, error) {
	dir, err := CacheDir(cacheRoot)
	if err != nil {
		return nil, err
	}
	m := &Models{}
	load := func(name string) (*inference.Model, error) {
		md, err := rt.Load(ctx, filepath.Join(dir, name), inference.ModelOptions{Name: name, Threads: threads, Device: "cpu"})
		if err != nil {
			return nil, fmt.Errorf("defaultmodels: loading %s: %w", name, err)
		}
		m.loaded = append(m.loaded, md)
		return md, nil
	}
	emb, err := load(EmbedderName)
	if err == nil {
		m.Signals.Embedder = NewEmbedder(emb, MethodEmbedder)
		var dom, jb *inference.Model
		if dom, err = load(DomainName); err == nil {
			m.Signals.Domain = NewClassifier(dom, MethodDomain)
			if jb, err = load(JailbreakName); err == nil {
				// A jailbreak scan reads the whole text, in windows of 512 tokens,
				// and keeps each label's highest window score.
				m.Signals.Jailbreak = phraseFloor{classifier{m: jb, method: MethodJailbreak, opts: inference.ClassifyOptions{
					InputOptions: inference.InputOptions{Overflow: inference.OverflowWindow}, Aggregate: inference.AggregateMax}}}
			}
		}
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Close closes the loaded models (not the runtime).
func (m *Models) Close() error {
	var errs []error
	for _, md := range m.loaded {
		errs = append(errs, md.Close())
	}
	m.loaded = nil
	return errors.Join(errs...)
}

// NewClassifier adapts a loaded sequence-classification model to
// signal.Classifier; method names it in routing output.
func NewClassifier(m *inference.Model, method string) signal.Classifier {
	return classifier{m: m, method: method}
}

// NewEmbedder adapts a loaded embedding model to signal.Embedder.
func NewEmbedder(m *inference.Model, method string) signal.Embedder {
	return embedder{m: m, method: method}
}

type classifier struct {
	m      *inference.Model
	method string
	opts   inference.ClassifyOptions
}

func (c classifier) Method() string { return c.method }

// ModelFacts: the package's forward window and identity.
func (c classifier) ModelFacts() signal.ModelFacts { return factsOf(c.m) }

// LocalRun is the loaded model, whose calls run on the calling goroutine
// (signal.LocalRunner).
func (c classifier) LocalRun() any { return c.m }

func factsOf(m *inference.Model) signal.ModelFacts {
	info := m.Info()
	id := "onnx:" + info.Name
	if info.Digest != "" {
		id += "@" + info.Digest
	}
	return signal.ModelFacts{ForwardMaxTokens: info.MaxTokens, ResourceID: id, SourceRepoID: info.SourceRepoID, SourceRevision: info.SourceRevision}
}

func (c classifier) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	resp, err := c.m.Classify(ctx, inference.Texts(texts...), c.opts)
	if err != nil {
		return nil, err
	}
	out := make([][]signal.LabelScore, len(resp.Results))
	for i, r := range resp.Results {
		if r.Err != nil {
			return nil, r.Err
		}
		out[i] = make([]signal.LabelScore, len(r.Scores))
		for j, s := range r.Scores {
			out[i][j] = signal.LabelScore{Label: s.Label, Score: float64(s.Score)}
		}
	}
	return out, nil
}

// PhraseFloor is the least jailbreak probability of a text with a well-known
// injection phrasing (lexical.HasInjectionPhrase): a linear model dilutes an
// injection appended to a long benign text, the phrase list does not. The
// cross-validated accuracy with and without it is in docs/models.md.
const PhraseFloor = 0.9

// WithPhraseFloor applies the default jailbreak model's phrase floor to c,
// for the same model served elsewhere (a worker), so that it scores texts
// exactly as Open's in-process binding does.
func WithPhraseFloor(c signal.Classifier) signal.Classifier { return phraseFloor{c} }

// phraseFloor lifts the jailbreak probability of texts with a well-known
// injection phrasing to at least PhraseFloor, as the lexical fallback does.
type phraseFloor struct{ signal.Classifier }

// Unwrap is the classifier the floor applies to.
func (p phraseFloor) Unwrap() signal.Classifier { return p.Classifier }

func (p phraseFloor) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	out, err := p.Classifier.Classify(ctx, texts)
	if err != nil {
		return nil, err
	}
	for i, dist := range out {
		if i >= len(texts) || !lexical.HasInjectionPhrase(texts[i]) {
			continue
		}
		for j := range dist {
			switch dist[j].Label {
			case "jailbreak":
				dist[j].Score = max(dist[j].Score, PhraseFloor)
			case "benign":
				dist[j].Score = min(dist[j].Score, 1-PhraseFloor)
			}
		}
	}
	return out, nil
}

type embedder struct {
	m      *inference.Model
	method string
}

func (e embedder) Method() string { return e.method }

// ModelFacts: the package's forward window and identity.
func (e embedder) ModelFacts() signal.ModelFacts { return factsOf(e.m) }

// LocalRun is the loaded model (signal.LocalRunner).
func (e embedder) LocalRun() any { return e.m }

func (e embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	resp, err := e.m.Embed(ctx, texts, inference.EmbedOptions{})
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(resp.Results))
	for i, r := range resp.Results {
		if r.Err != nil {
			return nil, r.Err
		}
		out[i] = r.Embedding
	}
	return out, nil
}
