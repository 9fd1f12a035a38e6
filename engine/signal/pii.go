package signal

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/recipes"
)

// Methods of pii results: validated patterns only, or patterns plus the
// PERSON/LOCATION heuristics when the signal asks for those types.
const (
	MethodPIIPattern   = "pattern"
	MethodPIIHeuristic = "pattern+heuristic"
)

type piiSet struct {
	signals   []piiSignal
	scanBytes int
	// heuristics: some signal accepts PERSON or LOCATION, which only the
	// phrase heuristics find; without one the scan skips them.
	heuristics bool
}

type piiSignal struct {
	name      string
	types     map[string]bool // nil: every type
	threshold float64
	unscanned bool // Matched when the input was not fully scanned
	method    string
}

func newPIISet(cfg []recipes.PIISignal, scanBytes int) (Set, error) {
	set := &piiSet{scanBytes: scanBytes}
	for _, c := range cfg {
		ps := piiSignal{name: c.Name, threshold: c.Threshold, method: MethodPIIPattern}
		if c.Threshold < 0 || c.Threshold > 1 {
			return nil, fmt.Errorf("signals: pii signal %q: threshold %v is outside [0,1]", c.Name, c.Threshold)
		}
		var err error
		if ps.unscanned, err = unscannedMatches(recipes.KindPII, c.Name, c.OnUnscanned); err != nil {
			return nil, err
		}
		for _, t := range c.Types {
			n, err := pii.Normalize(t)
			if err != nil {
				return nil, fmt.Errorf("signals: pii signal %q: %w", c.Name, err)
			}
			if n == "ALL" {
				ps.types = nil
				break
			}
			if ps.types == nil {
				ps.types = map[string]bool{}
			}
			ps.types[n] = true
		}
		if ps.types == nil || ps.types[pii.Person] || ps.types[pii.Location] {
			ps.method = MethodPIIHeuristic
			set.heuristics = true
		}
		set.signals = append(set.signals, ps)
	}
	return set, nil
}

func (s *piiSet) Kind() string { return recipes.KindPII }

// Cheap is false: phone validation parses candidates with libphonenumber's
// rules, and the scan reads every user message.
func (s *piiSet) Cheap() bool { return false }

// CheapFor is true for short input: the scan is a few µs, less than a
// goroutine hand-off costs.
func (s *piiSet) CheapFor(in *Input) bool { return scanSize(in, inlineScanBytes) <= inlineScanBytes }

func (s *piiSet) Missing(code string) []Result {
	out := make([]Result, len(s.signals))
	for i, ps := range s.signals {
		out[i] = Result{Kind: recipes.KindPII, Name: ps.name, Method: ps.method, Error: code,
			Unscanned: true, Matched: ps.unscanned}
	}
	return out
}

// MaxPIISpans is the most spans one pii signal result keeps (Result.Spans).
// Past it the spans of the newest messages are kept and SpansTruncated is set:
// a plugin that must mask everything learns that it cannot.
const MaxPIISpans = pii.MaxSpans

// PIISpan is one piece of personal data a pii signal counted, placed in the
// request: Message is the index in the request's messages (see
// Input.UserMessages), Start and End (exclusive) byte offsets into that
// message's text content as flattened for routing (text parts joined by
// newlines).
type PIISpan = pii.Span

// scanTexts returns the texts a safety scan reads, newest first, cut to the
// byte budget, and whether anything was left out (see pii.Texts.Budget).
func scanTexts(in *Input, budget int, from []int) (texts []string, at []int, over bool) {
	t := in.scanned()
	return t.Budget(budget, from)
}

// scanned is what a safety scan reads of in.
func (in *Input) scanned() pii.Texts {
	return pii.Texts{User: in.UserTexts, Last: in.Text, UserMessages: in.UserMessages, Messages: len(in.AllTexts)}
}

func (s *piiSet) Evaluate(ctx context.Context, in *Input) []Result {
	start := time.Now()
	in = inputOrEmpty(in)
	texts := in.scanned()
	found, over, err := pii.Scan(ctx, &texts, s.scanBytes, s.heuristics)
	if err != nil {
		return stamp(s.Missing(CodeDeadline), start)
	}
	out := make([]Result, len(s.signals))
	for i, ps := range s.signals {
		m := pii.Select(found, ps.types, ps.threshold)
		count := m.Count
		r := Result{Kind: recipes.KindPII, Name: ps.name, Method: ps.method,
			Score: m.Score, Entities: m.Types, Spans: m.Spans, SpansTruncated: m.Truncated}
		r.Value = strconv.Itoa(count)
		r.Matched = count > 0
		if over {
			// What was read still counts: personal data found before the
			// budget ran out matches whatever the policy says.
			r.Unscanned, r.Error = true, CodeInputLimit
			r.Matched = r.Matched || ps.unscanned
		}
		out[i] = r
	}
	return stamp(out, start)
}

// ScanPII evaluates one pii signal configured by cfg over in, exactly as a
// recipe's signal would be (scan budget DefaultScanBytes), and returns its
// result with Spans. The plugin author tools use it to give a fixture the
// spans routing would have detected.
func ScanPII(ctx context.Context, cfg recipes.PIISignal, in *Input) (Result, error) {
	set, err := newPIISet([]recipes.PIISignal{cfg}, DefaultScanBytes)
	if err != nil {
		return Result{}, err
	}
	return set.Evaluate(ctx, in)[0], nil
}
