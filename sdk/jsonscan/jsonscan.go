// Package jsonscan finds and edits parts of JSON text without decoding what
// it skips: a member of an object, an element of an array, a string literal.
// Inside a WebAssembly guest encoding/json's reflection costs hundreds of
// microseconds a request, and a plugin usually needs a few members of a body
// the host has already parsed; scanning keeps its cost proportional to what it
// reads, and splicing edits keep the other members' bytes and order.
//
// The scanner expects valid JSON (the host only hands guests JSON it parsed)
// and reports malformed input as not found or as an error, never by guessing.
// It imports only the standard library and hostapi/abi, so guests of any
// plugin can use it; the SDK (package sdk) does.
package jsonscan

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/junction-router/junction/hostapi/abi"
)

// ErrSyntax is returned for text that is not the JSON the function expects.
var ErrSyntax = errors.New("malformed JSON")

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// ValueEnd returns the index just past the JSON value that starts at i
// (after white space), or -1 when there is none.
func ValueEnd(b []byte, i int) int {
	i = SkipSpace(b, i)
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = stringEnd(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	start := i
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\n', '\r', '\t':
			if i == start {
				return -1
			}
			return i
		}
		i++
	}
	return i
}

// stringEnd returns the index just past the string literal starting at i.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// Field returns the raw value of member name of the JSON object obj. Names
// are compared as written: a name spelt with escapes is not found by its
// decoded form (Members decodes them).
func Field(obj []byte, name string) ([]byte, bool) {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	for i++; ; {
		i = SkipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return nil, false
		}
		end := stringEnd(obj, i)
		if end < 0 {
			return nil, false
		}
		key := obj[i+1 : end-1]
		i = SkipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		vs := SkipSpace(obj, i+1)
		ve := ValueEnd(obj, vs)
		if ve < 0 {
			return nil, false
		}
		if string(key) == name {
			return obj[vs:ve], true
		}
		if i = SkipSpace(obj, ve); i < len(obj) && obj[i] == ',' {
			i++
		}
	}
}

// Element returns the raw value of element n of the JSON array arr.
func Element(arr []byte, n int) ([]byte, bool) {
	i := SkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' || n < 0 {
		return nil, false
	}
	for k, i := 0, i+1; ; k++ {
		i = SkipSpace(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return nil, false
		}
		end := ValueEnd(arr, i)
		if end < 0 {
			return nil, false
		}
		if k == n {
			return arr[i:end], true
		}
		if i = SkipSpace(arr, end); i < len(arr) && arr[i] == ',' {
			i++
		}
	}
}

// Member is one member of a JSON object: its decoded name, its raw value,
// and where the member (name to value) lies in the object.
type Member struct {
	Name       string
	Value      []byte
	start, end int
}

// Members lists the members of a JSON object, in order.
func Members(obj []byte) ([]Member, error) {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []Member
	for i++; ; {
		i = SkipSpace(obj, i)
		if i >= len(obj) {
			return nil, ErrSyntax
		}
		if obj[i] == '}' {
			return out, nil
		}
		if out == nil {
			// Most objects scanned are messages and content parts, of a
			// few members: one allocation instead of regrowing from one.
			out = make([]Member, 0, 4)
		}
		if obj[i] != '"' {
			return nil, ErrSyntax
		}
		end := stringEnd(obj, i)
		if end < 0 {
			return nil, ErrSyntax
		}
		name, err := memberName(obj[i:end])
		if err != nil {
			return nil, err
		}
		start := i
		i = SkipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, ErrSyntax
		}
		vs := SkipSpace(obj, i+1)
		ve := ValueEnd(obj, vs)
		if ve < 0 {
			return nil, ErrSyntax
		}
		out = append(out, Member{Name: name, Value: obj[vs:ve], start: start, end: ve})
		if i = SkipSpace(obj, ve); i < len(obj) && obj[i] == ',' {
			i++
		}
	}
}

