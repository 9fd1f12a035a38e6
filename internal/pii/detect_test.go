package pii

import (
	"reflect"
	"slices"
	"testing"
)

type wantEntity struct {
	typ, value string
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []wantEntity
	}{
		// EMAIL
		{"email", "write to jane.doe+news@example.co.uk today", []wantEntity{{Email, "jane.doe+news@example.co.uk"}}},
		{"email at sentence end", "Mail me at bob@example.com.", []wantEntity{{Email, "bob@example.com"}}},
		{"not an email: no dot", "ping me @bob or root@localhost", nil},
		{"not an email: bad tld", "user@example.c0m", nil},
		{"not an email: handle", "@channel please review", nil},
		// PHONE
		{"us phone formatted", "call me at (415) 555-2671 tonight", []wantEntity{{Phone, "(415) 555-2671"}}},
		{"us phone dashes", "my number is 415-555-2671", []wantEntity{{Phone, "415-555-2671"}}},
		{"us phone dots", "fax 415.555.2671", []wantEntity{{Phone, "415.555.2671"}}},
		{"international", "Ruf an: +49 30 901820 oder schreib", []wantEntity{{Phone, "+49 30 901820"}}},
		{"uk international", "office +44 20 7946 0958.", []wantEntity{{Phone, "+44 20 7946 0958"}}},
		{"bare valid digits", "ref 4155552671 attached", []wantEntity{{Phone, "4155552671"}}},
		{"not a phone: invalid area code", "order 1234567890 shipped", nil},
		{"not a phone: date", "due 2024-01-15", nil},
		{"not a phone: glued to letters", "token A4155552671", nil},
		{"two phones in one run", "call 415 555 2671 or 212 555 0199", []wantEntity{{Phone, "415 555 2671"}, {Phone, "212 555 0199"}}},
		// CREDIT_CARD
		{"visa spaced", "card 4111 1111 1111 1111 exp 12/26", []wantEntity{{CreditCard, "4111 1111 1111 1111"}}},
		{"amex dashed", "amex 3782-822463-10005", []wantEntity{{CreditCard, "3782-822463-10005"}}},
		{"mastercard bare", "5555555555554444", []wantEntity{{CreditCard, "5555555555554444"}}},
		{"not a card: luhn fails", "4111 1111 1111 1112", nil},
		{"not a card: unknown issuer", "9111111111111111", nil},
		// SSN
		{"ssn dashed", "it is 123-45-6789.", []wantEntity{{SSN, "123-45-6789"}}},
		{"ssn bare with cue", "My SSN: 123456789", []wantEntity{{SSN, "123456789"}}},
		{"ssn spaced with cue", "social security number 123 45 6789", []wantEntity{{SSN, "123 45 6789"}}},
		{"not ssn: bare without cue", "tracking 123456789", nil},
		{"not ssn: area 000", "000-12-3456", nil},
		{"not ssn: area 666", "666-12-3456", nil},
		{"not ssn: area 9xx", "912-12-3456", nil},
		{"not ssn: group 00", "123-00-4567", nil},
		{"not ssn: serial 0000", "123-45-0000", nil},
		{"not ssn: advertised", "078-05-1120", nil},
		// IP_ADDRESS
		{"ipv4", "server at 192.168.1.20, port 22", []wantEntity{{IPAddress, "192.168.1.20"}}},
		{"not ipv4: octet", "999.168.1.20", nil},
		{"not ipv4: version", "upgrade to v1.2.3.4", nil},
		{"not ipv4: five groups", "1.2.3.4.5", nil},
		{"ipv6", "connect to 2001:db8::8a2e:370:7334 now", []wantEntity{{IPAddress, "2001:db8::8a2e:370:7334"}}},
		{"ipv6 loopback", "listen on ::1.", []wantEntity{{IPAddress, "::1"}}},
		{"not ipv6: c++ scope", "use std::vector and a::b::c", nil},
		{"not ipv6: time", "at 12:30:45 sharp", nil},
		{"not ipv6: mac", "mac 00:1a:2b:3c:4d:5e", nil},
		// IBAN
		{"iban spaced", "IBAN: DE89 3704 0044 0532 0130 00, thanks", []wantEntity{{IBAN, "DE89 3704 0044 0532 0130 00"}}},
		{"iban compact", "send to GB82WEST12345698765432", []wantEntity{{IBAN, "GB82WEST12345698765432"}}},
		{"not iban: checksum", "DE89 3704 0044 0532 0130 02", nil},
		// PERSON
		{"my name is", "Hi, my name is John Smith and I need help.", []wantEntity{{Person, "John Smith"}}},
		{"honorific", "Please forward this to Dr. Jane Goodall.", []wantEntity{{Person, "Jane Goodall"}}},
		{"honorific without period", "Mrs Robinson called", []wantEntity{{Person, "Robinson"}}},
		{"german", "Hallo, mein Name ist Anna Müller.", []wantEntity{{Person, "Anna Müller"}}},
		{"sign-off", "Best regards,\nMaria O'Neil", []wantEntity{{Person, "Maria O'Neil"}}},
		{"not a name: lowercase", "my name is not important", nil},
		{"not a name: no cue", "John Smith wrote a book", nil},
		// LOCATION
		{"street", "Ship it to 1600 Pennsylvania Avenue please", []wantEntity{{Location, "1600 Pennsylvania Avenue"}}},
		{"street abbreviation", "I'm at 221B Baker St. now", []wantEntity{{Location, "221B Baker St."}}},
		{"german street", "Wir wohnen in der Hauptstraße 5 in Berlin", []wantEntity{{Location, "Hauptstraße 5"}}},
		{"live in", "I live in New York City with my cat", []wantEntity{{Location, "New York City"}}},
		{"live in the", "I live in the United Kingdom.", []wantEntity{{Location, "United Kingdom"}}},
		{"address is", "my address is 12 rue de la Paix, Paris\nthanks", []wantEntity{{Location, "12 rue de la Paix, Paris"}}},
		{"not a location: lowercase", "i live in fear", nil},
		{"not a street: count", "I bought 3 Apple Watches", nil},
		// Mixed
		{"several", "Email ann@example.org or call +1 212 555 0199; my SSN is 123-45-6789.", []wantEntity{
			{Email, "ann@example.org"}, {Phone, "+1 212 555 0199"}, {SSN, "123-45-6789"}}},
		{"digits inside an email are not a phone", "4155552671@example.com", []wantEntity{{Email, "4155552671@example.com"}}},
		{"nothing", "Explain the difference between TCP and UDP in 3 sentences.", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Detect(tc.text, true)
			var gw []wantEntity
			for _, e := range got {
				gw = append(gw, wantEntity{e.Type, e.Value})
				if tc.text[e.Start:e.End] != e.Value {
					t.Errorf("span [%d,%d) is %q, value %q", e.Start, e.End, tc.text[e.Start:e.End], e.Value)
				}
				if e.Confidence <= 0 || e.Confidence > 1 {
					t.Errorf("confidence %v", e.Confidence)
				}
				wantMethod := MethodPattern
				if e.Type == Person || e.Type == Location {
					wantMethod = MethodHeuristic
				}
				if e.Method != wantMethod {
					t.Errorf("%s method %s", e.Type, e.Method)
				}
			}
			if !slices.Equal(gw, tc.want) {
				t.Fatalf("Detect(%q, true)\n got %v\nwant %v", tc.text, gw, tc.want)
			}
		})
	}
}

func TestDetectConfidences(t *testing.T) {
	conf := func(text string) float64 {
		es := Detect(text, true)
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

// Skipping the heuristics must not change what the other phases find.
func TestDetectWithoutHeuristics(t *testing.T) {
	for _, text := range []string{
		"My name is John Smith and I live at 123 Main Street, call 415-555-0132.",
		"mail jane.doe@example.com or Jane Doe, 10 Downing Street; card 4111 1111 1111 1111",
		"Je m'appelle Marie Curie, IBAN DE89 3704 0044 0532 0130 00, ip 2001:db8::1",
		"ssn 123-45-6789 for Ich heiße Hans Müller in Berlin",
		"nothing personal here",
		"",
	} {
		var want []Entity
		for _, e := range Detect(text, true) {
			if e.Type != Person && e.Type != Location {
				want = append(want, e)
			}
		}
		got := Detect(text, false)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n without heuristics %+v\n with them, filtered %+v", text, got, want)
		}
	}
}
