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
	"sort"
	"strings"
	"unicode"
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
func (s Set) Signature() string {
	sum := sha256.Sum256([]byte(strings.Join(s.Slots, "\x00")))
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

// Extract reads the slots and content words of text.
func Extract(text string) Set {
	if len(text) > MaxText {
		text = text[:MaxText]
	}
	slots := map[string]bool{}
	content := map[string]bool{}
	// Quoted and backticked spans are slots as they are written.
	text = quotes(text, slots)
	neg := 0
	from := false // a "from" came before: "to" marks a direction from here on
	toks := tokenize(text)
	for i, t := range toks {
		w := t.lower
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
			slots["num:"+n] = true
			continue
		}
		// "in" before a unit or language is a target ("30 celsius in
		// fahrenheit", "say it in German").
		target := role
		if t.prev == "in" && role == "" {
			target = "to:"
		}
		if u, ok := units[w]; ok {
			slots["unit:"+target+u] = true
			continue
		}
		if u, ok := units[strings.TrimSuffix(w, "s")]; ok && len(w) > 3 {
			slots["unit:"+target+u] = true
			continue
		}
		if n, ok := numberWords[w]; ok {
			slots["num:"+n] = true
			continue
		}
		if dateWords[w] {
			slots["date:"+w] = true
			continue
		}
		if l, ok := languages[w]; ok {
			slots["lang:"+target+l] = true
			continue
		}
		if code(t.raw) {
			slots["code:"+t.raw] = true
			continue
		}
		if ident(w) {
			slots["id:"+role+w] = true
			continue
		}
		if stop[w] || len(w) == 0 {
			continue
		}
		if !t.start && isCapital(t.raw) && !(i > 0 && t.raw == "I") {
			slots["entity:"+role+w] = true
			continue
		}
		if role == "from:" || role == "than:" || role == "to:" && from {
			// A word after from/than, or after to once from was said,
			// keeps its direction ("from paris to london").
			content[role+stem(w)] = true
			continue
		}
		content[stem(w)] = true
	}
	if neg > 0 {
		slots["neg:"+string(rune('0'+min(neg, 9)))] = true
	}
	return Set{Slots: sorted(slots), Content: sorted(content)}
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// quotes moves "…", “…”, '…' (after a space) and `…` spans into slots and
// returns the text without them.
func quotes(text string, slots map[string]bool) string {
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
				slots[kind+strings.TrimSpace(string(rs[i+1:j]))] = true
				b.WriteRune(' ')
				i = j
				continue
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

func tokenize(text string) []token {
	var out []token
	start := true
	prev := ""
	for _, f := range strings.Fields(text) {
		// Currency symbols stand alone ("$100" is 100 dollars).
		for len(f) > 0 {
			r := []rune(f)[0]
			if u, ok := symbols[r]; ok {
				out = append(out, token{raw: u, lower: u, prev: prev})
				prev = u
				f = f[len(string(r)):]
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
		for _, suf := range []string{"%", "€", "$", "£"} {
			if strings.HasSuffix(raw, suf) && len(raw) > len(suf) {
				after = symbols[[]rune(suf)[0]]
				raw = strings.TrimSuffix(raw, suf)
			}
		}
		if raw != "" {
			lower := strings.ToLower(raw)
			// Contractions: "isn't" is "is" and a negation.
			if strings.HasSuffix(lower, "n't") {
				out = append(out, token{raw: raw[:len(raw)-3], lower: lower[:len(lower)-3], start: start, prev: prev})
				raw, lower = "not", "not"
				start = false
			} else if i := strings.IndexAny(lower, "'’"); i > 0 && !code(raw) {
				raw, lower = raw[:i], lower[:i]
			}
			out = append(out, token{raw: raw, lower: lower, start: start, prev: prev})
			prev = lower
			start = false
		}
		if after != "" {
			out = append(out, token{raw: after, lower: after, prev: prev})
		}
		if end {
			start = true
		}
	}
	return out
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
	rs := []rune(raw)
	for i := 1; i < len(rs); i++ {
		if unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1]) {
			return true
		}
	}
	return false
}

func isCapital(raw string) bool {
	rs := []rune(raw)
	return len(rs) > 0 && unicode.IsUpper(rs[0])
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
