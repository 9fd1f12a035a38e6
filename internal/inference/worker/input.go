package worker

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Item-level error codes: a failed item never fails other items.
const (
	codeMaxLength  = "max_length_exceeded"
	codeScanBudget = "scan_budget_exceeded"
	codeQuestion   = "invalid_question"
)

// itemError is an error answered in place of one item.
type itemError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// budget says how much of a long input a model reads (the spec's long-input
// rules).
type budget struct {
	overflow     string // reject, truncate or window
	maxTokens    int    // options.max_tokens; 0: the model's limit
	windowTokens int
	overlap      int
	scanTokens   int // window mode: most tokens read in windows
}

const (
	overflowReject   = "reject"
	overflowTruncate = "truncate"
	overflowWindow   = "window"
)

// DefaultScanWindows is how many max-input-token windows a windowed input may
// span when neither options.max_tokens nor the model's scan_budget_tokens
// option says otherwise.
const DefaultScanWindows = 16

// piece is one part of an input that one forward pass reads.
type piece struct {
	text   string
	offset int // byte offset of text in the input
	tokens int
}

type prepared struct {
	pieces     []piece
	tokens     int
	lowerBound bool
	err        *itemError
	// deferred: the model applies the budget itself and reports the tokens
	// it read (see Truncator); tokens is filled from its result.
	deferred bool
}

// handOver reports whether inputs read under b go to the model untokenized:
// the model truncates by itself to its own limit, which is the budget.
func handOver(m Model, info Info, b budget) bool {
	return b.overflow == overflowTruncate && (b.maxTokens == 0 || b.maxTokens >= info.MaxInputTokens) && truncates(m)
}

// estimateTokens guesses an input's tokens for the batch budget only.
func estimateTokens(text string, limit int) int {
	return min(max(len(text)/4, 1), max(limit, 1))
}

// settle fills the usage of a handed-over input from the model's result.
func (p *prepared) settle(r Result) {
	if p.deferred {
		p.tokens, p.lowerBound = r.Tokens, r.Truncated
	}
}

// prepare applies the long-input rules to text: the model reads at most its
// budget (options.max_tokens capped by the model's max input tokens). Under
// reject a longer input fails, without tokenizing when its length in
// characters already proves it too long; under truncate the input is cut
// after the last token that fits; under window it is read in overlapping
// windows up to the scan budget, and fails unread beyond it.
func prepare(m Model, info Info, text string, b budget) (p prepared) {
	limit := info.MaxInputTokens
	if limit <= 0 {
		limit = 512
	}
	if b.overflow == overflowWindow {
		return prepareWindows(m, info, text, b, limit)
	}
	if b.maxTokens > 0 && b.maxTokens < limit {
		limit = b.maxTokens
	}
	if b.overflow == overflowReject && info.MaxTokenChars > 0 && utf8.RuneCountInString(text) > limit*info.MaxTokenChars {
		return prepared{err: &itemError{codeMaxLength, fmt.Sprintf("input is longer than its budget of %d tokens (overflow reject)", limit)}}
	}
	ends, complete, err := m.Tokenize(text, limit)
	if err != nil {
		return prepared{err: &itemError{"invalid_input", "could not tokenize the input: " + err.Error()}}
	}
	if complete {
		return prepared{pieces: []piece{{text: text, tokens: len(ends)}}, tokens: len(ends)}
	}
	if b.overflow == overflowReject {
		return prepared{err: &itemError{codeMaxLength, fmt.Sprintf("input is longer than its budget of %d tokens (overflow reject)", limit)}}
	}
	cut := len(text)
	if len(ends) > 0 {
		cut = ends[len(ends)-1]
	}
	return prepared{pieces: []piece{{text: text[:cut], tokens: len(ends)}}, tokens: len(ends), lowerBound: true}
}

