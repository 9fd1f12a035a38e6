package chat

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/junction-router/junction/sdk/jsonscan"
)

// validCases are the shapes where a hand-written JSON check can go wrong:
// each is checked against encoding/json.Valid, whose answer Valid must give.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` {} `, `{`, `}`, `[`, `]`, `{]`, `[}`, `{}{}`, `{} x`, `[1,]`, `[,1]`, `[1 2]`, `{"a":1,}`,
	`{"a"}`, `{"a":}`, `{a:1}`, `{"a" : 1 , "b" : [ true , false , null ] }`, `{"a":1 "b":2}`, `{,}`, `[[]]`, `[[],[{}]]`,
	`"abc"`, `"a\"b"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"\'"`,
	`"tab	in"`, "\"nl\nin\"", "\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"\xff\xfe\"", `"unterminated`, `"\`, `"\u`,
	`0`, `-0`, `01`, `-01`, `1.`, `1.5`, `.5`, `-`, `-a`, `1e`, `1e+`, `1e5`, `1E-5`, `1.5e+10`, `+1`, `1.5.5`, `0x10`,
	`123456789012345678901234567890`, `-1.0e-0`, `1e05`, `true`, `false`, `null`, `tru`, `nul`, `falsey`, `True`, `nulll`,
	"\t\r\n 1 \n", "\v1", "\f1", `{"a":{"b":{"c":[1,{"d":"e"}]}}}`, `[1,[2,[3,[4]]]]`, `{"":""}`, `[""]`, `["a","b",]`,
	`{"model":"MoM","messages":[{"role":"user","content":"hi"}],"max_tokens":16}`, "\xef\xbb\xbf{}",
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
		checkCompact(t, []byte(c))
		checkValidObject(t, []byte(c))
	}
}

// checkValidObject fails unless ValidObject(b) gives what Valid and then
// Members give: valid and an object, with the same members.
func checkValidObject(t *testing.T, b []byte) {
	t.Helper()
	var want []Member
	wantOK := Valid(b)
	if wantOK {
		var err error
		want, err = Members([]Member{{Key: []byte("kept")}}, b)
		wantOK = err == nil
	}
	got, ok := ValidObject([]Member{{Key: []byte("kept")}}, b)
	if ok != wantOK {
		t.Fatalf("ValidObject(%q) = %v, Valid and Members say %v", b, ok, wantOK)
	}
	if !ok {
		if len(got) != 1 {
			t.Fatalf("ValidObject(%q) refused it but left %d members", b, len(got))
		}
		return
	}
	if len(got) != len(want) {
		t.Fatalf("ValidObject(%q): %d members, Members %d", b, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("ValidObject(%q) member %d = %q:%q, Members %q:%q", b, i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
		}
	}
	// validObject's compact bits are compact's answer for each value (Parse
	// hands them to Encode, which then skips compact).
	got2, mask, ok2 := validObject([]Member{{Key: []byte("kept")}}, b)
	if !ok2 || len(got2) != len(got) {
		t.Fatalf("validObject(%q) = %d members, %v; ValidObject %d, true", b, len(got2), ok2, len(got))
	}
	for i, m := range got2[1:] {
		if i >= 64 {
			break
		}
		if bit, c := mask&(1<<i) != 0, compact(m.Value); bit != c {
			t.Fatalf("validObject(%q) member %d (%q): compact bit %v, compact says %v", b, i, m.Value, bit, c)
		}
	}
}

// checkCompact fails unless compact(b) says exactly whether json.Compact
// succeeds on b and leaves it unchanged (Encode copies such a value as it is).
func checkCompact(t *testing.T, b []byte) {
	t.Helper()
	var buf bytes.Buffer
	want := json.Compact(&buf, b) == nil && bytes.Equal(buf.Bytes(), b)
	if got := compact(b); got != want {
		t.Fatalf("compact(%q) = %v, json.Compact leaves it unchanged: %v", b, got, want)
	}
}

// TestValidNesting checks encoding/json's depth limit: 10,000 nested
// containers are valid, one more is not.
func TestValidNesting(t *testing.T) {
	for _, depth := range []int{63, 64, 65, 10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			close := "]"
			if open != "[" {
				close = "}"
			}
			doc := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth))
			if got, want := Valid(doc), json.Valid(doc); got != want {
				t.Errorf("depth %d of %s: Valid %v, encoding/json %v", depth, open, got, want)
			}
		}
	}
}

// TestValidMutations compares Valid with encoding/json.Valid on many
// mutations of valid documents (bytes replaced, inserted, cut), from a fixed
// seed so a failure reproduces.
func TestValidMutations(t *testing.T) {
	seeds := []string{
		`{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"What is 2\u002b2? \"quoted\" \\ ok"}],"max_tokens":16,"temperature":0.2,"stop":null,"stream":false}`,
		`{ "a" : 1 , "k\\\"ey" :{"x":[]}, "b":[ ],"c":{},"a":"dup\"licate" , "\u00e9":null}`,
		`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6,"x":-1.5e-3}}`,
		`[1,-0.5,2e10,true,false,null,"a",[],{},[{"a":[{}]}]]`,
		`{"content":"I was charged twice for order 1234, can I get a refund? \"Answer\" in one word, please.\n\u00e9 and a long tail of plain text after the escapes, so that eight-byte steps meet every change"}`,
	}
	alphabet := []byte("{}[]\",:\\/ \t\n0123456789-+.eEtrufalsn\x00\x1f\x7f\xffabu")
	rng := rand.New(rand.NewPCG(16, 2026))
	for n := 0; n < 200000; n++ {
		doc := []byte(seeds[rng.IntN(len(seeds))])
		for k := rng.IntN(3) + 1; k > 0; k-- {
			at := rng.IntN(len(doc))
			switch rng.IntN(3) {
			case 0:
				doc[at] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				doc = append(doc[:at], append([]byte{alphabet[rng.IntN(len(alphabet))]}, doc[at:]...)...)
			default:
				doc = append(doc[:at], doc[at+1:]...)
			}
			if len(doc) == 0 {
				break
			}
		}
		if got, want := Valid(doc), json.Valid(doc); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", doc, got, want)
		}
		checkCompact(t, doc)
		checkValidObject(t, doc)
	}
}

