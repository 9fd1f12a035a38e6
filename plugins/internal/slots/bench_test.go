package slots

import "testing"

// BenchmarkExtract is a short question's slots and words and both
// signatures: what the response cache computes on every semantic lookup.
func BenchmarkExtract(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s := Extract("What is the capital of flurbington please?")
		_, _ = s.Signature(), s.WordsSignature()
	}
}
