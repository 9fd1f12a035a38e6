// Package signal computes a recipe's signals for one request: keywords, context
// length, language, personal data, jailbreak, domain, similarity to examples and
// complexity. Each kind compiles into a Set that evaluates all of the recipe's
// signals of that kind with one pass (one model call per kind), so that the
// engine can run kinds concurrently under the signal deadline.
//
// Model-backed kinds (domain, jailbreak, embedding, complexity) reach models only
// through the Classifier and Embedder interfaces below; when none is supplied they
// use the lexical fallbacks of this package and say so in Result.Method.
//
// This package must not decide routes: it reports scores, the decision package
// matches them.
package signal

import (
	"context"
	"time"
)

// Input is the part of a request that signals read. It is built once per request
// and shared read-only by every Set.
type Input struct {
	// Text is the text routing is about: the content of the last user message.
	Text string
	// UserTexts holds the content of every user message, oldest first; safety
	// scans (pii, jailbreak) read all of them.
	UserTexts []string
	// AllTexts holds the content of every message of any role, for token counts.
	AllTexts []string
	// UserMessages holds, for each UserTexts entry, its index in the request's
	// messages, so that detections can say where they are (pii spans). When it
	// is shorter than UserTexts the missing entries are taken to be their
	// UserTexts index (a caller whose messages are all user messages need not
	// fill it). Text scanned because there is no user message is the last
	// message (len(AllTexts)-1).
	UserMessages []int
}

// Result is one signal's outcome for one request.
type Result struct {
	Kind    string `json:"type"`
	Name    string `json:"name"`
	Matched bool   `json:"matched"`
	// Score is the signal's confidence in [0,1] (similarity, probability, 1 for an
	// exact keyword hit). For complexity it is the raw hard-minus-easy score.
	Score float64 `json:"score"`
	// Level is the complexity grade (hard, medium, easy); empty for other kinds.
	Level string `json:"level,omitempty"`
	// Value is what was detected: a language code, a domain category, a keyword,
	// a token count, the best-matching candidate.
	Value string `json:"value,omitempty"`
	// Entities lists personal-data types found (pii only).
	Entities []string `json:"entities,omitempty"`
	// Spans are where the personal data this signal counted is (pii only): at
	// most MaxPIISpans, those of the newest messages when there were more
	// (SpansTruncated), sorted by message and start. Not in the JSON form:
	// routing output reports types and counts, plugins read the spans.
	Spans          []PIISpan `json:"-"`
	SpansTruncated bool      `json:"-"`
	// Unscanned is true when the input could not be fully scanned (over budget,
	// deadline, model failure); the recipe's on_unscanned policy decided Matched.
	Unscanned bool `json:"unscanned,omitempty"`
	// Method says what produced the score: "keyword", "pattern" or
	// "pattern+heuristic" (pii), "lingua", "lexical-bayes", "hashed-ngrams",
	// "tokens-estimate", or the model binding's name.
	Method string `json:"method"`
	// Error carries a bounded code when evaluation failed: "deadline",
	// "input_limit", "model_error".
	Error   string        `json:"error,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Set evaluates every compiled signal of one kind.
type Set interface {
	// Kind is the condition type these signals answer ("keyword", "domain", ...).
	Kind() string
	// Evaluate returns one Result per compiled signal, in configuration order.
	// It never returns fewer results than signals: failures are Results with
	// Error set. It must return promptly when ctx is done.
	Evaluate(ctx context.Context, in *Input) []Result
	// Cheap reports whether evaluation is fast enough (well under 10µs for short
	// text, no model call) to run inline rather than in its own goroutine.
	Cheap() bool
	// Missing returns the results to use when the Set did not finish: one per
	// compiled signal, in configuration order, with Error set to code
	// ("deadline" when the signal deadline passed). Safety kinds (pii,
	// jailbreak) mark them Unscanned and decide Matched by on_unscanned; other
	// kinds do not match.
	Missing(code string) []Result
}

// InlineSet is implemented by Sets that are not Cheap in general but are for
// some inputs: a CPU-only scan whose cost grows with the text (pii, the
// lexical fallbacks). The engine runs such a Set inline when CheapFor(in) is
// true, which spares a goroutine, a channel and a thread wake-up per request;
// those cost more than scanning a short message.
type InlineSet interface {
	Set
	// CheapFor reports whether evaluating in is as cheap as a Cheap Set's
	// evaluation (well under 10µs, no model call).
	CheapFor(in *Input) bool
}

// ModelSet is implemented by Sets that may call a model (domain, jailbreak,
// embedding, complexity). The engine runs a request's ModelSets that call
// one (CallsModel) in turn on at most two goroutines under a Detached
// context and waits for them under the signal deadline, instead of a
// goroutine per Set and one more per model call; or on the request's own
// goroutine when one local run answers them all (LocalRunSet).
type ModelSet interface {
	Set
	// CallsModel reports whether Evaluate calls a model rather than a
	// lexical fallback of this package.
	CallsModel() bool
}

// inlineScanBytes is how many bytes the pii scan reads inline (about 14ns a
// byte: a few µs); inlineLexicalBytes how many the lexical naive Bayes
// classifiers read inline (about 40ns a byte plus a few µs).
const (
	inlineScanBytes    = 512
	inlineLexicalBytes = 128
)

// scanSize is how many bytes a safety scan of in reads, up to limit: past the
// limit the exact size does not matter.
func scanSize(in *Input, limit int) int {
	if in == nil {
		return 0
	}
	if len(in.UserTexts) == 0 {
		return len(in.Text)
	}
	n := 0
	for _, t := range in.UserTexts {
		n += len(t)
		if n > limit {
			break
		}
	}
	return n
}

// Codes of Result.Error.
const (
	CodeDeadline   = "deadline"
	CodeInputLimit = "input_limit"
	CodeModelError = "model_error"
)

// LabelScore is a label with its probability.
type LabelScore struct {
	Label string
	Score float64
}

// Classifier is a sequence-classification model: one probability distribution
// over labels per text. The inference package implements it with ONNX Runtime.
type Classifier interface {
	Classify(ctx context.Context, texts []string) ([][]LabelScore, error)
	// Method names the model for routing output ("onnx:domain-glove", ...).
	Method() string
}

// Embedder turns texts into unit-length vectors of one space.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Method() string
}

// Models supplies the model-backed signals. A nil field selects the lexical
// fallback of this package (LexicalDomain, LexicalJailbreak, HashedEmbedder),
// built anew by each Compile; a caller compiling several recipes may build the
// fallbacks once and pass them here to share them.
type Models struct {
	Domain    Classifier
	Jailbreak Classifier
	Embedder  Embedder
}
