package abi_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/junction-router/junction/hostapi/abi"
)

// jsonStringInputs are strings whose escaping is easy to get wrong.
var jsonStringInputs = []string{
	"", "a", "plain ascii text", `"`, `\`, `"\"`, "<script>&amp;</script>",
	"\x00\x01\x1f\x7f", "\b\f\n\r\t", "line\nbreak", "ü é 中文 🙂",
	"\u2028\u2029", "\xff\xfe invalid", "\xe2\x80", "\xed\xa0\x80 surrogate",
	strings.Repeat(`"`, 100), strings.Repeat("\x01", 50), strings.Repeat("x", 1000) + "\n",
	"You are helpful.\n\nYou are a refund assistant.",
}

// TestAppendJSONString holds the literals to exactly what the host's JSON
// checks and the guests have always read: the short escapes for quote,
// backslash, \n, \r and \t, \u00XX for other control bytes and for <, >
// and &, everything else (U+2028, invalid UTF-8) copied as it is.
func TestAppendJSONString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{`a"b\c`, `"a\"b\\c"`},
		{"\n\r\t", `"\n\r\t"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"\b\f", `"\u0008\u000c"`},
		{"<a>&", `"\u003ca\u003e\u0026"`},
		{"ü 🙂 \u2028", "\"ü 🙂 \u2028\""},
		{"\xff\xfe", "\"\xff\xfe\""},
	} {
		if got := abi.AppendJSONString(nil, c.in); string(got) != c.want {
			t.Errorf("%q: %s, want %s", c.in, got, c.want)
		}
	}
	for _, s := range jsonStringInputs {
		checkJSONString(t, s)
	}
}

// checkJSONString checks what holds for any s: the prefix is kept; valid
// UTF-8 comes back as a JSON string encoding/json decodes to s, with no
// control byte, <, > or & left as it is; the bytes at or above 0x80 are
// copied in order (escapes are ASCII), so invalid UTF-8 passes as it is.
func checkJSONString(t *testing.T, s string) {
	t.Helper()
	for _, prefix := range [][]byte{nil, []byte("x"), make([]byte, 3, 4), make([]byte, 0, 64)} {
		out := abi.AppendJSONString(bytes.Clone(prefix), s)
		if !bytes.Equal(out[:len(prefix)], prefix) {
			t.Fatalf("%q after %q: the prefix became %q", s, prefix, out[:len(prefix)])
		}
		lit := out[len(prefix):]
		if utf8.ValidString(s) {
			var back string
			if err := json.Unmarshal(lit, &back); err != nil || back != s {
				t.Fatalf("%q: %s decodes to %q, %v", s, lit, back, err)
			}
			if bytes.ContainsAny(lit, "<>&") || bytes.ContainsFunc(lit, func(r rune) bool { return r < 0x20 }) {
				t.Fatalf("%q: %s leaves a byte unescaped", s, lit)
			}
		}
		if got, want := highBytes(lit), highBytes([]byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("%q: the bytes from 0x80 became %q, want %q", s, got, want)
		}
	}
}

// highBytes is b's bytes at or above 0x80, in order.
func highBytes(b []byte) []byte {
	var out []byte
	for _, c := range b {
		if c >= 0x80 {
			out = append(out, c)
		}
	}
	return out
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringInputs {
		f.Add(s)
	}
	f.Fuzz(checkJSONString)
}
