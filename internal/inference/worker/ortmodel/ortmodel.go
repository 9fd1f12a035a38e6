// Package ortmodel binds the worker to the ONNX runtime: it loads model
// directories with package inference and adapts each inference.Model to the
// worker.Model interface (the worker batches across requests; the runtime
// batches the rows of each call into forward passes).
//
// It must not add behaviour of its own beyond translating types and the
// token budget (the worker counts content tokens; the runtime counts special
// tokens too).
package ortmodel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/worker"
)

// Model is a loaded ONNX model seen through worker.Model.
type Model struct {
	m    *inference.Model
	info worker.Info
}

var (
	_ worker.Model         = (*Model)(nil)
	_ worker.LayerEmbedder = (*Model)(nil)
)

// Wrap adapts a loaded model; revision is the pinned commit it was loaded
// at, if any.
func Wrap(m *inference.Model, revision string, ortVersion string) *Model {
	in := m.Info()
	tok := m.Tokenizer()
	special := tok.NumSpecial(false)
	info := worker.Info{
		Task:           string(in.Task),
		Labels:         in.Labels,
		MultiLabel:     in.MultiLabel,
		MaxInputTokens: max(in.MaxTokens-special, 1),
		MaxTokenChars:  in.MaxTokenChars,
		Dimensions:     in.Dimensions,
		Matryoshka:     in.MatryoshkaDimensions,
		Layers:         in.Layers,
		Revision:       revision,
		Digest:         in.Digest,
		Device:         in.Device,
		Engine:         "onnxruntime " + ortVersion,
	}
	if len(info.Matryoshka) > 0 && info.Dimensions > 0 && !contains(info.Matryoshka, info.Dimensions) {
		info.Matryoshka = append(append([]int(nil), info.Matryoshka...), info.Dimensions)
	}
	for _, name := range []string{"model.onnx", filepath.Join("onnx", "model.onnx")} {
		if st, err := os.Stat(filepath.Join(in.Dir, name)); err == nil {
			info.MemoryBytes = st.Size()
			break
		}
	}
	return &Model{m: m, info: info}
}

func contains(l []int, v int) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

// Load opens the model directory for spec on rt. Errors that retrying cannot
// fix (no such directory, a model larger than its memory budget, a damaged
// package the runtime cannot read, a failed self-check) are marked
// worker.Permanent: the spec retries neither.
func Load(ctx context.Context, rt *inference.Runtime, dir string, spec worker.Spec, o inference.ModelOptions) (*Model, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, worker.Permanent(fmt.Errorf("model directory %s does not exist", dir))
	}
	if spec.Memory > 0 {
		var size int64
		_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				size += fi.Size()
			}
			return nil
		})
		if float64(size) > spec.Memory*(1<<30) {
			return nil, worker.Permanent(fmt.Errorf("model %s has %.2f GiB of files, more than its memory budget of %.2f GiB", dir, float64(size)/(1<<30), spec.Memory))
		}
	}
	if o.Name == "" {
		o.Name = spec.ServedName()
	}
	if spec.Device != "" {
		o.Device = spec.Device
	}
	before := residentBytes()
	m, err := rt.Load(ctx, dir, o)
	after := residentBytes()
	if err != nil {
		if errors.Is(err, inference.ErrInvalidOptions) || errors.Is(err, inference.ErrUnsupportedTask) ||
			errors.Is(err, inference.ErrDamagedPackage) || os.IsNotExist(err) {
			return nil, worker.Permanent(err)
		}
		return nil, err
	}
	w := Wrap(m, spec.Revision, rt.Version())
	// The memory the loaded model uses is what loading it added to the
	// process (session, weights, tokenizer); the file size stands in only
	// where the process's resident memory cannot be read. Loads measured
	// this way must not overlap (the worker's loader runs one at a time).
	if before > 0 && after > before {
		w.info.MemoryBytes = after - before
	}
	return w, nil
}

// residentBytes is the process's resident memory from /proc/self/statm
// (Linux); 0 where it cannot be read.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// Info describes the model.
func (a *Model) Info() worker.Info { return a.info }

// Tokenize reads text up to limit content tokens with the model's tokenizer.
func (a *Model) Tokenize(text string, limit int) ([]int, bool, error) {
	if limit <= 0 {
		limit = -1
	}
	toks, complete := a.m.Tokenizer().Tokens(text, limit)
	ends := make([]int, len(toks))
	for i, t := range toks {
		ends[i] = t.End
	}
	return ends, complete, nil
}

