package defaultmodels

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/onnxgraph"
)

// Names of the model directories Write creates, and the methods the signals
// report for them.
const (
	EmbedderName  = "embed-glove"
	DomainName    = "domain-glove"
	JailbreakName = "jailbreak-glove"
)

// TokenizerJSON is the tokenizer.json of every default model: lower-casing,
// the Whitespace pre-tokenizer (\w+|[^\w\s]+) and a word-level vocabulary.
func (v *Vectors) TokenizerJSON() ([]byte, error) {
	vocab := make(map[string]int, len(v.Words))
	for i, w := range v.Words {
		vocab[w] = i
	}
	added := []map[string]any{}
	for i, w := range v.Words[:2] {
		added = append(added, map[string]any{"id": i, "content": w, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	return json.Marshal(map[string]any{
		"version":        "1.0",
		"added_tokens":   added,
		"normalizer":     map[string]any{"type": "Lowercase"},
		"pre_tokenizer":  map[string]any{"type": "Whitespace"},
		"post_processor": nil,
		"padding":        nil,
		"truncation":     nil,
		"model":          map[string]any{"type": "WordLevel", "unk_token": UnkToken, "vocab": vocab},
	})
}

func classifierConfig(l *Linear) ([]byte, error) {
	id2label := map[string]string{}
	label2id := map[string]int{}
	for i, o := range l.Outputs {
		id2label[strconv.Itoa(i)] = o
		label2id[o] = i
	}
	return json.MarshalIndent(map[string]any{
		"architectures": []string{"GloveLinearForSequenceClassification"},
		"model_type":    "glove-linear",
		"id2label":      id2label,
		"label2id":      label2id,
		"junction":      map[string]any{"task": "sequence-classification", "max_tokens": MaxTokens},
	}, "", "  ")
}

func embedderConfig() ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"architectures": []string{"GloveSIFForSentenceEmbedding"},
		"model_type":    "glove-sif",
		"hidden_size":   Dim,
		"junction":      map[string]any{"task": "embedding", "pooling": "none", "normalize": true, "max_tokens": MaxTokens, "output": "sentence_embedding"},
	}, "", "  ")
}

// jointConfig is a joint model's config.json: task heads; each classifier
// head's labels in output order (under "heads") and the output each of its
// classes adds to (under "classes": the graph outputs class logits); each
// head's columns of the graph's output (under "columns": offset, width);
// and the graph's format (JointVersion). Only this package reads the last
// four.
func (b *Bundle) jointConfig(heads []string) ([]byte, error) {
	labels := map[string][]string{}
	classes := map[string][]int{}
	for _, h := range heads {
		switch h {
		case HeadDomain:
			labels[h], classes[h] = b.Domain.Outputs, b.Domain.Map
		case HeadJailbreak:
			labels[h], classes[h] = b.Jailbreak.Outputs, b.Jailbreak.Map
		}
	}
	return json.MarshalIndent(map[string]any{
		"architectures": []string{"GloveJointHeads"},
		"model_type":    "glove-joint",
		"joint_version": JointVersion,
		"heads":         labels,
		"classes":       classes,
		"columns":       jointColumns(b, heads),
		"junction":      map[string]any{"task": "heads", "max_tokens": MaxTokens},
	}, "", "  ")
}

