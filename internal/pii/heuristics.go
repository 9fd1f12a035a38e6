package pii

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The PERSON and LOCATION heuristics: a small tokenizer and the phrase cues
// ("my name is", "Dr.", "123 Main Street") that mark a name or a place.

type ptok struct {
	start, end int32
	kind       uint8 // tokWord, tokNum, tokPunct
	upper      bool  // a word starting with an upper-case letter
	newline    bool  // a line break precedes it
}

const (
	tokWord = iota
	tokNum
	tokPunct
)

func isPIILetter(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.IsMark(r)
}

func tokenizePII(s string) []ptok {
	toks := make([]ptok, 0, len(s)/5+1)
	nl := false
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case r == '\n':
			nl = true
			i += size
		case r == ' ' || r == '\t' || r == '\r' || r >= utf8.RuneSelf && unicode.IsSpace(r):
			i += size
		case isPIILetter(r):
			start := i
			up := r >= 'A' && r <= 'Z' || r >= utf8.RuneSelf && unicode.IsUpper(r)
			i += size
			for i < len(s) {
				r2, s2 := rune(s[i]), 1
				if r2 >= utf8.RuneSelf {
					r2, s2 = utf8.DecodeRuneInString(s[i:])
				}
				if isPIILetter(r2) {
					i += s2
					continue
				}
				// Internal apostrophes and hyphens: O'Brien, Jean-Luc, I'm.
				if (r2 == '\'' || r2 == '’' || r2 == '-') && i+s2 < len(s) {
					r3, _ := utf8.DecodeRuneInString(s[i+s2:])
					if isPIILetter(r3) {
						i += s2
						continue
					}
				}
				break
			}
			toks = append(toks, ptok{start: int32(start), end: int32(i), kind: tokWord, upper: up, newline: nl})
			nl = false
		case r >= '0' && r <= '9':
			start := i
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			// House numbers like 221B.
			if i < len(s) && isLetterASCII(s[i]) && (i+1 >= len(s) || !isAlnumASCII(s[i+1])) {
				i++
			}
			toks = append(toks, ptok{start: int32(start), end: int32(i), kind: tokNum, newline: nl})
			nl = false
		default:
			toks = append(toks, ptok{start: int32(i), end: int32(i + size), kind: tokPunct, newline: nl})
			nl = false
			i += size
		}
	}
	return toks
}

// A cue is a lower-case phrase after which a name or a place follows.
type cue struct {
	words []string
	typ   string
	// address: the rest of the line or sentence is the place, not just
	// capitalized words.
	address bool
}

// trigger is what a lower-cased word may start.
type trigger struct {
	cues      []cue
	honorific bool // when capitalized: Mr, Dr, Frau, …
	signOff   bool // regards, sincerely, …: a name may follow on the next line
}

// triggers holds every word that can start a heuristic, so that an ordinary
// word costs one map lookup (and most not even that: see triggerFirst).
var triggers = buildTriggers()

// triggerFirst marks the bytes a trigger word can start with, upper or lower
// case; words starting with anything else skip the map.
var triggerFirst = func() (t [256]bool) {
	for w := range triggers {
		t[w[0]] = true
		if w[0] >= 'a' && w[0] <= 'z' {
			t[w[0]-'a'+'A'] = true
		}
	}
	return t
}()

func buildTriggers() map[string]trigger {
	cues := []cue{
		{words: []string{"my", "name", "is"}, typ: Person},
		{words: []string{"my", "name's"}, typ: Person},
		{words: []string{"i", "am", "called"}, typ: Person},
		{words: []string{"i'm", "called"}, typ: Person},
		{words: []string{"call", "me"}, typ: Person},
		{words: []string{"mein", "name", "ist"}, typ: Person},
		{words: []string{"ich", "heiße"}, typ: Person},
		{words: []string{"ich", "heisse"}, typ: Person},
		{words: []string{"je", "m'appelle"}, typ: Person},
		{words: []string{"me", "llamo"}, typ: Person},
		{words: []string{"mi", "nombre", "es"}, typ: Person},
		{words: []string{"i", "live", "in"}, typ: Location},
		{words: []string{"i", "live", "at"}, typ: Location},
		{words: []string{"i'm", "from"}, typ: Location},
		{words: []string{"i", "am", "from"}, typ: Location},
		{words: []string{"i", "moved", "to"}, typ: Location},
		{words: []string{"i'm", "based", "in"}, typ: Location},
		{words: []string{"i", "am", "based", "in"}, typ: Location},
		{words: []string{"i'm", "located", "in"}, typ: Location},
		{words: []string{"ich", "wohne", "in"}, typ: Location},
		{words: []string{"j'habite", "à"}, typ: Location},
		{words: []string{"vivo", "en"}, typ: Location},
		{words: []string{"my", "address", "is"}, typ: Location, address: true},
		{words: []string{"my", "home", "address", "is"}, typ: Location, address: true},
		{words: []string{"meine", "adresse", "ist"}, typ: Location, address: true},
	}
	m := map[string]trigger{}
	for _, c := range cues {
		t := m[c.words[0]]
		t.cues = append(t.cues, c)
		m[c.words[0]] = t
	}
	for _, w := range []string{"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "madam", "herr", "frau", "mme", "mlle", "sr", "sra"} {
		t := m[w]
		t.honorific = true
		m[w] = t
	}
	for _, w := range []string{"regards", "sincerely", "grüßen", "grüße", "cheers"} {
		t := m[w]
		t.signOff = true
		m[w] = t
	}
	return m
}