var truncate = inference.InputOptions{Overflow: inference.OverflowTruncate}

func itemErr(e *inference.ItemError) error {
	if e == nil {
		return nil
	}
	return e
}

// Classify runs sequence classification; scores come in label order.
func (a *Model) Classify(ctx context.Context, in []worker.Pair) ([]worker.Result, error) {
	inputs := make([]inference.Input, len(in))
	for i, p := range in {
		inputs[i] = inference.Input{Text: p.Text, Pair: p.Pair}
	}
	resp, err := a.m.Classify(ctx, inputs, inference.ClassifyOptions{InputOptions: truncate})
	if err != nil {
		return nil, err
	}
	out := make([]worker.Result, len(resp.Results))
	for i, r := range resp.Results {
		if r.Err != nil {
			out[i].Err = itemErr(r.Err)
			continue
		}
		out[i].Scores = make([]float32, len(r.Scores))
		for k, s := range r.Scores {
			out[i].Scores[k] = s.Score
		}
		out[i].Tokens, out[i].Truncated = a.read(r.Usage, in[i].Pair != ""), r.Truncated || r.Usage.TokensLowerBound
	}
	return out, nil
}

// TruncatesInputs: the runtime reads at most the model's max tokens of an
// input under overflow truncate and reports the tokens it read.
func (a *Model) TruncatesInputs() bool { return true }

// read converts the runtime's usage (special tokens included) to the
// content tokens the worker reports.
func (a *Model) read(u inference.Usage, pair bool) int {
	return max(u.Tokens-a.m.Tokenizer().NumSpecial(pair), 0)
}

// Tokens runs token classification; spans carry byte offsets.
func (a *Model) Tokens(ctx context.Context, in []string) ([]worker.Result, error) {
	resp, err := a.m.Classify(ctx, inference.Texts(in...), inference.ClassifyOptions{InputOptions: truncate})
	if err != nil {
		return nil, err
	}
	out := make([]worker.Result, len(resp.Results))
	for i, r := range resp.Results {
		if r.Err != nil {
			out[i].Err = itemErr(r.Err)
			continue
		}
		out[i].Spans = make([]worker.Span, len(r.Spans))
		for k, s := range r.Spans {
			out[i].Spans[k] = worker.Span{Label: s.Label, Start: s.ByteStart, End: s.ByteEnd, Probability: s.Score}
		}
	}
	return out, nil
}

// Embed returns one vector per text.
func (a *Model) Embed(ctx context.Context, in []string) ([]worker.Result, error) {
	return a.EmbedLayer(ctx, in, 0)
}

// EmbedLayer returns one vector per text, read from a hidden layer the
// model's config.json declares (junction.layers; 0: the default output).
func (a *Model) EmbedLayer(ctx context.Context, in []string, layer int) ([]worker.Result, error) {
	resp, err := a.m.Embed(ctx, in, inference.EmbedOptions{InputOptions: truncate, Layer: layer})
	if err != nil {
		return nil, err
	}
	out := make([]worker.Result, len(resp.Results))
	for i, r := range resp.Results {
		out[i] = worker.Result{Vector: r.Embedding, Err: itemErr(r.Err),
			Tokens: a.read(r.Usage, false), Truncated: r.Truncated || r.Usage.TokensLowerBound}
	}
	return out, nil
}

// Rerank scores pairs; pairs that share a query go in one runtime call.
// Scores are [relevance in 0..1, raw logit].
func (a *Model) Rerank(ctx context.Context, in []worker.Pair) ([]worker.Result, error) {
	out := make([]worker.Result, len(in))
	groups := map[string][]int{}
	var order []string
	for i, p := range in {
		if _, ok := groups[p.Text]; !ok {
			order = append(order, p.Text)
		}
		groups[p.Text] = append(groups[p.Text], i)
	}
	for _, q := range order {
		idx := groups[q]
		docs := make([]string, len(idx))
		for k, i := range idx {
			docs[k] = in[i].Pair
		}
		resp, err := a.m.Rerank(ctx, q, docs, inference.RerankOptions{InputOptions: truncate})
		if err != nil {
			return nil, err
		}
		for k, r := range resp.Results {
			i := idx[k]
			if r.Err != nil {
				out[i].Err = itemErr(r.Err)
				continue
			}
			out[i].Scores = []float32{r.Score, r.Logit}
		}
	}
	return out, nil
}

// Close releases the model's session.
func (a *Model) Close() error { return a.m.Close() }
