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

// scanTexts returns the texts a safety scan reads, newest first, cut to the
// byte budget, and whether anything was left out. Newest first because the
// last message is the one being sent now; older ones were most likely scanned
// when they were new.
func scanTexts(in *Input, budget int) ([]string, bool) {
	texts := in.UserTexts
	if len(texts) == 0 && in.Text != "" {
		texts = []string{in.Text}
	}
	out := make([]string, 0, len(texts))
	left := budget
	for i := len(texts) - 1; i >= 0; i-- {
		t := texts[i]
		if strings.TrimSpace(t) == "" {
			continue // nothing to scan; a model need not see it
		}
		if len(t) > left {
			if left > 0 {
				out = append(out, truncateUTF8(t, left))
			}
			return out, true
		}
		left -= len(t)
		out = append(out, t)
	}
	return out, false
}

func (s *piiSet) Evaluate(ctx context.Context, in *Input) []Result {
	start := time.Now()
	texts, over := scanTexts(inputOrEmpty(in), s.scanBytes)
	var found []Entity
	for _, t := range texts {
		if ctx.Err() != nil {
			return stamp(s.Missing(CodeDeadline), start)
		}
		found = append(found, detectPII(t, s.heuristics)...)
	}
	out := make([]Result, len(s.signals))
	for i, ps := range s.signals {
		r := Result{Kind: recipes.KindPII, Name: ps.name, Method: ps.method}
		count := 0
		var types []string
		for _, e := range found {
			if (ps.types != nil && !ps.types[e.Type]) || e.Confidence < ps.threshold {
				continue
			}
			count++
			r.Score = max(r.Score, e.Confidence)
			if !slices.Contains(types, e.Type) {
				types = append(types, e.Type)
			}
		}
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