// TestSpecial8 checks special8 against a byte loop: every byte value at
// every position of a word of plain bytes, and random words.
func TestSpecial8(t *testing.T) {
	want := func(w [8]byte) bool {
		for _, c := range w {
			if c == '"' || c == '\\' || c < 0x20 {
				return true
			}
		}
		return false
	}
	check := func(w [8]byte) {
		m := special8(binary.LittleEndian.Uint64(w[:]))
		if got := m != 0; got != want(w) {
			t.Fatalf("special8(%q) = %x", w[:], m)
		}
		if m != 0 { // the lowest flag is the first special byte
			first := bits.TrailingZeros64(m) >> 3
			c := w[first]
			if !(c == '"' || c == '\\' || c < 0x20) || (first > 0 && want([8]byte(append(w[:first:first], bytes.Repeat([]byte{'a'}, 8-first)...)))) {
				t.Fatalf("special8(%q): lowest flag at byte %d", w[:], first)
			}
		}
	}
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			for _, fill := range []byte{'a', 0x7f, 0x80, 0xff, 0x21, 0x5d} {
				var w [8]byte
				for k := range w {
					w[k] = fill
				}
				w[pos] = byte(c)
				check(w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(8, 2026))
	for n := 0; n < 1000000; n++ {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		check(w)
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
		checkCompact(t, b)
		checkValidObject(t, b)
	})
}

func BenchmarkValid(b *testing.B) {
	doc := []byte(`{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"I was charged twice for order 1234, can I get a refund? Answer in one word, please."}],"max_tokens":16}`)
	b.Run("chat.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for i := 0; i < b.N; i++ {
			if !Valid(doc) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for i := 0; i < b.N; i++ {
			if !json.Valid(doc) {
				b.Fatal("invalid")
			}
		}
	})
}

// TestNeedsHTMLEscape checks the word-at-a-time needsHTMLEscape against a
// byte loop: each of the bytes it looks for, and near misses, at every
// position of buffers of 0 to 40 bytes.
func TestNeedsHTMLEscape(t *testing.T) {
	want := func(b []byte) bool {
		for _, c := range b {
			if c == '<' || c == '>' || c == '&' || c == 0xe2 {
				return true
			}
		}
		return false
	}
	for n := 0; n <= 40; n++ {
		for pos := 0; pos < n; pos++ {
			for _, c := range []byte{'<', '>', '&', 0xe2, '=', '?', '%', '\'', 0xe1, 0xe3, 0x62, 0x00, 0xff} {
				b := bytes.Repeat([]byte{'a'}, n)
				b[pos] = c
				if got := needsHTMLEscape(b); got != want(b) {
					t.Fatalf("needsHTMLEscape(%q) = %v", b, got)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(9, 2026))
	for k := 0; k < 200000; k++ {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		if got := needsHTMLEscape(b); got != want(b) {
			t.Fatalf("needsHTMLEscape(%q) = %v", b, got)
		}
	}
}

// TestScanValueEndMatchesJSONScan: scanValueEnd gives jsonscan.ValueEnd's
// answer from every start index of the valid cases and of many mutations of
// documents with long strings and escapes.
func TestScanValueEndMatchesJSONScan(t *testing.T) {
	check := func(doc []byte) {
		for i := 0; i <= len(doc); i++ {
			if got, want := scanValueEnd(doc, i), jsonscan.ValueEnd(doc, i); got != want {
				t.Fatalf("scanValueEnd(%q, %d) = %d, jsonscan.ValueEnd %d", doc, i, got, want)
			}
		}
	}
	for _, c := range validCases {
		check([]byte(c))
	}
	seeds := []string{
		`{"model":"MoM","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"I was charged twice for order 1234, \"can\" I get a refund?\\ Answer in one word, please.\n"}],"max_tokens":16}`,
		`["a long string without any escape at all in it, to be skipped in words","\\\\\\\"x\\"]`,
	}
	alphabet := []byte("{}[]\",:\\ \tab0")
	rng := rand.New(rand.NewPCG(10, 2026))
	for n := 0; n < 20000; n++ {
		doc := []byte(seeds[rng.IntN(len(seeds))])
		for k := rng.IntN(4); k > 0; k-- {
			at := rng.IntN(len(doc))
			switch rng.IntN(3) {
			case 0:
				doc[at] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				doc = append(doc[:at], append([]byte{alphabet[rng.IntN(len(alphabet))]}, doc[at:]...)...)
			default:
				doc = append(doc[:at], doc[at+1:]...)
			}
		}
		check(doc)
	}
}
