package plugin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
)

// LocatePII places routing's spans (offsets into the flattened text) in
// string contents and text parts; a span across two parts is split.
func TestLocatePII(t *testing.T) {
	req := newReq(t, `{"model":"m","messages":[
		{"role":"system","content":"s"},
		{"role":"user","content":"mail ann@example.org"},
		{"role":"user","content":[{"type":"text","text":"ab"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"cd\u00e9f"},{"text":"gh"}]}]}`)
	flat := req.Chat.Messages[2].Content // "ab\ncdéf\ngh"
	if flat != "ab\ncdéf\ngh" {
		t.Fatalf("flattened %q", flat)
	}
	spans := []TextSpan{
		{Message: 1, Start: 5, End: 20, Type: "EMAIL", Score: 0.95},
		{Message: 2, Start: 1, End: 5, Type: "PERSON", Score: 0.6},                               // "b\ncd": parts 0 and 2
		{Message: 2, Start: strings.Index(flat, "gh"), End: len(flat), Type: "IBAN", Score: 0.9}, // part 3
	}
	got, err := LocatePII(req.Chat, spans, false, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []abi.PIISpan{
		{Message: 1, Part: abi.NoPart, Start: 5, End: 20, Type: "EMAIL", Score: 0.95},
		{Message: 2, Part: 0, Start: 1, End: 2, Type: "PERSON", Score: 0.6},
		{Message: 2, Part: 2, Start: 0, End: 2, Type: "PERSON", Score: 0.6},
		{Message: 2, Part: 3, Start: 0, End: 2, Type: "IBAN", Score: 0.9},
	}
	if got.Flags != abi.PIIUnscanned || fmt.Sprint(got.Spans) != fmt.Sprint(want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// Keys as encoding/json reads them: case-insensitive, the last repeated one.
	odd := newReq(t, `{"model":"m","messages":[{"role":"user","content":"x","Content":[{"type":"text","text":"a"},{"TEXT":"bc"}]}]}`)
	if got, err := LocatePII(odd.Chat, []TextSpan{{Message: 0, Start: 2, End: 4, Type: "IBAN"}}, false, false); err != nil ||
		fmt.Sprint(got.Spans) != fmt.Sprint([]abi.PIISpan{{Message: 0, Part: 1, Start: 0, End: 2, Type: "IBAN"}}) {
		t.Errorf("odd keys: %+v %v (flattened %q)", got, err, odd.Chat.Messages[0].Content)
	}
	for _, bad := range []TextSpan{{Message: 3, Start: 0, End: 1}, {Message: 1, Start: 5, End: 99}, {Message: 1, Start: 4, End: 4}} {
		if _, err := LocatePII(req.Chat, []TextSpan{bad}, false, false); err == nil {
			t.Errorf("span %+v was placed", bad)
		}
	}
	if p, err := LocatePII(nil, nil, true, false); err != nil || p.Flags != abi.PIITruncated || len(p.Spans) != 0 {
		t.Errorf("no spans: %+v %v", p, err)
	}
}

// The stage keeps the spans in step with message edits, whichever plugin
// makes them: an insert shifts later spans, a removal or replacement drops
// that message's spans.
func TestPIIFollowsMessageEdits(t *testing.T) {
	req := newReq(t, `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]}`)
	req.PII = &abi.PIISpans{Spans: []abi.PIISpan{{Message: 0, Type: "A"}, {Message: 1, Type: "B"}, {Message: 2, Type: "C"}}}
	runOne(t, ref(typeInsert, `{"content":"S"}`), req)
	if got := fmt.Sprint(req.PII.Spans); got != fmt.Sprint([]abi.PIISpan{{Message: 1, Type: "A"}, {Message: 2, Type: "B"}, {Message: 3, Type: "C"}}) {
		t.Fatalf("after an insert at 0: %s", got)
	}
	err := apply(req, &mutations{messages: []messageEdit{
		{index: 2, raw: []byte(`{"role":"user","content":"x"}`), msg: flat("user", "x")[0]},
		{index: 1, remove: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(req.PII.Spans); got != fmt.Sprint([]abi.PIISpan{{Message: 2, Type: "C"}}) {
		t.Fatalf("after a replace of 2 and a removal of 1: %s", got)
	}
}

// BenchmarkLocatePII: placing two spans of a string content and one of a
// text part, what the data plane pays per request with personal data and
// plugins.
func BenchmarkLocatePII(b *testing.B) {
	req := newReq(b, `{"model":"m","messages":[{"role":"system","content":"Be brief."},
		{"role":"user","content":"mail ann@example.org or call +1 415 555 0100"},
		{"role":"user","content":[{"type":"text","text":"and bob@example.com"},{"type":"image_url","image_url":{"url":"u"}}]}]}`)
	spans := []TextSpan{{Message: 1, Start: 5, End: 20, Type: "EMAIL"}, {Message: 1, Start: 29, End: 44, Type: "PHONE"}, {Message: 2, Start: 4, End: 19, Type: "EMAIL"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LocatePII(req.Chat, spans, false, false); err != nil {
			b.Fatal(err)
		}
	}
}
