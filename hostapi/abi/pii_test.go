package abi_test

import (
	"reflect"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
)

func TestPIISpansRoundTrip(t *testing.T) {
	in := abi.PIISpans{Flags: abi.PIIUnscanned | abi.PIITruncated, Spans: []abi.PIISpan{
		{Message: 1, Part: abi.NoPart, Start: 4, End: 19, Type: "EMAIL", Score: 0.95},
		{Message: 3, Part: 2, Start: 0, End: 12, Type: "PHONE", Score: 0.6},
	}}
	b := in.Append(nil)
	if len(b) != in.Size() {
		t.Fatalf("Size %d, encoded %d bytes", in.Size(), len(b))
	}
	out, err := abi.DecodePIISpans(b)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, in, out)
	}
	for n := 0; n < len(b); n++ {
		if _, err := abi.DecodePIISpans(b[:n]); err == nil {
			t.Fatalf("a record cut at %d of %d bytes decoded", n, len(b))
		}
	}
	if _, err := abi.DecodePIISpans(append(b, 0)); err == nil {
		t.Fatal("trailing bytes decoded")
	}
	empty, err := abi.DecodePIISpans((&abi.PIISpans{}).Append(nil))
	if err != nil || empty.Flags != 0 || len(empty.Spans) != 0 {
		t.Fatalf("empty: %+v %v", empty, err)
	}
}

// The request record is unchanged by the spans: a module built before
// revision 1 reads the same bytes.
func TestPIINotInRequestRecord(t *testing.T) {
	r := abi.Request{Phase: abi.PhaseRequest, Mode: abi.ModeLive, Decision: "d", Messages: []abi.Message{{Role: "user", Content: "x"}}}
	without := r.Append(nil)
	r.PII = &abi.PIISpans{Spans: []abi.PIISpan{{Type: "EMAIL"}}}
	if with := r.Append(nil); string(with) != string(without) || r.Size() != len(without) {
		t.Fatal("the PII spans changed the request record")
	}
}