var (
	// streetSuffixes end an English street address after its number and name.
	streetSuffixes = setOfWords("street", "st", "avenue", "ave", "road", "rd", "boulevard", "blvd", "lane", "ln",
		"drive", "dr", "court", "ct", "way", "place", "pl", "terrace", "circle", "parkway", "pkwy", "highway",
		"hwy", "square", "sq", "trail")
	// germanStreetEndings end a German street name that a number follows.
	germanStreetEndings = []string{"straße", "strasse", "str", "weg", "gasse", "allee", "platz", "ring", "damm"}
	// notNames are capitalized words that follow a cue without being a name.
	notNames = setOfWords("I", "The", "A", "An", "And", "Or", "But", "Not", "My", "It", "This", "That", "Here", "There")
)

func setOfWords(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// foldKey lower-cases ASCII letters of a short word into buf, for map
// lookups that do not allocate.
func foldKey(w string, buf *[24]byte) []byte {
	if len(w) > len(buf) {
		return nil
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(w)]
}

func (d *piiScan) heuristics() {
	toks := tokenizePII(d.text)
	s := d.text
	word := func(i int) string { return s[toks[i].start:toks[i].end] }
	var buf [24]byte
	isSuffix := func(i int) bool {
		return toks[i].kind == tokWord && streetSuffixes[string(foldKey(word(i), &buf))]
	}
	// names counts the capitalized name words starting at i, up to max.
	names := func(i, max int) int {
		n := 0
		for i+n < len(toks) && n < max {
			t := toks[i+n]
			if t.kind != tokWord || !t.upper || t.end-t.start < 2 || notNames[word(i+n)] || (n > 0 && t.newline) {
				break
			}
			n++
		}
		return n
	}
	emit := func(typ string, from, to int) {
		start, end := int(toks[from].start), int(toks[to-1].end)
		if !d.taken(start, end) {
			d.add(typ, start, end, confHeuristic, MethodHeuristic)
		}
	}
	punct := func(i int, p string) bool { return i < len(toks) && toks[i].kind == tokPunct && word(i) == p }
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tokNum {
			// Street address: a house number, capitalized name words, a
			// suffix ("123 Main Street", "1600 Pennsylvania Ave.").
			if t.end-t.start > 7 {
				continue
			}
			n := names(i+1, 5)
			end := -1
			for k := 2; k <= n && end < 0; k++ {
				if isSuffix(i + k) {
					end = i + k + 1
				}
			}
			if end < 0 && n >= 1 && i+n+1 < len(toks) && isSuffix(i+n+1) {
				end = i + n + 2
			}
			if end > 0 {
				if punct(end, ".") && len(word(end-1)) <= 4 {
					end++
				}
				emit(Location, i, end)
				i = end - 1
			}
			continue
		}
		if t.kind != tokWord {
			continue
		}
		w := word(i)
		if t.upper && i+1 < len(toks) && toks[i+1].kind == tokNum && len(w) > 5 {
			// German street: Hauptstraße 5.
			lw := strings.ToLower(w)
			for _, e := range germanStreetEndings {
				if strings.HasSuffix(lw, e) && len(lw) > len(e)+2 {
					emit(Location, i, i+2)
					break
				}
			}
		}
		if !triggerFirst[w[0]] {
			continue
		}
		tr, ok := triggers[string(foldKey(w, &buf))]
		if !ok {
			continue
		}
		switch {
		case tr.honorific && t.upper:
			j := i + 1
			if punct(j, ".") {
				j++
			}
			if n := names(j, 3); n > 0 {
				emit(Person, j, j+n)
				i = j + n - 1
			}
			continue
		case tr.signOff:
			j := i + 1
			if punct(j, ",") {
				j++
			}
			if j < len(toks) && toks[j].newline {
				if n := names(j, 3); n > 0 {
					emit(Person, j, j+n)
					i = j + n - 1
				}
			}
			continue
		}
		for _, c := range tr.cues {
			if !matchCue(s, toks, i, c.words) {
				continue
			}
			j := i + len(c.words)
			switch {
			case c.address:
				if punct(j, ":") {
					j++
				}
				// The address runs to the end of the line or sentence.
				k := j
				for k < len(toks) && !(k > j && toks[k].newline) && k-j < 16 {
					if toks[k].kind == tokPunct && strings.ContainsAny(word(k), ".;!?") {
						break
					}
					k++
				}
				if k > j {
					emit(c.typ, j, k)
					i = k - 1
				}
			default:
				if c.typ == Location && j < len(toks) && strings.EqualFold(word(j), "the") {
					j++
				}
				max := 3
				if c.typ == Location {
					max = 4 // "New York City"
				}
				if n := names(j, max); n > 0 {
					emit(c.typ, j, j+n)
					i = j + n - 1
				}
			}
			break
		}
	}
}

func matchCue(s string, toks []ptok, i int, words []string) bool {
	if i+len(words) > len(toks) {
		return false
	}
	for k, w := range words {
		t := toks[i+k]
		if t.kind != tokWord || !strings.EqualFold(s[t.start:t.end], w) {
			return false
		}
	}
	return true
}

// IsWordRune reports whether r continues a word for boundary purposes:
// letters, digits, combining marks and '_' — except in scripts written
// without spaces between words (Han, kana, Thai, Lao, Khmer, Myanmar), where
// every character boundary may be a word boundary and a keyword must match
// inside a run of text. The keyword signal (engine/signal) uses the same
// rule.
func IsWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
	}
	if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) {
		return false
	}
	return !unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}
