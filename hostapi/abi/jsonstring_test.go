package abi_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
)

// oldAppendJSONString is AppendJSONString as it was before it presized its
// buffer: the output must not change.
func oldAppendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonStringInputs are strings whose escaping is easy to get wrong.
var jsonStringInputs = []string{
	"", "a", "plain ascii text", `"`, `\`, `"\"`, "<script>&amp;</script>",
	"\x00\x01\x1f\x7f", "\b\f\n\r\t", "line\nbreak", "ü é 中文 🙂",
	"\u2028\u2029", "\xff\xfe invalid", "\xe2\x80", "\xed\xa0\x80 surrogate",
	strings.Repeat(`"`, 100), strings.Repeat("\x01", 50), strings.Repeat("x", 1000) + "\n",
	"You are helpful.\n\nYou are a refund assistant.",
}

func TestAppendJSONStringMatchesOld(t *testing.T) {
	for _, s := range jsonStringInputs {
		for _, prefix := range [][]byte{nil, []byte("x"), make([]byte, 3, 4), make([]byte, 0, 64)} {
			want := oldAppendJSONString(bytes.Clone(prefix), s)
			got := abi.AppendJSONString(bytes.Clone(prefix), s)
			if !bytes.Equal(got, want) {
				t.Errorf("%q after %q: %q, want %q", s, prefix, got, want)
			}
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringInputs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := abi.AppendJSONString([]byte("p"), s), oldAppendJSONString([]byte("p"), s); !bytes.Equal(got, want) {
			t.Fatalf("%q: %q, want %q", s, got, want)
		}
	})
}
