package signal

import (
	"slices"
	"strings"
	"testing"

	"github.com/junction-router/junction/recipes"
)

type wantEntity struct {
	typ, value string
}

func TestDetectPII(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []wantEntity
	}{
		// EMAIL
		{"email", "write to jane.doe+news@example.co.uk today", []wantEntity{{PIIEmail, "jane.doe+news@example.co.uk"}}},
		{"email at sentence end", "Mail me at bob@example.com.", []wantEntity{{PIIEmail, "bob@example.com"}}},
		{"not an email: no dot", "ping me @bob or root@localhost", nil},
		{"not an email: bad tld", "user@example.c0m", nil},
		{"not an email: handle", "@channel please review", nil},
		// PHONE
		{"us phone formatted", "call me at (415) 555-2671 tonight", []wantEntity{{PIIPhone, "(415) 555-2671"}}},
		{"us phone dashes", "my number is 415-555-2671", []wantEntity{{PIIPhone, "415-555-2671"}}},
		{"us phone dots", "fax 415.555.2671", []wantEntity{{PIIPhone, "415.555.2671"}}},
		{"international", "Ruf an: +49 30 901820 oder schreib", []wantEntity{{PIIPhone, "+49 30 901820"}}},
		{"uk international", "office +44 20 7946 0958.", []wantEntity{{PIIPhone, "+44 20 7946 0958"}}},
		{"bare valid digits", "ref 4155552671 attached", []wantEntity{{PIIPhone, "4155552671"}}},
		{"not a phone: invalid area code", "order 1234567890 shipped", nil},
		{"not a phone: date", "due 2024-01-15", nil},
		{"not a phone: glued to letters", "token A4155552671", nil},
		{"two phones in one run", "call 415 555 2671 or 212 555 0199", []wantEntity{{PIIPhone, "415 555 2671"}, {PIIPhone, "212 555 0199"}}},
		// CREDIT_CARD
		{"visa spaced", "card 4111 1111 1111 1111 exp 12/26", []wantEntity{{PIICreditCard, "4111 1111 1111 1111"}}},
		{"amex dashed", "amex 3782-822463-10005", []wantEntity{{PIICreditCard, "3782-822463-10005"}}},
		{"mastercard bare", "5555555555554444", []wantEntity{{PIICreditCard, "5555555555554444"}}},
		{"not a card: luhn fails", "4111 1111 1111 1112", nil},
		{"not a card: unknown issuer", "9111111111111111", nil},
		// SSN
		{"ssn dashed", "it is 123-45-6789.", []wantEntity{{PIISSN, "123-45-6789"}}},
		{"ssn bare with cue", "My SSN: 123456789", []wantEntity{{PIISSN, "123456789"}}},
		{"ssn spaced with cue", "social security number 123 45 6789", []wantEntity{{PIISSN, "123 45 6789"}}},
		{"not ssn: bare without cue", "tracking 123456789", nil},
		{"not ssn: area 000", "000-12-3456", nil},
		{"not ssn: area 666", "666-12-3456", nil},
		{"not ssn: area 9xx", "912-12-3456", nil},
		{"not ssn: group 00", "123-00-4567", nil},
		{"not ssn: serial 0000", "123-45-0000", nil},
		{"not ssn: advertised", "078-05-1120", nil},
		// IP_ADDRESS
		{"ipv4", "server at 192.168.1.20, port 22", []wantEntity{{PIIIPAddress, "192.168.1.20"}}},
		{"not ipv4: octet", "999.168.1.20", nil},
		{"not ipv4: version", "upgrade to v1.2.3.4", nil},
		{"not ipv4: five groups", "1.2.3.4.5", nil},
		{"ipv6", "connect to 2001:db8::8a2e:370:7334 now", []wantEntity{{PIIIPAddress, "2001:db8::8a2e:370:7334"}}},
		{"ipv6 loopback", "listen on ::1.", []wantEntity{{PIIIPAddress, "::1"}}},
		{"not ipv6: c++ scope", "use std::vector and a::b::c", nil},
		{"not ipv6: time", "at 12:30:45 sharp", nil},
		{"not ipv6: mac", "mac 00:1a:2b:3c:4d:5e", nil},
		// IBAN
		{"iban spaced", "IBAN: DE89 3704 0044 0532 0130 00, thanks", []wantEntity{{PIIIBAN, "DE89 3704 0044 0532 0130 00"}}},
		{"iban compact", "send to GB82WEST12345698765432", []wantEntity{{PIIIBAN, "GB82WEST12345698765432"}}},
		{"not iban: checksum", "DE89 3704 0044 0532 0130 02", nil},
		// PERSON
		{"my name is", "Hi, my name is John Smith and I need help.", []wantEntity{{PIIPerson, "John Smith"}}},
		{"honorific", "Please forward this to Dr. Jane Goodall.", []wantEntity{{PIIPerson, "Jane Goodall"}}},
		{"honorific without period", "Mrs Robinson called", []wantEntity{{PIIPerson, "Robinson"}}},
		{"german", "Hallo, mein Name ist Anna Müller.", []wantEntity{{PIIPerson, "Anna Müller"}}},
		{"sign-off", "Best regards,\nMaria O'Neil", []wantEntity{{PIIPerson, "Maria O'Neil"}}},
		{"not a name: lowercase", "my name is not important", nil},
		{"not a name: no cue", "John Smith wrote a book", nil},
		// LOCATION
		{"street", "Ship it to 1600 Pennsylvania Avenue please", []wantEntity{{PIILocation, "1600 Pennsylvania Avenue"}}},
		{"street abbreviation", "I'm at 221B Baker St. now", []wantEntity{{PIILocation, "221B Baker St."}}},
		{"german street", "Wir wohnen in der Hauptstraße 5 in Berlin", []wantEntity{{PIILocation, "Hauptstraße 5"}}},
		{"live in", "I live in New York City with my cat", []wantEntity{{PIILocation, "New York City"}}},
		{"live in the", "I live in the United Kingdom.", []wantEntity{{PIILocation, "United Kingdom"}}},
		{"address is", "my address is 12 rue de la Paix, Paris\nthanks", []wantEntity{{PIILocation, "12 rue de la Paix, Paris"}}},
		{"not a location: lowercase", "i live in fear", nil},
		{"not a street: count", "I bought 3 Apple Watches", nil},
		// Mixed
		{"several", "Email ann@example.org or call +1 212 555 0199; my SSN is 123-45-6789.", []wantEntity{
			{PIIEmail, "ann@example.org"}, {PIIPhone, "+1 212 555 0199"}, {PIISSN, "123-45-6789"}}},
		{"digits inside an email are not a phone", "4155552671@example.com", []wantEntity{{PIIEmail, "4155552671@example.com"}}},
		{"nothing", "Explain the difference between TCP and UDP in 3 sentences.", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DetectPII(tc.text)
			var gw []wantEntity
			for _, e := range got {
				gw = append(gw, wantEntity{e.Type, e.Value})
				if tc.text[e.Start:e.End] != e.Value {
					t.Errorf("span [%d,%d) is %q, value %q", e.Start, e.End, tc.text[e.Start:e.End], e.Value)
				}
				if e.Confidence <= 0 || e.Confidence > 1 {
					t.Errorf("confidence %v", e.Confidence)
				}
				wantMethod := PIIMethodPattern
				if e.Type == PIIPerson || e.Type == PIILocation {
					wantMethod = PIIMethodHeuristic
				}
				if e.Method != wantMethod {
					t.Errorf("%s method %s", e.Type, e.Method)
				}
			}
			if !slices.Equal(gw, tc.want) {
				t.Fatalf("DetectPII(%q)\n got %v\nwant %v", tc.text, gw, tc.want)
			}
		})
	}
}

