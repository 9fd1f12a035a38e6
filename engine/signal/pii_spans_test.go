package signal

import (
	"fmt"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/pii"
	"github.com/junction-router/junction/recipes"
)

// Each pii signal reports the spans it counted, placed in the request's
// messages through Input.UserMessages, sorted by message and start.
func TestPIISpans(t *testing.T) {
	s := compileOne(t, recipes.Signals{PII: []recipes.PIISignal{
		{Name: "contact", Types: []string{"EMAIL", "PHONE"}, Threshold: 0.5},
		{Name: "mail", Types: []string{"EMAIL"}, Threshold: 0.5},
		{Name: "strict", Threshold: 0.99},
	}}, Models{})
	first := "write to ann@example.org"
	second := "Grüße — call (415) 555-2671 or bob@example.com"
	in := &Input{UserTexts: []string{first, "   ", second}, UserMessages: []int{1, 3, 4}}
	got := byName(s.Evaluate(t.Context(), in))
	want := []PIISpan{
		{Message: 1, Start: 9, End: 24, Type: pii.Email, Score: confValidated},
		{Message: 4, Start: strings.Index(second, "("), End: strings.Index(second, " or"), Type: pii.Phone, Score: got["contact"].Spans[1].Score},
		{Message: 4, Start: strings.Index(second, "bob"), End: len(second), Type: pii.Email, Score: confValidated},
	}
	if fmt.Sprint(got["contact"].Spans) != fmt.Sprint(want) || got["contact"].SpansTruncated {
		t.Fatalf("contact spans %+v, want %+v", got["contact"].Spans, want)
	}
	if m := got["mail"].Spans; len(m) != 2 || m[0] != want[0] || m[1] != want[2] {
		t.Errorf("mail spans %+v", m)
	}
	if r := got["strict"]; r.Matched || len(r.Spans) != 0 {
		t.Errorf("a span below the threshold was counted: %+v", r)
	}
	for _, sp := range got["contact"].Spans {
		text := map[int]string{1: first, 4: second}[sp.Message]
		if v := text[sp.Start:sp.End]; !strings.Contains(v, "@") && !strings.Contains(v, "555") {
			t.Errorf("span %+v covers %q", sp, v)
		}
	}

	// Without UserMessages, a user text's index stands for its message; text
	// read because there is no user message is the last message.
	got = byName(s.Evaluate(t.Context(), &Input{UserTexts: []string{"x", first}}))
	if sp := got["mail"].Spans; len(sp) != 1 || sp[0].Message != 1 {
		t.Errorf("UserTexts index: %+v", sp)
	}
	got = byName(s.Evaluate(t.Context(), &Input{Text: first, AllTexts: []string{"sys", "a", first}}))
	if sp := got["mail"].Spans; len(sp) != 1 || sp[0].Message != 2 || sp[0].Start != 9 {
		t.Errorf("Text fallback: %+v", sp)
	}
}

// Past MaxPIISpans a result keeps the newest messages' spans and says so;
// the count still covers them all.
func TestPIISpansBound(t *testing.T) {
	s := compileOne(t, recipes.Signals{PII: []recipes.PIISignal{{Name: "mail", Types: []string{"EMAIL"}}}}, Models{})
	var b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "u%d@example.org ", i)
	}
	in := &Input{UserTexts: []string{b.String(), b.String()}}
	r := s.Evaluate(t.Context(), in)[0]
	if r.Value != "400" || len(r.Spans) != MaxPIISpans || !r.SpansTruncated {
		t.Fatalf("count %s, %d spans, truncated %v", r.Value, len(r.Spans), r.SpansTruncated)
	}
	if r.Spans[0].Message != 0 || r.Spans[len(r.Spans)-1].Message != 1 || r.Spans[MaxPIISpans-200].Message != 1 || r.Spans[MaxPIISpans-201].Message != 0 {
		t.Errorf("kept: first %+v, last %+v: want the 200 of the newest message and 56 of the older", r.Spans[0], r.Spans[len(r.Spans)-1])
	}
}

func TestScanPII(t *testing.T) {
	r, err := ScanPII(t.Context(), recipes.PIISignal{Name: "x", Threshold: 0.5}, &Input{UserTexts: []string{"mail ann@example.org"}})
	if err != nil || !r.Matched || len(r.Spans) != 1 || r.Spans[0].Start != 5 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := ScanPII(t.Context(), recipes.PIISignal{Name: "x", Types: []string{"DNA"}}, &Input{}); err == nil {
		t.Fatal("an unknown type was accepted")
	}
}

// confValidated is internal/pii's confidence for a validated pattern.
const confValidated = 0.95
