package pii

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// ibansEveryStart is ibans as it was before it skipped the starts whose
// fourth character rules them out: every offset tried.
func (d *piiScan) ibansEveryStart() {
	s := d.text
	for i := 0; i+4 <= len(s); i++ {
		if !isLetterASCII(s[i]) || !isLetterASCII(s[i+1]) || !isDigit(s[i+2]) || !isDigit(s[i+3]) || wordBefore(s, i) {
			continue
		}
		// Collect up to 34 alphanumerics, allowing single spaces between
		// the groups of four in which IBANs are printed.
		var chars [34]byte
		var ends [34]int // byte offset after each collected char
		n, j := 0, i
		for j < len(s) && n < 34 {
			c := s[j]
			if isAlnumASCII(c) {
				chars[n] = upperASCII(c)
				j++
				ends[n] = j
				n++
				continue
			}
			if c == ' ' && j+1 < len(s) && isAlnumASCII(s[j+1]) && n%4 == 0 {
				j++
				continue
			}
			break
		}
		try := func(l int) bool {
			if l > n || l < 15 || wordAt(s, ends[l-1]) {
				return false
			}
			if !ibanChecksum(chars[:l]) {
				return false
			}
			d.add(IBAN, i, ends[l-1], confValidated, MethodPattern)
			i = ends[l-1] - 1
			return true
		}
		if l, ok := ibanLengths[string(chars[:2])]; ok {
			try(l)
			continue
		}
		for l := n; l >= 15; l-- {
			if try(l) {
				break
			}
		}
	}
}

// TestIBANsSkipMatchesEveryStart: the IBAN phase finds the same entities as
// trying every offset, on random texts of IBANs (valid, broken, spaced, run
// into words), letters, digits, spaces and punctuation.
func TestIBANsSkipMatchesEveryStart(t *testing.T) {
	pieces := []string{"DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "DE89 3704 0044 0532 0130 02", "de89370400440532013000",
		"FR14 2004 1010 0505 0001 3M02 606", "XX12", "AB1", "A", "b", "7", "42", " ", ",", ".", "IBAN: ", "x", "é", "\n", "QQ99 1234 5678 9012 3456 78"}
	rng := rand.New(rand.NewPCG(16, 15))
	foundAny := 0
	for k := 0; k < 50000; k++ {
		var b strings.Builder
		for n := rng.IntN(12); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		fast, slow := &piiScan{text: s}, &piiScan{text: s}
		fast.ibans()
		slow.ibansEveryStart()
		foundAny += len(slow.found)
		if !reflect.DeepEqual(fast.found, slow.found) {
			t.Fatalf("ibans(%q) = %v, every start %v", s, fast.found, slow.found)
		}
	}
	if foundAny < 5000 {
		t.Fatalf("only %d IBANs found in the random texts: the comparison says little", foundAny)
	}
}
