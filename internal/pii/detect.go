// Package pii finds personal data in text: EMAIL, PHONE, CREDIT_CARD, SSN,
// IP_ADDRESS and IBAN by candidate patterns and validators, PERSON and
// LOCATION by phrase heuristics. It is the detector behind the router's pii
// signals (engine/signal) and the plugin harness's stand-in for them
// (hostapi/plugintest), so both find the same spans.
//
// Scan and Select are the scan a pii signal runs over a request's user
// texts (Texts: newest first, within a byte budget, spans placed by message),
// shared the same way; jailbreak signals read the same budgeted texts.
//
// It is pure: no I/O, no state between calls, no knowledge of request bodies,
// signal configuration or plugins.
package pii

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

// Personal-data entity types, as the spec names them (plus IBAN).
const (
	Email      = "EMAIL"
	Phone      = "PHONE"
	CreditCard = "CREDIT_CARD"
	SSN        = "SSN"
	IPAddress  = "IP_ADDRESS"
	IBAN       = "IBAN"
	Person     = "PERSON"
	Location   = "LOCATION"
)

// Types returns every entity type the detector finds.
func Types() []string {
	return []string{Email, Phone, CreditCard, SSN, IPAddress, IBAN, Person, Location}
}

// How an entity was found (Entity.Method).
const (
	// MethodPattern: a candidate pattern confirmed by a validator (checksum,
	// numbering plan, address parser).
	MethodPattern = "pattern"
	// MethodHeuristic: a phrase cue ("my name is", "Dr.", "123 Main
	// Street") with no model behind it; lower confidence.
	MethodHeuristic = "heuristic"
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

// Detect finds personal data in text: EMAIL, PHONE, CREDIT_CARD, SSN,
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
//
// With heuristics false the PERSON/LOCATION phase (the last, which finds
// nothing else) is left out.
func Detect(text string, heuristics bool) []Entity {
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
	return IsWordRune(r)
}

// wordAt reports whether the rune at i continues a word.
func wordAt(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return IsWordRune(r)
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
		d.add(Email, start, end, confValidated, MethodPattern)
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
		if c := s[i+3]; !isDigit(c) {
			// No IBAN starts at i or i+1 (c would be its third or fourth
			// character), nor at i+2 or i+3 unless c is a letter: skip those.
			if !isLetterASCII(c) {
				i += 3
			} else {
				i++
			}
			continue
		}
		if !isLetterASCII(s[i]) || !isLetterASCII(s[i+1]) || !isDigit(s[i+2]) || wordBefore(s, i) {
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
		d.add(IPAddress, start, end, confFormatted, MethodPattern)
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
				d.add(IPAddress, start, end, confFormatted, MethodPattern)
				return true
			}
		}
		if n < 10 {
			return false
		}
	}
	if n >= 13 && n <= 19 && !plus && dots == 0 && !other && luhn(ds) && cardPrefix(ds) {
		d.add(CreditCard, start, end, confFormatted, MethodPattern)
		return true
	}
	if n == 9 && !plus && validSSN(ds) {
		dashed := len(span) == 11 && span[3] == '-' && span[6] == '-'
		cue := hasCue(d.text, start, ssnCues)
		switch {
		case dashed && cue:
			d.add(SSN, start, end, confValidated, MethodPattern)
			return true
		case dashed:
			d.add(SSN, start, end, confSSNDashed, MethodPattern)
			return true
		case cue && (len(span) == 9 || len(span) == 11 && span[3] == ' ' && span[6] == ' '):
			d.add(SSN, start, end, confSSNCue, MethodPattern)
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
		d.add(Phone, start, end, confBareDigit, MethodPattern)
		return true
	}
	d.phoneChecks++
	num, err := phonenumbers.Parse(span, "US")
	if err == nil && phonenumbers.IsValidNumber(num) {
		d.add(Phone, start, end, conf, MethodPattern)
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

// aliases maps other tools' entity names onto ours; ALL (seen in the spec's
// combined request) means every type.
var aliases = map[string]string{
	"EMAIL_ADDRESS": Email, "PHONE_NUMBER": Phone, "US_SSN": SSN, "IP": IPAddress,
	"IBAN_CODE": IBAN, "CREDIT_CARD_NUMBER": CreditCard, "NAME": Person, "ADDRESS": Location,
}

// Normalize returns the canonical name of an entity type (EMAIL for "email"
// or "EMAIL_ADDRESS"), "ALL", or an error for a type the detector does not
// know.
func Normalize(t string) (string, error) {
	u := strings.ToUpper(strings.TrimSpace(t))
	if u == "ALL" {
		return u, nil
	}
	if a, ok := aliases[u]; ok {
		return a, nil
	}
	if slices.Contains(Types(), u) {
		return u, nil
	}
	return "", fmt.Errorf("unknown personal-data type %q (known: %s)", t, strings.Join(Types(), ", "))
}