// Write creates dir/embed-glove, dir/domain-glove and dir/jailbreak-glove, and
// the joint models of JointNames, each with model.onnx, config.json and
// tokenizer.json. The same bundle gives the same files.
//
// It runs on every cold start (an empty cache directory), beside the other
// loads, so it holds one graph at a time and each graph's file is written
// from the bundle's own slices: what it adds to the bundle is the
// classifier graphs' per-word tables (a few MB), not seven models' files.
func (b *Bundle) Write(dir string) error {
	tok, err := b.Vectors.TokenizerJSON()
	if err != nil {
		return err
	}
	type model struct {
		name  string
		graph func() *onnxgraph.Graph
		cfg   func() ([]byte, error)
	}
	models := []model{
		{EmbedderName, func() *onnxgraph.Graph { return EmbedderGraph(b.Vectors) }, embedderConfig},
		{DomainName, func() *onnxgraph.Graph { return ClassifierGraph(DomainName, b.Vectors, b.Domain) }, func() ([]byte, error) { return classifierConfig(b.Domain) }},
		{JailbreakName, func() *onnxgraph.Graph { return ClassifierGraph(JailbreakName, b.Vectors, b.Jailbreak) }, func() ([]byte, error) { return classifierConfig(b.Jailbreak) }},
	}
	for _, name := range JointNames {
		heads := jointHeads(name)
		models = append(models, model{name, func() *onnxgraph.Graph { return JointGraph(name, b, heads) }, func() ([]byte, error) { return b.jointConfig(heads) }})
	}
	for _, m := range models {
		d := filepath.Join(dir, m.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		g := m.graph()
		if err := g.Err(); err != nil {
			return fmt.Errorf("defaultmodels: %s graph: %w", m.name, err)
		}
		if err := g.WriteFile(filepath.Join(d, "model.onnx"), onnxgraph.ModelOptions{Producer: "junction-defaultmodels"}); err != nil {
			return fmt.Errorf("defaultmodels: %s: %w", m.name, err)
		}
		cfg, err := m.cfg()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "config.json"), cfg, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "tokenizer.json"), tok, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CacheDir returns a directory holding the model directories of the committed
// bundle, writing them on first use under the user cache directory, or the
// temporary directory when that cannot be written (named by the manifest's
// digest, so a new bundle gets a new directory). root overrides the cache
// root when not empty. Every file of a directory written before is checked
// against the manifest's digests (about 0.2 s); one that differs has the
// directory rebuilt, with an error logged.
func CacheDir(root string) (string, error) { return cacheDirUnder(root, true) }

// WriteCache is CacheDir without checking a directory written before, for a
// caller that hands the directory to a worker: the worker checks each
// built-in model it loads from it (VerifyModel), so the files are read once.
func WriteCache(root string) (string, error) { return cacheDirUnder(root, false) }

func cacheDirUnder(root string, verify bool) (string, error) {
	if root != "" {
		return cacheDir(root, verify)
	}
	var errs []error
	if c, err := os.UserCacheDir(); err == nil {
		dir, err := cacheDir(filepath.Join(c, "junction", "defaultmodels"), verify)
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	dir, err := cacheDir(filepath.Join(os.TempDir(), "junction-defaultmodels"), verify)
	if err == nil {
		return dir, nil
	}
	return "", errors.Join(append(errs, err)...)
}

func cacheDir(root string, verify bool) (string, error) {
	dir, err := cacheFiles(root, verify)
	if err != nil {
		return "", err
	}
	if err := writeSources(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// writeSources declares each model directory's source checkpoint
// (inference.SourceFile: the model's name at Revision), where a directory
// does not declare one yet (also in caches written before there were
// such files). It is not one of the manifest's artifacts: the revision is
// the manifest's digest.
func writeSources(dir string) error {
	rev, err := Revision()
	if err != nil {
		return err
	}
	for _, name := range append(slices.Clone(ModelNames), JointNames...) {
		p := filepath.Join(dir, name, inference.SourceFile)
		if _, err := os.Stat(p); err == nil {
			continue
		}
		raw, err := json.Marshal(inference.Source{RepoID: name, Revision: rev})
		if err != nil {
			return err
		}
		tmp := p + ".tmp-" + strconv.Itoa(os.Getpid())
		if err := os.WriteFile(tmp, raw, 0o644); err != nil {
			return fmt.Errorf("defaultmodels: cache: %w", err)
		}
		if err := os.Rename(tmp, p); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("defaultmodels: cache: %w", err)
		}
	}
	return nil
}

func cacheFiles(root string, verify bool) (string, error) {
	man, err := data.ReadFile("data/" + ManifestFile)
	if err != nil {
		return "", fmt.Errorf("defaultmodels: %s is missing; run `make models`", ManifestFile)
	}
	dir := filepath.Join(root, Digest(man)[len("sha256:"):][:16])
	if IsCache(dir) {
		if !verify {
			return dir, nil
		}
		// The marker says the directory was written whole, not that its
		// files are still those: every load checks them.
		err := Verify(dir)
		if err == nil {
			return dir, nil
		}
		slog.Default().Error("the cached default models differ from the committed manifest; rebuilding them", "dir", dir, "err", err)
		if rerr := os.RemoveAll(dir); rerr != nil {
			return "", fmt.Errorf("%w; removing %s to rebuild it failed: %v (remove it by hand)", err, dir, rerr)
		}
	}
	b, err := Load()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("defaultmodels: cache: %w", err)
	}
	tmp, err := os.MkdirTemp(root, "tmp-")
	if err != nil {
		return "", fmt.Errorf("defaultmodels: cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := b.Write(tmp); err != nil {
		return "", err
	}
	// A bundle whose written files differ from the manifest (a stale
	// manifest) is refused rather than trusted later.
	if err := Verify(tmp); err != nil {
		return "", fmt.Errorf("%w (the committed manifest is stale: run `make models`)", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, CompleteMarker), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have written it first.
		if IsCache(dir) {
			if !verify {
				return dir, nil
			}
			if verr := Verify(dir); verr != nil {
				return "", verr
			}
			return dir, nil
		}
		return "", fmt.Errorf("defaultmodels: cache: %w", err)
	}
	return dir, nil
}
