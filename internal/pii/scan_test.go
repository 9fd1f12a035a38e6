package pii

import (
	"context"
	"strings"
	"testing"
)

func TestScanPlacesAndBounds(t *testing.T) {
	// User messages 1 and 3 (0 and 2 are system and assistant).
	in := &Texts{User: []string{"mail ann@example.org", "call bob@example.org"}, UserMessages: []int{1, 3}, Messages: 4}
	found, over, err := Scan(context.Background(), in, DefaultScanBytes, true)
	if err != nil || over {
		t.Fatal(err, over)
	}
	m := Select(found, nil, 0.5)
	if m.Count != 2 || len(m.Spans) != 2 || m.Spans[0].Message != 1 || m.Spans[1].Message != 3 || m.Spans[0].Start != 5 {
		t.Fatalf("%+v", m)
	}
	if m := Select(found, map[string]bool{Phone: true}, 0); m.Count != 0 || m.Spans != nil || m.Types != nil {
		t.Errorf("phone only: %+v", m)
	}
	// No user message: the last message is read.
	found, _, _ = Scan(context.Background(), &Texts{Last: "ann@example.org", Messages: 2}, DefaultScanBytes, false)
	if len(found) != 1 || found[0].Message != 1 {
		t.Errorf("fallback: %+v", found)
	}
	// Past MaxSpans the newest message's spans are kept.
	many := strings.Repeat("x@example.org ", MaxSpans+1)
	found, _, _ = Scan(context.Background(), &Texts{User: []string{"old a@example.org", many}}, DefaultScanBytes, false)
	if m := Select(found, nil, 0.5); !m.Truncated || len(m.Spans) != MaxSpans || m.Count != MaxSpans+2 || m.Spans[0].Message != 1 {
		t.Errorf("bound: truncated %v, %d spans, count %d, first %+v", m.Truncated, len(m.Spans), m.Count, m.Spans[0])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Scan(ctx, in, DefaultScanBytes, true); err == nil {
		t.Error("a cancelled scan reported no error")
	}
}