// memberName decodes a member's name, as Unquote does. The names of chat
// messages and their parts come back as constants, without an allocation.
func memberName(raw []byte) (string, error) {
	if len(raw) >= 2 {
		switch string(raw[1 : len(raw)-1]) {
		case "role":
			return "role", nil
		case "content":
			return "content", nil
		case "name":
			return "name", nil
		case "type":
			return "type", nil
		case "text":
			return "text", nil
		case "id":
			return "id", nil
		case "tool_calls":
			return "tool_calls", nil
		case "tool_call_id":
			return "tool_call_id", nil
		case "function":
			return "function", nil
		case "arguments":
			return "arguments", nil
		}
	}
	return Unquote(raw)
}

// Lookup returns the raw value of the member called name, or nil.
func Lookup(ms []Member, name string) []byte {
	for _, m := range ms {
		if m.Name == name {
			return m.Value
		}
	}
	return nil
}

// Elements lists the raw elements of a JSON array.
func Elements(arr []byte) ([][]byte, error) {
	i := SkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	var out [][]byte
	for i++; ; {
		i = SkipSpace(arr, i)
		if i >= len(arr) {
			return nil, ErrSyntax
		}
		if arr[i] == ']' {
			return out, nil
		}
		end := ValueEnd(arr, i)
		if end < 0 {
			return nil, ErrSyntax
		}
		out = append(out, arr[i:end])
		if i = SkipSpace(arr, end); i < len(arr) && arr[i] == ',' {
			i++
		}
	}
}

// Unquote decodes a JSON string literal (quotes included) the way
// encoding/json does: escapes, surrogate pairs, and U+FFFD for invalid UTF-8
// and lone surrogates.
func Unquote(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errors.New("not a JSON string")
	}
	s := raw[1 : len(raw)-1]
	plain := true
	for _, c := range s {
		if c == '\\' || c == '"' || c < ' ' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(s), nil
	}
	bad := errors.New("not a valid JSON string")
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c < ' ':
			return "", bad
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(s[i:])
			out = utf8.AppendRune(out, r) // RuneError for invalid bytes, as encoding/json
			i += n
			continue
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", bad
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				return "", bad
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(s, i+2); ok && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
						out = utf8.AppendRune(out, pair)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", bad
		}
		i += 2
	}
	// out is not used again: the string can share its bytes.
	return unsafe.String(unsafe.SliceData(out), len(out)), nil
}

// hex4 reads the four hex digits at s[i:i+4].
func hex4(s []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, h := range s[i : i+4] {
		r <<= 4
		switch {
		case h >= '0' && h <= '9':
			r |= rune(h - '0')
		case h >= 'a' && h <= 'f':
			r |= rune(h-'a') + 10
		case h >= 'A' && h <= 'F':
			r |= rune(h-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// Quote encodes s as a JSON string literal.
func Quote(s string) []byte { return abi.AppendJSONString(nil, s) }

// Splice sets member name of the JSON object obj to the raw JSON value
// (appending the member when absent), or removes the member when value is
// nil. The other members keep their bytes and order.
func Splice(obj []byte, name string, value []byte) ([]byte, error) {
	ms, err := Members(obj)
	if err != nil {
		return nil, err
	}
	return SpliceMembers(obj, ms, name, value), nil
}

// SpliceMembers is Splice for a caller that has listed obj's members already:
// ms must be Members(obj), which is not scanned again.
func SpliceMembers(obj []byte, ms []Member, name string, value []byte) []byte {
	for k, m := range ms {
		if m.Name != name {
			continue
		}
		out := make([]byte, 0, len(obj)+len(value))
		if value != nil {
			vs := m.end - len(m.Value)
			out = append(out, obj[:vs]...)
			out = append(out, value...)
			return append(out, obj[m.end:]...)
		}
		// Remove the member and one comma next to it.
		start, end := m.start, m.end
		switch {
		case k+1 < len(ms):
			end = ms[k+1].start
		case k > 0:
			start = ms[k-1].end
		}
		out = append(out, obj[:start]...)
		return append(out, obj[end:]...)
	}
	if value == nil {
		return obj
	}
	closing := len(obj) - 1
	for closing > 0 && obj[closing] != '}' {
		closing--
	}
	out := make([]byte, 0, len(obj)+len(name)+len(value)+4)
	out = append(out, obj[:closing]...)
	if len(ms) > 0 {
		out = append(out, ',')
	}
	out = abi.AppendJSONString(out, name)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, obj[closing:]...)
}