func TestDetectPIIConfidences(t *testing.T) {
	conf := func(text string) float64 {
		es := DetectPII(text)
		if len(es) != 1 {
			t.Fatalf("%q: %v", text, es)
		}
		return es[0].Confidence
	}
	if formatted, bare := conf("(415) 555-2671"), conf("4155552671"); formatted <= bare {
		t.Errorf("formatted phone %v should beat bare digits %v", formatted, bare)
	}
	if cued := conf("phone 4155552671"); cued <= conf("4155552671") {
		t.Errorf("a cue word should raise a bare phone's confidence")
	}
	if cued, plain := conf("SSN 123-45-6789"), conf("123-45-6789"); cued <= plain {
		t.Errorf("cued SSN %v should beat plain %v", cued, plain)
	}
	if h := conf("my name is Ada Lovelace"); h > 0.7 {
		t.Errorf("heuristic confidence %v should be low", h)
	}
}

func TestPIISignal(t *testing.T) {
	s := compileOne(t, recipes.Signals{PII: []recipes.PIISignal{
		{Name: "any"},
		{Name: "contact", Types: []string{"email", "PHONE_NUMBER"}},
		{Name: "strict", Threshold: 0.7},
		{Name: "cards", Types: []string{"CREDIT_CARD"}},
		{Name: "all", Types: []string{"ALL"}},
	}}, Models{})
	in := &Input{
		Text:      "and my name is Ada Lovelace",
		UserTexts: []string{"reach me at ada@example.com or 415-555-2671", "and my name is Ada Lovelace"},
	}
	got := byName(s.Evaluate(t.Context(), in))
	check := func(name string, matched bool, value string, entities []string, method string) {
		t.Helper()
		r := got[name]
		if r.Matched != matched || r.Value != value || !slices.Equal(r.Entities, entities) || r.Method != method || r.Unscanned || r.Error != "" {
			t.Errorf("%s = %+v", name, r)
		}
	}
	check("any", true, "3", []string{PIIEmail, PIIPerson, PIIPhone}, MethodPIIHeuristic)
	check("contact", true, "2", []string{PIIEmail, PIIPhone}, MethodPIIPattern)
	check("strict", true, "2", []string{PIIEmail, PIIPhone}, MethodPIIHeuristic)
	check("cards", false, "0", nil, MethodPIIPattern)
	check("all", true, "3", []string{PIIEmail, PIIPerson, PIIPhone}, MethodPIIHeuristic)
	if got["any"].Score != confValidated || got["cards"].Score != 0 {
		t.Errorf("scores: any %v cards %v", got["any"].Score, got["cards"].Score)
	}
	// Text alone is scanned when there are no user texts.
	r := byName(s.Evaluate(t.Context(), &Input{Text: "mail x@example.com"}))["contact"]
	if !r.Matched {
		t.Errorf("Text without UserTexts: %+v", r)
	}
}

