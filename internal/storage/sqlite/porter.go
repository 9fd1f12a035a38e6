package sqlite

import "strings"

// porterStem returns the term FTS5's porter tokenizer indexes for a lower
// case ASCII word (Porter, 1980, "An algorithm for suffix stripping"), so
// that a query word's document count can be read from the full-text
// index's vocabulary. Words under 3 or over 64 bytes pass unchanged, as in
// FTS5. A stem that differs from FTS5's only makes the count lookup miss,
// and a word whose count is unknown is kept in the query: the stem decides
// speed, never which chunks match.
func porterStem(w string) string {
	if len(w) < 3 || len(w) > 64 {
		return w
	}
	b := []byte(w)
	b = porterStep1a(b)
	b = porterStep1b(b)
	b = porterStep1c(b)
	b = porterSuffixes(b, porterStep2, 0)
	b = porterSuffixes(b, porterStep3, 0)
	b = porterStep4(b)
	b = porterStep5(b)
	return string(b)
}

// consonant reports whether b[i] is a consonant: not a, e, i, o, u, and
// not a y after a consonant.
func consonant(b []byte, i int) bool {
	switch b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !consonant(b, i-1)
	}
	return true
}

// measure is m of [C](VC)^m[V] for the stem b.
func measure(b []byte) int {
	m, i := 0, 0
	for i < len(b) && consonant(b, i) {
		i++
	}
	for i < len(b) {
		for i < len(b) && !consonant(b, i) {
			i++
		}
		if i == len(b) {
			break
		}
		m++
		for i < len(b) && consonant(b, i) {
			i++
		}
	}
	return m
}

func hasVowel(b []byte) bool {
	for i := range b {
		if !consonant(b, i) {
			return true
		}
	}
	return false
}

// doubleC: the stem ends with a double consonant.
func doubleC(b []byte) bool {
	n := len(b)
	return n >= 2 && b[n-1] == b[n-2] && consonant(b, n-1)
}

// cvc: the stem ends consonant-vowel-consonant, the last not w, x or y.
func cvc(b []byte) bool {
	n := len(b)
	if n < 3 || !consonant(b, n-1) || consonant(b, n-2) || !consonant(b, n-3) {
		return false
	}
	c := b[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}

func porterStep1a(b []byte) []byte {
	s := string(b)
	switch {
	case strings.HasSuffix(s, "sses"):
		return b[:len(b)-2]
	case strings.HasSuffix(s, "ies"):
		return b[:len(b)-2]
	case strings.HasSuffix(s, "ss"):
		return b
	case strings.HasSuffix(s, "s"):
		return b[:len(b)-1]
	}
	return b
}

func porterStep1b(b []byte) []byte {
	s := string(b)
	if strings.HasSuffix(s, "eed") {
		if measure(b[:len(b)-3]) > 0 {
			return b[:len(b)-1]
		}
		return b
	}
	var stem []byte
	switch {
	case strings.HasSuffix(s, "ed") && hasVowel(b[:len(b)-2]):
		stem = b[:len(b)-2]
	case strings.HasSuffix(s, "ing") && hasVowel(b[:len(b)-3]):
		stem = b[:len(b)-3]
	default:
		return b
	}
	t := string(stem)
	switch {
	case strings.HasSuffix(t, "at"), strings.HasSuffix(t, "bl"), strings.HasSuffix(t, "iz"):
		return append(stem, 'e')
	case doubleC(stem):
		if c := stem[len(stem)-1]; c != 'l' && c != 's' && c != 'z' {
			return stem[:len(stem)-1]
		}
		return stem
	case measure(stem) == 1 && cvc(stem):
		return append(stem, 'e')
	}
	return stem
}

func porterStep1c(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == 'y' && hasVowel(b[:n-1]) {
		b[n-1] = 'i'
	}
	return b
}

// porterStep2 and porterStep3 are suffix → replacement, tried in order;
// the first suffix the word ends with is replaced when the stem before it
// has m > 0.
var porterStep2 = [][2]string{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"izer", "ize"},
	{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"},
	{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"},
	{"fulness", "ful"}, {"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
	{"logi", "log"},
}

var porterStep3 = [][2]string{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"}, {"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

func porterSuffixes(b []byte, rules [][2]string, minM int) []byte {
	s := string(b)
	for _, r := range rules {
		if strings.HasSuffix(s, r[0]) {
			stem := b[:len(b)-len(r[0])]
			if measure(stem) > minM {
				return append(stem, r[1]...)
			}
			return b
		}
	}
	return b
}

var porterStep4Suffixes = []string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
	"ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

func porterStep4(b []byte) []byte {
	s := string(b)
	best := ""
	for _, suf := range porterStep4Suffixes {
		if strings.HasSuffix(s, suf) && len(suf) > len(best) {
			best = suf
		}
	}
	if best == "" {
		return b
	}
	stem := b[:len(b)-len(best)]
	if measure(stem) <= 1 {
		return b
	}
	if best == "ion" {
		if n := len(stem); n == 0 || (stem[n-1] != 's' && stem[n-1] != 't') {
			return b
		}
	}
	return stem
}

func porterStep5(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == 'e' {
		stem := b[:n-1]
		if m := measure(stem); m > 1 || (m == 1 && !cvc(stem)) {
			b = stem
		}
	}
	if n := len(b); n > 1 && b[n-1] == 'l' && doubleC(b) && measure(b) > 1 {
		b = b[:n-1]
	}
	return b
}
