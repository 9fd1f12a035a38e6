// Package inference runs Hugging Face style ONNX exports natively through ONNX Runtime: sequence
// classification (softmax labels or independent sigmoid scores), token classification (BIO spans with byte and
// code-point offsets), embeddings (mean, CLS or last-token pooling, normalisation, Matryoshka truncation) and
// cross-encoder rerank, with pure-Go tokenizers (internal/inference/tokenizer) and the spec's long-input rules (token
// budget, overflow reject | truncate | window, tokenising only as far as needed, tokens_lower_bound).
//
// A Runtime owns the ONNX Runtime environment (one per process) and the default device and threads; Load opens
// a model directory (model.onnx, config.json, tokenizer.json) into a Model whose one session is created once and
// shared by every caller. Model methods are safe for concurrent use; inputs of one call are batched (sorted by
// length, padded to the longest row of each forward pass, bounded by rows and tokens per pass).
//
// The package must not speak HTTP, queue requests across callers or log request text: the worker
// (internal/inference/worker) and the router's signals build on this API.
package inference

import (
	"errors"
	"fmt"
	"time"
)

// Task is what a model computes, detected from config.json (architectures, num_labels) and the graph's
// outputs, or forced with ModelOptions.Task.
type Task string

// Tasks.
const (
	TaskSequenceClassification Task = "sequence-classification" // logits [B,labels] → label probabilities or scores
	TaskTokenClassification    Task = "token-classification"    // logits [B,T,labels] → spans
	TaskEmbedding              Task = "embedding"               // last_hidden_state [B,T,H] or a pooled [B,H]
	TaskRerank                 Task = "rerank"                  // cross-encoder logits [B,1] (or [B,2])
	// TaskHeads is a graph with several [B,k] float32 outputs read together (Model.Heads): several small
	// models that share their input and most of their work, merged into one graph (the default models).
	TaskHeads Task = "heads"
)

// Pooling turns per-token hidden states into one vector.
type Pooling string

// Poolings.
const (
	PoolingMean Pooling = "mean" // average over real tokens (attention mask)
	PoolingCLS  Pooling = "cls"  // the first token
	PoolingLast Pooling = "last" // the last real token (decoder-style embedders)
	PoolingNone Pooling = "none" // the graph already returns one vector per input
)

// Overflow says what happens to an input longer than its token budget.
type Overflow string

// Overflow modes of the spec.
const (
	OverflowReject   Overflow = "reject"   // the item fails with max_length_exceeded
	OverflowTruncate Overflow = "truncate" // read the first budget tokens (the default)
	OverflowWindow   Overflow = "window"   // read it all in windows, up to the scan budget, and aggregate
)

// Item-level error codes of the spec. A failed item never fails the other items of a call.
const (
	CodeMaxLengthExceeded  = "max_length_exceeded"  // longer than its budget under reject
	CodeScanBudgetExceeded = "scan_budget_exceeded" // longer than the scan budget under window; none of it was read
)

// Whole-call errors; test with errors.Is.
var (
	// ErrUnsupportedTask: the model does not serve that call (the worker answers 422 unsupported_surface).
	ErrUnsupportedTask = errors.New("the model does not serve this task")
	// ErrInvalidOptions: an option is out of range or not declared by the model (the worker answers 400).
	ErrInvalidOptions = errors.New("invalid inference options")
	// ErrDamagedPackage: a file of the model directory cannot be read as what
	// it claims to be (model.onnx not an ONNX graph, config.json not JSON, tokenizer.json not
	// a tokenizer this runtime reads) or
	// the loaded model fails its self-check; loading it again cannot help.
	ErrDamagedPackage = errors.New("the model package is damaged")
	// ErrClosed: the model or runtime was closed.
	ErrClosed = errors.New("inference: closed")
)

// ItemError is the error of one input of a call.
type ItemError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *ItemError) Error() string { return e.Code + ": " + e.Message }

// Input is one text, or a text pair (question and context, query and document).
type Input struct {
	Text string `json:"text"`
	Pair string `json:"text_pair,omitempty"`
}

// Texts makes single-text inputs.
func Texts(texts ...string) []Input {
	in := make([]Input, len(texts))
	for i, t := range texts {
		in[i].Text = t
	}
	return in
}

// Window configures windowed reading: windows of Tokens tokens (default and maximum: the model's budget) that
// overlap by Overlap tokens (default Tokens/8).
type Window struct {
	Tokens  int `json:"tokens,omitempty"`
	Overlap int `json:"overlap,omitempty"`
}

// InputOptions are the long-input options every call takes.
type InputOptions struct {
	// MaxTokens is options.max_tokens: the token budget of one input, capped by the model's max input tokens.
	// Under window it is the scan budget (all windows together), capped by ModelOptions.ScanBudget.
	// 0 means the cap.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Overflow: reject, truncate or window; empty means the model's default (ModelOptions.Overflow).
	Overflow Overflow `json:"overflow,omitempty"`
	Window   Window   `json:"window,omitempty"`
}

// Usage counts what an input cost. Tokens are those read (special tokens included); TokensLowerBound is true
// when the input was read only partly, so its real length is at least Tokens.
type Usage struct {
	Tokens           int  `json:"tokens"`
	TokensLowerBound bool `json:"tokens_lower_bound,omitempty"`
}

