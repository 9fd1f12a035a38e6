// Package slots extracts from a question the parts that must agree before two
// questions may share an answer: numbers (1,000 = 1000), units and currencies,
// dates and times, identifiers (mixed letter-digit tokens), quoted strings,
// named entities, negation, languages (the target of to/into/in apart from
// others), code identifiers (snake_case, camelCase, dotted, backticked), and
// the content words (what is left after function and filler words).
//
// Named entities are a heuristic: a capitalised word that does not start a
// sentence. A capitalised first word is still a content word, so it must agree
// too. Everything here is lexical and bounded: it never fails, and it reads
// at most MaxText bytes.
package slots

import (
	"crypto/sha256"
	"encoding/hex"
	"iter"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxText is how much of a text is read.
const MaxText = 8 << 10

// Set is what was extracted from one text.
type Set struct {
	// Slots are "kind:value" strings, sorted and unique.
	Slots []string
	// Content are the content words, stemmed, sorted and unique.
	Content []string
}

// Signature is a hash of the slots (not the content words): requests with
// different signatures never share a semantic entry.
func (s Set) Signature() string { return signature(s.Slots) }

// WordsSignature is a hash of the content words. Agree demands them equal
// too, so a cache that keeps questions with different words apart (as the
// response cache does, beside the slots) only ever compares the embeddings
// of questions that may agree.
func (s Set) WordsSignature() string { return signature(s.Content) }

func signature(list []string) string {
	sum := sha256.Sum256([]byte(strings.Join(list, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// Agree reports whether two texts may share an answer lexically: the same
// slots and the same content words. why says what differs.
func Agree(a, b Set) (bool, string) {
	if d := diff(a.Slots, b.Slots); d != "" {
		return false, "slots differ: " + d
	}
	if d := diff(a.Content, b.Content); d != "" {
		return false, "content words differ: " + d
	}
	return true, ""
}

func diff(a, b []string) string {
	in := make(map[string]int, len(a)+len(b))
	for _, x := range a {
		in[x] |= 1
	}
	for _, x := range b {
		in[x] |= 2
	}
	var out []string
	for x, m := range in {
		if m != 3 {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	if len(out) > 4 {
		out = append(out[:4], "…")
	}
	return strings.Join(out, ", ")
}

type token struct {
	raw   string // as written (punctuation inside kept, edges trimmed)
	lower string
	start bool // first word of a sentence
	prev  string
}

// Extract reads the slots and content words of text. They are gathered in
// slices, sorted and made unique at the end: a question has a handful, and
// maps cost more than they save.
func Extract(text string) Set {
	if len(text) > MaxText {
		text = text[:MaxText]
	}
	var slots, content []string
	// Quoted and backticked spans are slots as they are written.
	text = quotes(text, &slots)
	neg := 0
	from := false // a "from" came before: "to" marks a direction from here on
	i := -1
	for t := range tokens(text) {
		i++
		w := t.lower
		lex := lexicon[w]
		if w == "from" {
			from = true
		}
		role := ""
		switch t.prev {
		case "to", "into", "towards":
			role = "to:"
		case "from":
			role = "from:"
		case "than", "versus", "vs":
			role = "than:"
		}
		if isNegation(w) {
			neg++
			continue
		}
		if n, ok := number(t.raw); ok {
			slots = append(slots, "num:"+n)
			continue
		}
		// "in" before a unit or language is a target ("30 celsius in
		// fahrenheit", "say it in German").
		target := role
		if t.prev == "in" && role == "" {
			target = "to:"
		}
		if lex.unit != "" {
			slots = append(slots, "unit:"+target+lex.unit)
			continue
		}
		if len(w) > 3 && strings.HasSuffix(w, "s") {
			if u := lexicon[w[:len(w)-1]].unit; u != "" {
				slots = append(slots, "unit:"+target+u)
				continue
			}
		}
		if lex.number != "" {
			slots = append(slots, "num:"+lex.number)
			continue
		}
		if lex.date {
			slots = append(slots, "date:"+w)
			continue
		}
		if lex.language != "" {
			slots = append(slots, "lang:"+target+lex.language)
			continue
		}
		if code(t.raw) {
			slots = append(slots, "code:"+t.raw)
			continue
		}
		if ident(w) {
			slots = append(slots, "id:"+role+w)
			continue
		}
		if lex.stop || len(w) == 0 {
			continue
		}
		if !t.start && isCapital(t.raw) && !(i > 0 && t.raw == "I") {
			slots = append(slots, "entity:"+role+w)
			continue
		}
		if role == "from:" || role == "than:" || role == "to:" && from {
			// A word after from/than, or after to once from was said,
			// keeps its direction ("from paris to london").
			content = append(content, role+stem(w))
			continue
		}
		content = append(content, stem(w))
	}
	if neg > 0 {
		slots = append(slots, "neg:"+string(rune('0'+min(neg, 9))))
	}
	return Set{Slots: sortedUnique(slots), Content: sortedUnique(content)}
}

// sortedUnique sorts s and drops repeats; never nil.
func sortedUnique(s []string) []string {
	if s == nil {
		return []string{}
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// quotes moves "…", “…”, '…' (after a space) and `…` spans into slots and
// returns the text without them (and with each byte that is not UTF-8 read
// as U+FFFD, as a conversion to runes reads it).
func quotes(text string, slots *[]string) string {
	if !strings.ContainsAny(text, "\"“`'") && utf8.ValidString(text) {
		return text // nothing to move, nothing to replace: the text as it is
	}
	var b strings.Builder
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		var end rune
		kind := "quote:"
		switch {
		case r == '"':
			end = '"'
		case r == '“':
			end = '”'
		case r == '`':
			end, kind = '`', "code:"
		case r == '\'' && (i == 0 || unicode.IsSpace(rs[i-1])):
			end = '\''
		}
		if end != 0 {
			j := i + 1
			for j < len(rs) && rs[j] != end {
				j++
			}
			if j < len(rs) && j > i+1 {
				*slots = append(*slots, kind+strings.TrimSpace(string(rs[i+1:j])))
				b.WriteRune(' ')
				i = j
				continue
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// suffixes are the symbols that end a token as a unit of their own, in the
// order they are tried.
var suffixes = [...]struct{ sym, unit string }{{"%", "percent"}, {"€", "euro"}, {"$", "dollar"}, {"£", "pound"}}

// tokens are text's words in order, each with the one before it: yielded
// as they are read, so a question's words are never gathered in a list.
func tokens(text string) iter.Seq[token] {
	return func(yield func(token) bool) { tokenize(text, yield) }
}

func tokenize(text string, yield func(token) bool) {
	start := true
	prev := ""
	for f := range strings.FieldsSeq(text) {
		// Currency symbols stand alone ("$100" is 100 dollars).
		for len(f) > 0 {
			r, size := utf8.DecodeRuneInString(f)
			if u, ok := symbols[r]; ok {
				if !yield(token{raw: u, lower: u, prev: prev}) {
					return
				}
				prev = u
				f = f[size:]
				continue
			}
			break
		}
		end := f != "" && strings.ContainsAny(f[len(f)-1:], ".!?")
		raw := strings.TrimFunc(f, func(r rune) bool {
			return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '%' || r == '€' || r == '$' || r == '£')
		})
		// A trailing percent or currency symbol is a unit of its own.
		var after string
		for _, suf := range suffixes {
			if strings.HasSuffix(raw, suf.sym) && len(raw) > len(suf.sym) {
				after = suf.unit
				raw = strings.TrimSuffix(raw, suf.sym)
			}
		}
		if raw != "" {
			lower := strings.ToLower(raw)
			// Contractions: "isn't" is "is" and a negation.
			if strings.HasSuffix(lower, "n't") {
				if !yield(token{raw: raw[:len(raw)-3], lower: lower[:len(lower)-3], start: start, prev: prev}) {
					return
				}
				raw, lower = "not", "not"
				start = false
			} else if i := strings.IndexAny(lower, "'’"); i > 0 && !code(raw) {
				raw, lower = raw[:i], lower[:i]
			}
			if !yield(token{raw: raw, lower: lower, start: start, prev: prev}) {
				return
			}
			prev = lower
			start = false
		}
		if after != "" {
			if !yield(token{raw: after, lower: after, prev: prev}) {
				return
			}
		}
		if end {
			start = true
		}
	}
}

func isNegation(w string) bool {
	switch w {
	case "not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "cannot", "nowhere", "n't":
		return true
	}
	return false
}

// number normalises a numeral: "1,000" and "1000.00" are "1000".
func number(raw string) (string, bool) {
	if raw == "" || !(raw[0] >= '0' && raw[0] <= '9') {
		return "", false
	}
	var b strings.Builder
	dot := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c >= '0' && c <= '9':
			b.WriteByte(c)
		case c == ',' && !dot:
		case c == '.' && !dot:
			dot = true
			b.WriteByte(c)
		case c == ':' || c == '/' || c == '-':
			b.WriteByte(c) // times and dates keep their shape
		default:
			return "", false
		}
	}
	n := b.String()
	if dot && !strings.ContainsAny(n, ":/-") {
		n = strings.TrimRight(strings.TrimRight(n, "0"), ".")
	}
	n = strings.TrimLeft(n, "0")
	if n == "" || n[0] == '.' {
		n = "0" + n
	}
	return n, true
}

// ident: a token mixing letters and digits (XY987, A1, ipv6, ord-5521).
func ident(w string) bool {
	l, d := false, false
	for _, r := range w {
		switch {
		case unicode.IsLetter(r):
			l = true
		case unicode.IsDigit(r):
			d = true
		}
	}
	return l && d
}

// code: snake_case, camelCase, dotted names, calls and flags.
func code(raw string) bool {
	if strings.Contains(raw, "_") || strings.Contains(raw, "()") || strings.HasPrefix(raw, "--") {
		return true
	}
	if i := strings.IndexByte(raw, '.'); i > 0 && i < len(raw)-1 && unicode.IsLetter(rune(raw[i+1])) {
		return true
	}
	prev := rune(-1)
	for _, r := range raw {
		if prev >= 0 && unicode.IsUpper(r) && unicode.IsLower(prev) {
			return true
		}
		prev = r
	}
	return false
}

func isCapital(raw string) bool {
	r, size := utf8.DecodeRuneInString(raw)
	return size > 0 && unicode.IsUpper(r)
}

// stem is a light English stemmer: plural and verb endings.
func stem(w string) string {
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		w = w[:len(w)-2]
	case len(w) > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "sses")):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	w = strings.TrimSuffix(w, "e")
	return w
}