func TestPIIOverBudget(t *testing.T) {
	sigs := []recipes.PIISignal{
		{Name: "block"},
		{Name: "allow", OnUnscanned: "allow"},
		{Name: "explicit-block", OnUnscanned: "BLOCK"},
	}
	sets, err := CompileWith(t.Context(), recipes.Signals{PII: sigs}, nil, Models{}, Options{ScanBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	s := sets[0]
	long := strings.Repeat("nothing personal here. ", 10)
	// Over budget, nothing found in what was read.
	got := byName(s.Evaluate(t.Context(), &Input{UserTexts: []string{long}}))
	for name, matched := range map[string]bool{"block": true, "allow": false, "explicit-block": true} {
		r := got[name]
		if r.Matched != matched || !r.Unscanned || r.Error != CodeInputLimit {
			t.Errorf("%s: %+v", name, r)
		}
	}
	// Personal data read before the budget ran out matches even under allow.
	got = byName(s.Evaluate(t.Context(), &Input{UserTexts: []string{"old message " + long, "mail x@example.com " + long}}))
	if r := got["allow"]; !r.Matched || !r.Unscanned || r.Value != "1" {
		t.Errorf("allow with a finding: %+v", r)
	}
	// Within budget: scanned, nothing found, no error.
	got = byName(s.Evaluate(t.Context(), &Input{UserTexts: []string{"short", "texts"}}))
	if r := got["block"]; r.Matched || r.Unscanned || r.Error != "" {
		t.Errorf("within budget: %+v", r)
	}
}

func TestPIIMissingAndDeadline(t *testing.T) {
	s := compileOne(t, recipes.Signals{PII: []recipes.PIISignal{{Name: "block"}, {Name: "allow", OnUnscanned: "allow"}}}, Models{})
	for _, rs := range [][]Result{s.Missing(CodeDeadline), func() []Result {
		ctx, cancel := contextCancelled()
		defer cancel()
		return s.Evaluate(ctx, &Input{UserTexts: []string{"mail x@example.com"}})
	}()} {
		got := byName(rs)
		if b, a := got["block"], got["allow"]; !b.Matched || a.Matched || !b.Unscanned || !a.Unscanned || b.Error != CodeDeadline {
			t.Errorf("block %+v allow %+v", b, a)
		}
	}
}

func TestPIICompileErrors(t *testing.T) {
	for name, sig := range map[string]recipes.PIISignal{
		"unknown type": {Name: "p", Types: []string{"DNA"}},
		"threshold":    {Name: "p", Threshold: 1.5},
		"on_unscanned": {Name: "p", OnUnscanned: "maybe"},
	} {
		if _, err := Compile(recipes.Signals{PII: []recipes.PIISignal{sig}}, nil, Models{}); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

var benchPIIText = "Hi support, my order #A-99812 never arrived. You can reach me at jane.doe@example.com or " +
	"(415) 555-2671 after 5pm. The card ending 4242 was charged twice on 2024-03-02. I live in Portland, " +
	"and my account id is 7731. Please also check server 10.0.0.12 logs. Thanks, Jane"

func BenchmarkPII(b *testing.B) {
	s := compileOne(b, recipes.Signals{PII: []recipes.PIISignal{{Name: "any"}, {Name: "contact", Types: []string{"EMAIL", "PHONE"}}}}, Models{})
	in := &Input{UserTexts: []string{benchPIIText}}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}

// BenchmarkPIINoEntities: a message with nothing to find, the common case.
func BenchmarkPIINoEntities(b *testing.B) {
	s := compileOne(b, recipes.Signals{PII: []recipes.PIISignal{{Name: "any"}}}, Models{})
	in := &Input{UserTexts: []string{benchText}}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}

// BenchmarkPIIBudget: a full 256 KiB scan.
func BenchmarkPIIBudget(b *testing.B) {
	s := compileOne(b, recipes.Signals{PII: []recipes.PIISignal{{Name: "any"}}}, Models{})
	in := &Input{UserTexts: []string{strings.Repeat(benchPIIText+"\n", DefaultScanBytes/len(benchPIIText))[:DefaultScanBytes]}}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}