func prepareWindows(m Model, info Info, text string, b budget, limit int) prepared {
	scan := b.scanTokens
	if b.maxTokens > 0 {
		scan = b.maxTokens
	}
	if scan <= 0 {
		scan = DefaultScanWindows * limit
	}
	w := b.windowTokens
	if w <= 0 || w > limit {
		w = limit
	}
	overlap := b.overlap
	if overlap < 0 || overlap >= w {
		overlap = w / 8
	}
	tooLong := &itemError{codeScanBudget, fmt.Sprintf("input is longer than its scan budget of %d tokens; none of it was read", scan)}
	if info.MaxTokenChars > 0 && utf8.RuneCountInString(text) > scan*info.MaxTokenChars {
		return prepared{err: tooLong}
	}
	ends, complete, err := m.Tokenize(text, scan)
	if err != nil {
		return prepared{err: &itemError{"invalid_input", "could not tokenize the input: " + err.Error()}}
	}
	if !complete {
		return prepared{err: tooLong}
	}
	n := len(ends)
	if n <= w {
		return prepared{pieces: []piece{{text: text, tokens: n}}, tokens: n}
	}
	var p prepared
	p.tokens = n
	for s := 0; ; s += w - overlap {
		e := min(s+w, n)
		from := 0
		if s > 0 {
			from = ends[s-1]
		}
		to := ends[e-1]
		if e == n {
			to = len(text)
		}
		p.pieces = append(p.pieces, piece{text: text[from:to], offset: from, tokens: e - s})
		if e == n {
			return p
		}
	}
}

// parseBudget reads the classify/decisions options that shape input reading.
func parseBudget(overflow string, maxTokens int, win *windowOptions, scanOption int) (budget, *apiError) {
	b := budget{overflow: overflow, maxTokens: maxTokens, scanTokens: scanOption}
	switch overflow {
	case "":
		b.overflow = overflowTruncate
	case overflowReject, overflowTruncate, overflowWindow:
	default:
		return b, badRequest("field /options/overflow: %q is not one of reject, truncate, window", overflow)
	}
	if maxTokens < 0 {
		return b, badRequest("field /options/max_tokens: must be at least 1")
	}
	if win != nil {
		if b.overflow != overflowWindow {
			return b, badRequest("field /options/window: only used with overflow \"window\"")
		}
		if win.Tokens < 0 || win.Overlap < 0 || (win.Tokens > 0 && win.Overlap >= win.Tokens) {
			return b, badRequest("field /options/window: tokens must be positive and overlap smaller than tokens")
		}
		b.windowTokens, b.overlap = win.Tokens, win.Overlap
		if win.Overlap == 0 {
			b.overlap = -1 // default overlap
		}
	}
	return b, nil
}

type windowOptions struct {
	Tokens  int `json:"tokens"`
	Overlap int `json:"overlap"`
}

// codePoints converts byte offset b of s to a code point offset.
func codePoints(s string, b int) int {
	if b > len(s) {
		b = len(s)
	}
	return utf8.RuneCountInString(s[:b])
}

// scanBudgetOption reads the model family option that bounds windowed reads.
func scanBudgetOption(spec Spec) int {
	for _, k := range []string{"scan_budget_tokens", "scan_budget"} {
		switch v := spec.Options[k].(type) {
		case float64:
			return int(v)
		case int:
			return v
		}
	}
	return 0
}

// segments splits text into sentence-like parts (at . ! ? and line breaks),
// with their byte offsets, for span questions.
func segments(text string) []piece {
	var out []piece
	start := 0
	emit := func(end int) {
		seg := text[start:end]
		trimmed := strings.TrimSpace(seg)
		if trimmed != "" {
			off := start + strings.Index(seg, trimmed)
			out = append(out, piece{text: trimmed, offset: off})
		}
		start = end
	}
	for i, r := range text {
		switch r {
		case '.', '!', '?', '\n':
			emit(i + utf8.RuneLen(r))
		}
	}
	emit(len(text))
	return out
}
