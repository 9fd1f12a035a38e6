package signal

import (
	"net/netip"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

// Personal-data entity types, as the spec names them (plus IBAN).
const (
	PIIEmail      = "EMAIL"
	PIIPhone      = "PHONE"
	PIICreditCard = "CREDIT_CARD"
	PIISSN        = "SSN"
	PIIIPAddress  = "IP_ADDRESS"
	PIIIBAN       = "IBAN"
	PIIPerson     = "PERSON"
	PIILocation   = "LOCATION"
)

// PIITypes returns every entity type the detector finds.
func PIITypes() []string {
	return []string{PIIEmail, PIIPhone, PIICreditCard, PIISSN, PIIIPAddress, PIIIBAN, PIIPerson, PIILocation}
}

// How an entity was found (Entity.Method).
const (
	// PIIMethodPattern: a candidate pattern confirmed by a validator (checksum,
	// numbering plan, address parser).
	PIIMethodPattern = "pattern"
	// PIIMethodHeuristic: a phrase cue ("my name is", "Dr.", "123 Main
	// Street") with no model behind it; lower confidence.
	PIIMethodHeuristic = "heuristic"
)

// Confidences of the detectors. Validated patterns are near-certain; a bare
// digit run that happens to be a valid phone number, or a cue-based name or
// place, is not.
const (
	confValidated = 0.95
	confFormatted = 0.9
	confSSNDashed = 0.85
	confSSNCue    = 0.8
	confBareDigit = 0.6
	confHeuristic = 0.6
)

// Entity is one piece of personal data found in a text. Start and End are byte
// offsets into that text, End exclusive.
type Entity struct {
	Type       string  `json:"type"`
	Value      string  `json:"value"`
	Start      int     `json:"start"`
	End        int     `json:"end"`
	Confidence float64 `json:"confidence"`
	Method     string  `json:"method"`
}

// DetectPII finds personal data in text: EMAIL, PHONE, CREDIT_CARD, SSN,
// IP_ADDRESS and IBAN by candidate patterns plus validators, PERSON and
// LOCATION by conservative phrase heuristics (there is no NER model yet). It
// returns non-overlapping entities sorted by Start. It reads the whole text in
// time linear in its length; callers bound the length (the pii signal reads at
// most its scan budget).
//
// SSN rule: AAA-GG-SSSS with dashes counts on its own (area not 000, 666 or
// 900–999, group not 00, serial not 0000); nine digits without dashes, or with
// spaces, count only when "ssn" or "social security" comes shortly before,
// because bare nine-digit numbers (order numbers, zip+4, ids) are common.
func DetectPII(text string) []Entity { return detectPII(text, true) }

// detectPII is DetectPII, without the PERSON/LOCATION heuristics (the last
// phase, which finds nothing else) when heuristics is false.
func detectPII(text string, heuristics bool) []Entity {
	d := &piiScan{text: text}
	phases := []func(){d.emails, d.ibans, d.ipv6, d.numbers, d.heuristics}
	if !heuristics {
		phases = phases[:len(phases)-1]
	}
	for _, phase := range phases {
		phase()
		d.settle()
	}
	return d.found
}

type piiScan struct {
	text  string
	found []Entity
	// settled is how many of found are sorted by Start: the entities of
	// earlier phases, which later phases must not overlap. A phase scans left
	// to right and skips past what it finds, so it cannot overlap itself.
	settled     int
	phoneChecks int
}

func (d *piiScan) settle() {
	sort.Slice(d.found, func(i, j int) bool { return d.found[i].Start < d.found[j].Start })
	d.settled = len(d.found)
}

func (d *piiScan) add(typ string, start, end int, conf float64, method string) {
	d.found = append(d.found, Entity{Type: typ, Value: d.text[start:end], Start: start, End: end, Confidence: conf, Method: method})
}

// taken reports whether [start,end) overlaps an entity already found: the
// detectors run from most to least specific, and a later one must not
// re-report digits inside an email or an IBAN.
func (d *piiScan) taken(start, end int) bool {
	done := d.found[:d.settled]
	// The first settled entity ending after start is the only candidate.
	i := sort.Search(len(done), func(i int) bool { return done[i].End > start })
	return i < len(done) && done[i].Start < end
}

func isAlnumASCII(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// wordBefore reports whether the rune before i continues a word.
func wordBefore(s string, i int) bool {
	if i <= 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isWordRune(r)
}

// wordAt reports whether the rune at i continues a word.
func wordAt(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isWordRune(r)
}

// ---- EMAIL ----

func isLocalChar(c byte) bool {
	return isAlnumASCII(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func isDomainChar(c byte) bool { return isAlnumASCII(c) || c == '.' || c == '-' }

func (d *piiScan) emails() {
	s := d.text
	for off := 0; ; {
		k := strings.IndexByte(s[off:], '@')
		if k < 0 {
			return
		}
		at := off + k
		off = at + 1
		start := at
		for start > 0 && isLocalChar(s[start-1]) && at-start < 64 {
			start--
		}
		for start < at && s[start] == '.' {
			start++
		}
		end := at + 1
		for end < len(s) && isDomainChar(s[end]) && end-at <= 255 {
			end++
		}
		// A sentence may end right after the address.
		for end > at+1 && (s[end-1] == '.' || s[end-1] == '-') {
			end--
		}
		if start == at || !validEmailDomain(s[at+1:end]) || s[at-1] == '.' {
			continue
		}
		d.add(PIIEmail, start, end, confValidated, PIIMethodPattern)
		off = end
	}
}

func validEmailDomain(dom string) bool {
	labels := strings.Split(dom, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
	}
	tld := labels[len(labels)-1]
	if len(tld) < 2 {
		return false
	}
	for i := 0; i < len(tld); i++ {
		if !(tld[i] >= 'a' && tld[i] <= 'z' || tld[i] >= 'A' && tld[i] <= 'Z') {
			return false
		}
	}
	return true
}

// ---- IBAN ----

// ibanLengths is the IBAN registry's length per country. A country missing
// here is still found: any length from 15 to 34 that passes mod-97 counts.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
	"ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
	"HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
	"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22,
	"MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
	"QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25,
	"SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

func isLetterASCII(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func upperASCII(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func (d *piiScan) ibans() {
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
		country := string(chars[:2])
		try := func(l int) bool {
			if l > n || l < 15 || wordAt(s, ends[l-1]) {
				return false
			}
			if !ibanChecksum(chars[:l]) {
				return false
			}
			d.add(PIIIBAN, i, ends[l-1], confValidated, PIIMethodPattern)
			i = ends[l-1] - 1
			return true
		}
		if l, ok := ibanLengths[country]; ok {
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

// ibanChecksum is ISO 13616 mod-97: move the first four characters to the
// end, letters become 10..35, and the number mod 97 must be 1.
func ibanChecksum(iban []byte) bool {
	rem := 0
	feed := func(c byte) bool {
		switch {
		case isDigit(c):
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			v := int(c-'A') + 10
			rem = (rem*100 + v) % 97
		default:
			return false
		}
		return true
	}
	for _, c := range iban[4:] {
		if !feed(c) {
			return false
		}
	}
	for _, c := range iban[:4] {
		if !feed(c) {
			return false
		}
	}
	return rem == 1
}

// ---- IPv6 ----

func isHexOrColon(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.'
}

func (d *piiScan) ipv6() {
	s := d.text
	for off := 0; ; {
		k := strings.IndexByte(s[off:], ':')
		if k < 0 {
			return
		}
		c := off + k
		start, end := c, c
		for start > 0 && isHexOrColon(s[start-1]) {
			start--
		}
		for end < len(s) && isHexOrColon(s[end]) {
			end++
		}
		off = end
		// Sentence punctuation after the address.
		for end > start && (s[end-1] == '.' || s[end-1] == ':' && (end-start < 2 || s[end-2] != ':')) {
			end--
		}
		cand := s[start:end]
		if strings.Count(cand, ":") < 2 || wordBefore(s, start) || wordAt(s, end) || d.taken(start, end) {
			continue
		}
		if !strings.ContainsAny(cand, "0123456789abcdefABCDEF") {
			continue
		}
		a, err := netip.ParseAddr(cand)
		if err != nil || !a.Is6() {
			continue
		}
		d.add(PIIIPAddress, start, end, confFormatted, PIIMethodPattern)
	}
}

// ---- digit-based: IPv4, CREDIT_CARD, SSN, PHONE ----

func isNumSep(c byte) bool { return c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' }

func (d *piiScan) numbers() {
	s := d.text
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isDigit(c) || (c == '+' || c == '(') && i+1 < len(s) && isDigit(s[i+1])) {
			continue
		}
		if wordBefore(s, i) {
			// Digits glued to letters are an identifier ("A123", "v1.2.3.4").
			for i+1 < len(s) && (isAlnumASCII(s[i+1]) || s[i+1] == '.' || s[i+1] == '-') {
				i++
			}
			continue
		}
		start, end := i, i+1
		for j := i + 1; j < len(s); {
			if isDigit(s[j]) {
				j++
				end = j
				continue
			}
			// Up to three separator bytes may join digit groups: "(555) 123",
			// "555 - 1234".
			k := j
			for k < len(s) && k-j < 3 && isNumSep(s[k]) {
				k++
			}
			if k == j || k >= len(s) || !isDigit(s[k]) {
				break
			}
			j = k
		}
		i = end - 1
		if wordAt(s, end) || d.taken(start, end) {
			continue
		}
		d.classifyDigits(start, end)
	}
}

// classifyDigits tries the whole span, then its space-separated parts, so
// that "call 555 123 4567 or 4111 1111 1111 1111" finds both.
func (d *piiScan) classifyDigits(start, end int) {
	if d.classifySpan(start, end) {
		return
	}
	var groups [][2]int
	g := start
	for k := start; k < end; k++ {
		if d.text[k] == ' ' {
			if k > g {
				groups = append(groups, [2]int{g, k})
			}
			g = k + 1
		}
	}
	if g < end {
		groups = append(groups, [2]int{g, end})
	}
	if len(groups) < 2 || len(groups) > 10 {
		return
	}
	for a := 0; a < len(groups); {
		b := len(groups)
		if a == 0 {
			b-- // the whole span already failed
		}
		for ; b > a; b-- {
			if d.classifySpan(groups[a][0], groups[b-1][1]) {
				break
			}
		}
		if b > a {
			a = b
		} else {
			a++
		}
	}
}

func (d *piiScan) classifySpan(start, end int) bool {
	span := d.text[start:end]
	var digits [24]byte
	n, dots := 0, 0
	other := false // separators other than dots
	for i := 0; i < len(span); i++ {
		c := span[i]
		switch {
		case isDigit(c):
			if n == len(digits) {
				return false
			}
			digits[n] = c
			n++
		case c == '.':
			dots++
		case c == ' ' || c == '-':
		default:
			other = true // '+', '(' or ')'
		}
	}
	ds := digits[:n]
	plus := span[0] == '+'
	if dots > 0 {
		// IPv4 is four dotted groups; other dotted digits are decimals and
		// versions unless they have a phone's length (555.123.4567).
		if dots == 3 && !other && strings.Count(span, ".") == len(span)-n {
			if a, err := netip.ParseAddr(span); err == nil && a.Is4() {
				d.add(PIIIPAddress, start, end, confFormatted, PIIMethodPattern)
				return true
			}
		}
		if n < 10 {
			return false
		}
	}
	if n >= 13 && n <= 19 && !plus && dots == 0 && !other && luhn(ds) && cardPrefix(ds) {
		d.add(PIICreditCard, start, end, confFormatted, PIIMethodPattern)
		return true
	}
	if n == 9 && !plus && validSSN(ds) {
		dashed := len(span) == 11 && span[3] == '-' && span[6] == '-'
		cue := hasCue(d.text, start, ssnCues)
		switch {
		case dashed && cue:
			d.add(PIISSN, start, end, confValidated, PIIMethodPattern)
			return true
		case dashed:
			d.add(PIISSN, start, end, confSSNDashed, PIIMethodPattern)
			return true
		case cue && (len(span) == 9 || len(span) == 11 && span[3] == ' ' && span[6] == ' '):
			d.add(PIISSN, start, end, confSSNCue, PIIMethodPattern)
			return true
		}
	}
	if !phoneShape(ds, plus) {
		return false
	}
	conf := confBareDigit
	if plus || len(span) > n || hasCue(d.text, start, phoneCues) {
		conf = confFormatted
	}
	if d.phoneChecks >= maxPhoneChecks {
		// Out of validation budget: the shape alone decides, at the
		// confidence of a bare digit run.
		d.add(PIIPhone, start, end, confBareDigit, PIIMethodPattern)
		return true
	}
	d.phoneChecks++
	num, err := phonenumbers.Parse(span, "US")
	if err == nil && phonenumbers.IsValidNumber(num) {
		d.add(PIIPhone, start, end, conf, PIIMethodPattern)
		return true
	}
	return false
}

// maxPhoneChecks bounds the libphonenumber validations of one text. Each costs
// tens of microseconds (the library runs regular expressions); a text made of
// thousands of numbers would otherwise cost a second of CPU.
const maxPhoneChecks = 32

// phoneShape is a cheap pre-check before libphonenumber: without '+' the
// number is parsed as North American (NXX NXX XXXX, optionally after 1), the
// only numbers that region "US" can validate; with '+' it is E.164 length.
func phoneShape(ds []byte, plus bool) bool {
	if plus {
		return len(ds) >= 8 && len(ds) <= 15
	}
	if len(ds) == 11 && ds[0] == '1' {
		ds = ds[1:]
	}
	return len(ds) == 10 && ds[0] >= '2' && ds[3] >= '2'
}

func luhn(ds []byte) bool {
	sum := 0
	double := false
	for i := len(ds) - 1; i >= 0; i-- {
		v := int(ds[i] - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}

// cardPrefix accepts the issuer ranges of the major networks (Visa 4;
// Mastercard 51–55 and 2221–2720; Amex 34, 37; Diners 30, 36, 38, 39; JCB 35;
// Discover, UnionPay and Maestro 5x/6x). Luhn alone passes one random number
// in ten.
func cardPrefix(ds []byte) bool {
	switch ds[0] {
	case '4', '5', '6':
		return true
	case '3':
		return strings.IndexByte("045789", ds[1]) >= 0 || ds[1] == '6'
	case '2':
		p := int(ds[0]-'0')*1000 + int(ds[1]-'0')*100 + int(ds[2]-'0')*10 + int(ds[3]-'0')
		return p >= 2221 && p <= 2720
	}
	return false
}

func validSSN(ds []byte) bool {
	area := int(ds[0]-'0')*100 + int(ds[1]-'0')*10 + int(ds[2]-'0')
	group := int(ds[3]-'0')*10 + int(ds[4]-'0')
	serial := string(ds[5:])
	if area == 0 || area == 666 || area >= 900 || group == 0 || serial == "0000" {
		return false
	}
	// Numbers published in advertising and never issued to a person.
	s := string(ds)
	return s != "078051120" && s != "219099999"
}

var (
	ssnCues   = []string{"ssn", "social security", "soc sec", "ss#", "ss #", "ss no"}
	phoneCues = []string{"phone", "call", "tel", "mobile", "cell", "fax", "whatsapp", "sms", "text me", "contact", "number", "reach me", "telefon", "handy", "nummer"}
)

// cueWindow is how far before a number a cue word may be.
const cueWindow = 48

func hasCue(s string, at int, cues []string) bool {
	from := at - cueWindow
	if from < 0 {
		from = 0
	}
	w := s[from:at]
	for _, c := range cues {
		if containsFoldASCII(w, c) {
			return true
		}
	}
	return false
}

// containsFoldASCII is strings.Contains ignoring ASCII case, without
// allocating a lower-cased copy.
func containsFoldASCII(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}

// ---- PERSON and LOCATION heuristics ----

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
		{words: []string{"my", "name", "is"}, typ: PIIPerson},
		{words: []string{"my", "name's"}, typ: PIIPerson},
		{words: []string{"i", "am", "called"}, typ: PIIPerson},
		{words: []string{"i'm", "called"}, typ: PIIPerson},
		{words: []string{"call", "me"}, typ: PIIPerson},
		{words: []string{"mein", "name", "ist"}, typ: PIIPerson},
		{words: []string{"ich", "heiße"}, typ: PIIPerson},
		{words: []string{"ich", "heisse"}, typ: PIIPerson},
		{words: []string{"je", "m'appelle"}, typ: PIIPerson},
		{words: []string{"me", "llamo"}, typ: PIIPerson},
		{words: []string{"mi", "nombre", "es"}, typ: PIIPerson},
		{words: []string{"i", "live", "in"}, typ: PIILocation},
		{words: []string{"i", "live", "at"}, typ: PIILocation},
		{words: []string{"i'm", "from"}, typ: PIILocation},
		{words: []string{"i", "am", "from"}, typ: PIILocation},
		{words: []string{"i", "moved", "to"}, typ: PIILocation},
		{words: []string{"i'm", "based", "in"}, typ: PIILocation},
		{words: []string{"i", "am", "based", "in"}, typ: PIILocation},
		{words: []string{"i'm", "located", "in"}, typ: PIILocation},
		{words: []string{"ich", "wohne", "in"}, typ: PIILocation},
		{words: []string{"j'habite", "à"}, typ: PIILocation},
		{words: []string{"vivo", "en"}, typ: PIILocation},
		{words: []string{"my", "address", "is"}, typ: PIILocation, address: true},
		{words: []string{"my", "home", "address", "is"}, typ: PIILocation, address: true},
		{words: []string{"meine", "adresse", "ist"}, typ: PIILocation, address: true},
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
			d.add(typ, start, end, confHeuristic, PIIMethodHeuristic)
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
				emit(PIILocation, i, end)
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
					emit(PIILocation, i, i+2)
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
				emit(PIIPerson, j, j+n)
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
					emit(PIIPerson, j, j+n)
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
				if c.typ == PIILocation && j < len(toks) && strings.EqualFold(word(j), "the") {
					j++
				}
				max := 3
				if c.typ == PIILocation {
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
