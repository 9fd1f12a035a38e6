package inference

import (
	"fmt"
	"unicode/utf8"

	"github.com/junction-router/junction/internal/inference/tokenizer"
)

// item is one input made ready for the model under the long-input rules: one encoding, or one per window.
type item struct {
	encs      []tokenizer.Encoding
	starts    []int             // per window: index in toks of its first windowed token
	toks      []tokenizer.Token // the windowed (or only) text's tokens
	seq       int8              // the Sequence id of the windowed text in the encodings (0 or 1)
	content   []int             // per window: windowed tokens it holds
	usage     Usage
	truncated bool
	err       *ItemError
}

// limits are a call's resolved long-input options.
type limits struct {
	overflow Overflow
	budget   int // tokens per encoding, special tokens included
	scan     int // window: most tokens of the windowed text
	window   int // window: tokens per window, special tokens included
	overlap  int // window: windowed tokens shared by neighbours; -1 = default
}

func (m *Model) limits(o InputOptions) (limits, error) {
	l := limits{overflow: o.Overflow, budget: m.info.MaxTokens}
	if l.overflow == "" {
		l.overflow = m.info.Overflow
	}
	if err := checkOverflow(l.overflow); err != nil {
		return l, err
	}
	if o.MaxTokens < 0 {
		return l, invalid("max_tokens %d: must be ≥ 0", o.MaxTokens)
	}
	if o.Window.Tokens < 0 || o.Window.Overlap < 0 {
		return l, invalid("window tokens and overlap must be ≥ 0")
	}
	if l.overflow == OverflowWindow {
		l.scan = m.info.ScanBudget
		if o.MaxTokens > 0 && o.MaxTokens < l.scan {
			l.scan = o.MaxTokens
		}
		l.window = m.info.MaxTokens
		if o.Window.Tokens > 0 && o.Window.Tokens < l.window {
			l.window = o.Window.Tokens
		}
		if l.window <= m.tok.NumSpecial(true)+1 {
			return l, invalid("window of %d tokens leaves no room for text beside %d special tokens", l.window, m.tok.NumSpecial(true))
		}
		l.overlap = -1
		if o.Window.Overlap > 0 {
			l.overlap = o.Window.Overlap
		}
		return l, nil
	}
	if o.MaxTokens > 0 && o.MaxTokens < l.budget {
		l.budget = o.MaxTokens
	}
	if l.budget <= m.tok.NumSpecial(true) {
		return l, invalid("max_tokens %d leaves no room for text beside %d special tokens", l.budget, m.tok.NumSpecial(true))
	}
	return l, nil
}

// plan tokenises one input, reading only as far as its budget needs.
func (m *Model) plan(in Input, pair bool, l limits) item {
	special := m.tok.NumSpecial(pair)
	switch l.overflow {
	case OverflowReject:
		// Rule 3: longer than budget × the largest character span of a token cannot fit; no tokenising.
		if maxChars := l.budget * m.tok.MaxTokenChars(); len(in.Text)+len(in.Pair) > maxChars &&
			utf8.RuneCountInString(in.Text)+utf8.RuneCountInString(in.Pair) > maxChars {
			return item{err: &ItemError{Code: CodeMaxLengthExceeded, Message: fmt.Sprintf("the input has more characters than %d tokens can hold (%d × %d characters)", l.budget, l.budget, m.tok.MaxTokenChars())}}
		}
		it := m.truncate(in, pair, l.budget-special)
		if it.truncated {
			return item{usage: it.usage, err: &ItemError{Code: CodeMaxLengthExceeded, Message: fmt.Sprintf("the input has more than %d tokens", l.budget)}}
		}
		return it
	case OverflowWindow:
		return m.windows(in, pair, l)
	}
	return m.truncate(in, pair, l.budget-special)
}

// truncate keeps the first avail text tokens (a pair loses tokens from its longer side first).
func (m *Model) truncate(in Input, pair bool, avail int) item {
	a, ca := m.toks.Tokens(in.Text, avail)
	var b []tokenizer.Token
	cb := true
	if pair {
		b, cb = m.toks.Tokens(in.Pair, avail)
	}
	truncated := !ca || !cb
	if len(a)+len(b) > avail { // longest first
		truncated = true
		la, lb := len(a), len(b)
		for la+lb > avail {
			if la > lb {
				la--
			} else {
				lb--
			}
		}
		a, b = a[:la], b[:lb]
	}
	e := m.tok.Wrap(a, b, pair)
	return item{
		encs: []tokenizer.Encoding{e}, starts: []int{0}, toks: a, seq: 0, content: []int{len(a)},
		usage: Usage{Tokens: e.Len(), TokensLowerBound: truncated}, truncated: truncated,
	}
}

// windows reads the text (for a pair, the second text; the first is kept whole in every window, cut to half
// a window at most) in overlapping windows, up to the scan budget.
func (m *Model) windows(in Input, pair bool, l limits) item {
	special := m.tok.NumSpecial(pair)
	var fixed []tokenizer.Token
	target := in.Text
	truncated := false
	if pair {
		half := (l.window - special) / 2
		var complete bool
		fixed, complete = m.toks.Tokens(in.Text, half)
		truncated = !complete
		target = in.Pair
	}
	content := l.window - special - len(fixed)
	toks, complete := m.toks.Tokens(target, l.scan)
	if !complete {
		return item{err: &ItemError{Code: CodeScanBudgetExceeded, Message: fmt.Sprintf("the input has more than %d tokens, its scan budget; none of it was read", l.scan)}}
	}
	overlap := l.overlap
	if overlap < 0 {
		overlap = content / 8
	}
	if overlap >= content {
		overlap = content - 1
	}
	it := item{toks: toks, truncated: truncated}
	if pair {
		it.seq = 1
	}
	for start := 0; ; start += content - overlap {
		end := start + content
		if end > len(toks) {
			end = len(toks)
		}
		w := toks[start:end]
		var e tokenizer.Encoding
		if pair {
			e = m.tok.Wrap(fixed, w, true)
		} else {
			e = m.tok.Wrap(w, nil, false)
		}
		it.encs = append(it.encs, e)
		it.starts = append(it.starts, start)
		it.content = append(it.content, len(w))
		if end >= len(toks) {
			break
		}
	}
	it.usage = Usage{Tokens: len(toks) + len(fixed) + special, TokensLowerBound: truncated}
	return it
}
