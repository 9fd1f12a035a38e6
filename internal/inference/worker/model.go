// Package worker is the model runtime worker: the HTTP server (port 8100) that
// hosts loaded task models and answers classify, embeddings, rerank, question
// answering (decisions) and bundle requests, with dynamic batching, queue
// limits, a per-model result cache, health states, Server-Timing and metrics.
//
// The worker consumes models through the small Model interface below, so the
// HTTP layer does not depend on how a model runs; cmd/junction binds it to the
// ONNX runtime in package inference. The worker must not log request text and
// its metrics carry no request content.
package worker

import (
	"context"
	"errors"
)

// Tasks a model can declare in Info.Task.
const (
	// TaskSequence is sequence classification: one probability per label
	// (softmax), or independent scores when Info.MultiLabel is set.
	TaskSequence = "sequence-classification"
	// TaskTokens is token classification: labelled spans of the input.
	TaskTokens = "token-classification"
	// TaskEmbedding is a sentence embedding model.
	TaskEmbedding = "embedding"
	// TaskRerank is a cross-encoder that scores (query, document) pairs.
	TaskRerank = "rerank"
)

// Info describes a loaded model: what it does and its limits.
type Info struct {
	Task       string   // one of the Task* constants
	Labels     []string // classification labels, in output order
	MultiLabel bool     // labels are scored independently (sigmoid)
	// MaxInputTokens is the most tokens one forward pass reads of an input.
	MaxInputTokens int
	// MaxTokenChars is the largest number of characters one token covers; it
	// lets the reject rule refuse an input without tokenizing it.
	MaxTokenChars int
	Dimensions    int   // embedding width (embedding models)
	Matryoshka    []int // dimensions an embedding may be cut to, if any
	// Layers are the hidden layers an embedding may be read from besides the
	// default (config.json junction.layers); a LayerEmbedder serves them.
	Layers      []int
	Revision    string
	Digest      string // sha256 of the model files
	Device      string
	Engine      string
	MemoryBytes int64
}

// Pair is one classification input; Pair is empty for single texts.
type Pair struct {
	Text string
	Pair string
}

// Span is one labelled span of an input. Start and End are byte offsets into
// the text that was classified, End exclusive.
type Span struct {
	Label       string
	Start, End  int
	Probability float32
}

// Result is one item's answer from a batched call. Exactly one of the value
// fields is set unless Err is non-nil; an item error never fails other items.
type Result struct {
	Scores []float32 // classify: one per label; rerank: the relevance score, then optionally the raw logit
	Vector []float32 // embed
	Spans  []Span    // tokens
	// Tokens and Truncated are reported by a Truncator: the tokens it read of
	// the input (pair included, special tokens not) and whether it cut it.
	Tokens    int
	Truncated bool
	Err       error
}

// Truncator is implemented by models that read at most their max input
// tokens of an over-long input and report what they read in Result.Tokens
// and Result.Truncated. For inputs whose budget is the model's own limit
// under overflow truncate, the worker then hands the text over without
// tokenizing it first, instead of tokenizing it twice.
type Truncator interface {
	TruncatesInputs() bool
}

// LayerEmbedder is implemented by embedding models that declare Info.Layers:
// EmbedLayer is Embed read from that hidden layer (layer > 0).
type LayerEmbedder interface {
	EmbedLayer(ctx context.Context, in []string, layer int) ([]Result, error)
}

func truncates(m Model) bool {
	t, ok := m.(Truncator)
	return ok && t.TruncatesInputs()
}

// Model is what the worker needs from a loaded model. Batched methods return
// one Result per input in order; an error return fails the whole batch (the
// forward pass itself failed). Implementations must be safe for concurrent
// use; the worker runs one batch at a time per model.
type Model interface {
	Info() Info
	// Tokenize reads text up to limit tokens (limit <= 0: no limit) and returns
	// the byte offsets where each token read ends, and whether those tokens
	// cover the whole text. It must stop tokenizing once limit is reached.
	Tokenize(text string, limit int) (ends []int, complete bool, err error)
	Classify(ctx context.Context, in []Pair) ([]Result, error)
	Tokens(ctx context.Context, in []string) ([]Result, error)
	Embed(ctx context.Context, in []string) ([]Result, error)
	// Rerank scores each pair's Text (query) against its Pair (document).
	Rerank(ctx context.Context, in []Pair) ([]Result, error)
	Close() error
}

// Spec names one model to serve, as given on the command line or in the
// models file.
type Spec struct {
	Model    string         `json:"model"` // hub repository, built-in name or local directory
	Revision string         `json:"revision,omitempty"`
	Name     string         `json:"name,omitempty"` // served name; defaults to Model
	Device   string         `json:"device,omitempty"`
	Profile  string         `json:"profile,omitempty"`
	Engine   string         `json:"engine,omitempty"`
	Family   string         `json:"family,omitempty"`
	Memory   float64        `json:"memory_budget_gib,omitempty"`
	Options  map[string]any `json:"options,omitempty"`
}

// ServedName is the name clients use for the model.
func (s Spec) ServedName() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Model
}

// Loader opens one model. It is called again after a failure, with backoff,
// unless the error is Permanent.
type Loader func(ctx context.Context, spec Spec) (Model, error)

// SelfChecker is implemented by models that can verify themselves after
// loading (the warming state); a failed self-check is not retried.
type SelfChecker interface {
	SelfCheck(ctx context.Context) error
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks a load error that retrying cannot fix (a damaged package, a
// checksum mismatch, an unsupported model): the model goes to failed at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
