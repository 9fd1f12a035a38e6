package signal

import (
	"reflect"
	"testing"
)

// Skipping the heuristics must not change what the other phases find.
func TestDetectPIIWithoutHeuristics(t *testing.T) {
	for _, text := range []string{
		"My name is John Smith and I live at 123 Main Street, call 415-555-0132.",
		"mail jane.doe@example.com or Jane Doe, 10 Downing Street; card 4111 1111 1111 1111",
		"Je m'appelle Marie Curie, IBAN DE89 3704 0044 0532 0130 00, ip 2001:db8::1",
		"ssn 123-45-6789 for Ich heiße Hans Müller in Berlin",
		"nothing personal here",
		"",
	} {
		var want []Entity
		for _, e := range DetectPII(text) {
			if e.Type != PIIPerson && e.Type != PIILocation {
				want = append(want, e)
			}
		}
		got := detectPII(text, false)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n without heuristics %+v\n with them, filtered %+v", text, got, want)
		}
	}
}
