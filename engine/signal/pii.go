package signal

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/junction-router/junction/recipes"
)

// Methods of pii results: validated patterns only, or patterns plus the
// PERSON/LOCATION heuristics when the signal asks for those types.
const (
	MethodPIIPattern   = "pattern"
	MethodPIIHeuristic = "pattern+heuristic"
)

// piiAliases maps other tools' entity names onto ours; ALL (seen in the
// spec's combined request) means every type.
var piiAliases = map[string]string{
	"EMAIL_ADDRESS": PIIEmail, "PHONE_NUMBER": PIIPhone, "US_SSN": PIISSN, "IP": PIIIPAddress,
	"IBAN_CODE": PIIIBAN, "CREDIT_CARD_NUMBER": PIICreditCard, "NAME": PIIPerson, "ADDRESS": PIILocation,
}

// NormalizePIIType returns the canonical name of an entity type (EMAIL for
// "email" or "EMAIL_ADDRESS"), "ALL", or an error for a type the detector does
// not know.
func NormalizePIIType(t string) (string, error) {
	u := strings.ToUpper(strings.TrimSpace(t))
	if u == "ALL" {
		return u, nil
	}
	if a, ok := piiAliases[u]; ok {
		return a, nil
	}
	if slices.Contains(PIITypes(), u) {
		return u, nil
	}
	return "", fmt.Errorf("unknown personal-data type %q (known: %s)", t, strings.Join(PIITypes(), ", "))
}

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
			n, err := NormalizePIIType(t)
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
		if ps.types == nil || ps.types[PIIPerson] || ps.types[PIILocation] {
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
const MaxPIISpans = 256

// PIISpan is one piece of personal data a pii signal counted, placed in the
// request: Message is the index in the request's messages (see
// Input.UserMessages), Start and End (exclusive) byte offsets into that
// message's text content as flattened for routing (text parts joined by
// newlines).
type PIISpan struct {
	Message    int
	Start, End int
	Type       string
	Score      float64
}

// scanTexts returns the texts a safety scan reads, newest first, cut to the
// byte budget, and whether anything was left out. Newest first because the
// last message is the one being sent now; older ones were most likely scanned
// when they were new. When from is not nil, the UserTexts index of each text
// returned is appended to it (-1 for Text, read because there are no user
// texts) and the result returned as at.
func scanTexts(in *Input, budget int, from []int) (texts []string, at []int, over bool) {
	all := in.UserTexts
	fallback := false
	if len(all) == 0 && in.Text != "" {
		all, fallback = []string{in.Text}, true
	}
	out := make([]string, 0, len(all))
	left := budget
	for i := len(all) - 1; i >= 0; i-- {
		t := all[i]
		if strings.TrimSpace(t) == "" {
			continue // nothing to scan; a model need not see it
		}
		if len(t) > left {
			if left <= 0 {
				return out, from, true
			}
			t, over = truncateUTF8(t, left), true
		}
		left -= len(t)
		out = append(out, t)
		if from != nil {
			k := i
			if fallback {
				k = -1
			}
			from = append(from, k)
		}
		if over {
			return out, from, true
		}
	}
	return out, from, false
}

// messageOf is the request message index of UserTexts[k] (k -1: Text).
func messageOf(in *Input, k int) int {
	switch {
	case k < 0:
		return max(len(in.AllTexts)-1, 0)
	case k < len(in.UserMessages):
		return in.UserMessages[k]
	}
	return k
}

func (s *piiSet) Evaluate(ctx context.Context, in *Input) []Result {
	start := time.Now()
	in = inputOrEmpty(in)
	var fromBuf [4]int
	texts, from, over := scanTexts(in, s.scanBytes, fromBuf[:0])
	var found []Entity
	// textOf[k] is the index in texts of found[k]'s text, for its message.
	var textOfBuf [8]int
	textOf := textOfBuf[:0]
	for i, t := range texts {
		if ctx.Err() != nil {
			return stamp(s.Missing(CodeDeadline), start)
		}
		found = append(found, detectPII(t, s.heuristics)...)
		for len(textOf) < len(found) {
			textOf = append(textOf, i)
		}
	}
	out := make([]Result, len(s.signals))
	for i, ps := range s.signals {
		r := Result{Kind: recipes.KindPII, Name: ps.name, Method: ps.method}
		count := 0
		var types []string
		for k, e := range found {
			if (ps.types != nil && !ps.types[e.Type]) || e.Confidence < ps.threshold {
				continue
			}
			count++
			r.Score = max(r.Score, e.Confidence)
			if !slices.Contains(types, e.Type) {
				types = append(types, e.Type)
			}
			// found holds the newest message's entities first: past the
			// bound, those are the ones kept.
			if len(r.Spans) == MaxPIISpans {
				r.SpansTruncated = true
				continue
			}
			if r.Spans == nil {
				r.Spans = make([]PIISpan, 0, min(len(found)-k, MaxPIISpans))
			}
			r.Spans = append(r.Spans, PIISpan{Message: messageOf(in, from[textOf[k]]), Start: e.Start, End: e.End, Type: e.Type, Score: e.Confidence})
		}
		slices.SortFunc(r.Spans, func(a, b PIISpan) int {
			if a.Message != b.Message {
				return a.Message - b.Message
			}
			return a.Start - b.Start
		})
		slices.Sort(types)
		r.Entities = types
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