// Add sums usages; the lower-bound flag sticks.
func (u Usage) Add(v Usage) Usage {
	return Usage{Tokens: u.Tokens + v.Tokens, TokensLowerBound: u.TokensLowerBound || v.TokensLowerBound}
}

// Timings are a call's phases, for Server-Timing and metrics.
type Timings struct {
	Tokenize time.Duration // tokenising every input
	Queue    time.Duration // waiting for the model's session
	Forward  time.Duration // inside ONNX Runtime
	Post     time.Duration // heads: softmax, spans, pooling, aggregation
	Passes   int           // forward passes run
	Rows     int           // rows over all passes (windows count one each)
	Tokens   int           // padded tokens over all passes
}

// LabelScore is one label's probability (softmax) or independent score (sigmoid).
type LabelScore struct {
	Label string  `json:"label"`
	Score float32 `json:"score"`
}

// Span is an entity found by a token-classification model. Start and End count Unicode code points of the
// input text, End exclusive (the spec's offsets); ByteStart and ByteEnd are the same span in UTF-8 bytes.
type Span struct {
	Label     string  `json:"label"`
	Start     int     `json:"start"`
	End       int     `json:"end"`
	ByteStart int     `json:"byte_start"`
	ByteEnd   int     `json:"byte_end"`
	Text      string  `json:"text"`
	Score     float32 `json:"probability"`
}

// Aggregate says how windows' results combine into one under overflow window.
type Aggregate string

// Aggregations.
const (
	AggregateMax  Aggregate = "max"  // per label, the highest window score (the default for independent scores)
	AggregateMean Aggregate = "mean" // per label, the mean weighted by window tokens (the default for softmax)
)

// ClassifyOptions configure Classify.
type ClassifyOptions struct {
	InputOptions
	// Aggregate combines windows; empty picks max for independent scores and mean for softmax labels.
	// Token spans of all windows are merged (in the overlap the higher-scoring span wins).
	Aggregate Aggregate `json:"aggregate,omitempty"`
}

// ClassifyResult is one input's result: Scores for sequence classification (every label, in label order),
// Spans for token classification. Err is set instead when the item failed.
type ClassifyResult struct {
	Scores     []LabelScore `json:"scores,omitempty"`
	MultiLabel bool         `json:"multi_label,omitempty"` // Scores are independent sigmoid scores
	Spans      []Span       `json:"spans,omitempty"`
	Truncated  bool         `json:"truncated,omitempty"` // read only its first budget tokens
	Windows    int          `json:"windows,omitempty"`   // windows read under overflow window
	Usage      Usage        `json:"usage"`
	Err        *ItemError   `json:"error,omitempty"`
}

// Top returns the highest-scoring label (empty for spans or a failed item).
func (r ClassifyResult) Top() LabelScore {
	var best LabelScore
	for i, s := range r.Scores {
		if i == 0 || s.Score > best.Score {
			best = s
		}
	}
	return best
}

// ClassifyResponse is the answer to one Classify call, results in input order.
type ClassifyResponse struct {
	Results []ClassifyResult
	Usage   Usage // sum over items
	Timings Timings
}

// EmbedOptions configure Embed.
type EmbedOptions struct {
	InputOptions
	// Dimensions truncates each vector to its first Dimensions values (Matryoshka) and renormalises it when
	// the model normalises. It must be one the model declares (Info.MatryoshkaDimensions) or its full width;
	// 0 means the full width.
	Dimensions int `json:"dimensions,omitempty"`
	// Layer selects a hidden layer when the model declares several (Info.Layers); 0 means the default.
	Layer int `json:"layer,omitempty"`
}

// EmbedResult is one input's vector, or its error. Under overflow window the vector is the token-weighted mean
// of the windows' vectors (renormalised when the model normalises).
type EmbedResult struct {
	Embedding []float32  `json:"embedding,omitempty"`
	Truncated bool       `json:"truncated,omitempty"`
	Windows   int        `json:"windows,omitempty"`
	Usage     Usage      `json:"usage"`
	Err       *ItemError `json:"error,omitempty"`
}

// EmbedResponse is the answer to one Embed call, results in input order.
type EmbedResponse struct {
	Results    []EmbedResult
	Dimensions int
	Usage      Usage
	Timings    Timings
}

// RerankOptions configure Rerank. The budget applies to each (query, document) pair.
type RerankOptions struct {
	InputOptions
}

// RerankResult is one document's relevance. Score is in [0,1] (sigmoid of a one-logit cross-encoder, softmax
// of the positive class of a two-logit one, or the cosine similarity of an embedding model, mapped to
// (cos+1)/2); Logit is the raw value (the cosine itself for an embedding model).
type RerankResult struct {
	Index     int        `json:"index"`
	Score     float32    `json:"relevance_score"`
	Logit     float32    `json:"logit"`
	Truncated bool       `json:"truncated,omitempty"`
	Windows   int        `json:"windows,omitempty"`
	Usage     Usage      `json:"usage"`
	Err       *ItemError `json:"error,omitempty"`
}

// RerankResponse is the answer to one Rerank call, results in document order (the caller sorts and cuts to
// top_n).
type RerankResponse struct {
	Results []RerankResult
	Usage   Usage
	Timings Timings
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
}
