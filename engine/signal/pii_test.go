package signal

import (
	"slices"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/recipes"
)

func TestPIISignal(t *testing.T) {
	s := compileOne(t, recipes.Signals{PII: []recipes.PIISignal{
		{Name: "any"},
		{Name: "contact", Types: []string{"email", "PHONE_NUMBER"}},
		{Name: "strict", Threshold: 0.7},
		{Name: "cards", Types: []string{"CREDIT_CARD"}},
		{Name: "all", Types: []string{"ALL"}},
	}}, Models{})
	in := &Input{
		Text:      "and my name is Ada Lovelace",
		UserTexts: []string{"reach me at ada@example.com or 415-555-2671", "and my name is Ada Lovelace"},
	}
	got := byName(s.Evaluate(t.Context(), in))
	check := func(name string, matched bool, value string, entities []string, method string) {
		t.Helper()
		r := got[name]
		if r.Matched != matched || r.Value != value || !slices.Equal(r.Entities, entities) || r.Method != method || r.Unscanned || r.Error != "" {
			t.Errorf("%s = %+v", name, r)
		}
	}
	check("any", true, "3", []string{pii.Email, pii.Person, pii.Phone}, MethodPIIHeuristic)
	check("contact", true, "2", []string{pii.Email, pii.Phone}, MethodPIIPattern)
	check("strict", true, "2", []string{pii.Email, pii.Phone}, MethodPIIHeuristic)
	check("cards", false, "0", nil, MethodPIIPattern)
	check("all", true, "3", []string{pii.Email, pii.Person, pii.Phone}, MethodPIIHeuristic)
	if got["any"].Score != confValidated || got["cards"].Score != 0 {
		t.Errorf("scores: any %v cards %v", got["any"].Score, got["cards"].Score)
	}
	// Text alone is scanned when there are no user texts.
	r := byName(s.Evaluate(t.Context(), &Input{Text: "mail x@example.com"}))["contact"]
	if !r.Matched {
		t.Errorf("Text without UserTexts: %+v", r)
	}
}

func TestPIIOverBudget(t *testing.T) {
	sigs := []recipes.PIISignal{
		{Name: "block"},
		{Name: "allow", OnUnscanned: "allow"},
		{Name: "explicit-block", OnUnscanned: "BLOCK"},
	}
	sets, err := CompileWith(t.Context(), recipes.Signals{PII: sigs}, nil, Models{}, Options{ScanBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	s := sets[0]
	long := strings.Repeat("nothing personal here. ", 10)
	// Over budget, nothing found in what was read.
	got := byName(s.Evaluate(t.Context(), &Input{UserTexts: []string{long}}))
	for name, matched := range map[string]bool{"block": true, "allow": false, "explicit-block": true} {
		r := got[name]
		if r.Matched != matched || !r.Unscanned || r.Error != CodeInputLimit {
			t.Errorf("%s: %+v", name, r)
		}
	}
	// Personal data read before the budget ran out matches even under allow.
	got = byName(s.Evaluate(t.Context(), &Input{UserTexts: []string{"old message " + long, "mail x@example.com " + long}}))
	if r := got["allow"]; !r.Matched || !r.Unscanned || r.Value != "1" {
		t.Errorf("allow with a finding: %+v", r)
	}
	// Within budget: scanned, nothing found, no error.
	got = byName(s.Evaluate(t.Context(), &Input{UserTexts: []string{"short", "texts"}}))
	if r := got["block"]; r.Matched || r.Unscanned || r.Error != "" {
		t.Errorf("within budget: %+v", r)
	}
}

func TestPIIMissingAndDeadline(t *testing.T) {
	s := compileOne(t, recipes.Signals{PII: []recipes.PIISignal{{Name: "block"}, {Name: "allow", OnUnscanned: "allow"}}}, Models{})
	for _, rs := range [][]Result{s.Missing(CodeDeadline), func() []Result {
		ctx, cancel := contextCancelled()
		defer cancel()
		return s.Evaluate(ctx, &Input{UserTexts: []string{"mail x@example.com"}})
	}()} {
		got := byName(rs)
		if b, a := got["block"], got["allow"]; !b.Matched || a.Matched || !b.Unscanned || !a.Unscanned || b.Error != CodeDeadline {
			t.Errorf("block %+v allow %+v", b, a)
		}
	}
}

func TestPIICompileErrors(t *testing.T) {
	for name, sig := range map[string]recipes.PIISignal{
		"unknown type": {Name: "p", Types: []string{"DNA"}},
		"threshold":    {Name: "p", Threshold: 1.5},
		"on_unscanned": {Name: "p", OnUnscanned: "maybe"},
	} {
		if _, err := Compile(recipes.Signals{PII: []recipes.PIISignal{sig}}, nil, Models{}); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

var benchPIIText = "Hi support, my order #A-99812 never arrived. You can reach me at jane.doe@example.com or " +
	"(415) 555-2671 after 5pm. The card ending 4242 was charged twice on 2024-03-02. I live in Portland, " +
	"and my account id is 7731. Please also check server 10.0.0.12 logs. Thanks, Jane"

func BenchmarkPII(b *testing.B) {
	s := compileOne(b, recipes.Signals{PII: []recipes.PIISignal{{Name: "any"}, {Name: "contact", Types: []string{"EMAIL", "PHONE"}}}}, Models{})
	in := &Input{UserTexts: []string{benchPIIText}}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}

// BenchmarkPIINoEntities: a message with nothing to find, the common case.
func BenchmarkPIINoEntities(b *testing.B) {
	s := compileOne(b, recipes.Signals{PII: []recipes.PIISignal{{Name: "any"}}}, Models{})
	in := &Input{UserTexts: []string{benchText}}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}

// BenchmarkPIIBudget: a full 256 KiB scan.
func BenchmarkPIIBudget(b *testing.B) {
	s := compileOne(b, recipes.Signals{PII: []recipes.PIISignal{{Name: "any"}}}, Models{})
	in := &Input{UserTexts: []string{strings.Repeat(benchPIIText+"\n", DefaultScanBytes/len(benchPIIText))[:DefaultScanBytes]}}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}
