package chat

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"unicode/utf8"

	"github.com/junction-router/junction/sdk/jsonscan"
)

// This file holds byte-level helpers that split JSON that is already known to
// be valid (json.Valid, or a value cut out of a valid document) without
// decoding it: a request or answer is walked once, and values are handed out
// as sub-slices of the input instead of copies.

var errStructure = errors.New("malformed JSON")

// Member is one member of a JSON object.
type Member struct {
	// Key is the member name as written between its quotes, escapes included.
	Key []byte
	// Value is the member's value without surrounding whitespace; it shares
	// memory with the scanned object.
	Value []byte
}

// Name returns the member name decoded, as encoding/json decodes object keys.
func (m Member) Name() string {
	if bytes.IndexByte(m.Key, '\\') < 0 {
		if s, ok := known(m.Key); ok {
			return s
		}
		return string(m.Key)
	}
	var s string
	if json.Unmarshal(quoted(m.Key), &s) != nil {
		return string(m.Key)
	}
	return s
}

// Is reports whether the decoded member name is name, for a name without
// U+FFFD (every caller asks about an ASCII name; compare Name with one that
// has it): a key with escapes and invalid UTF-8 decodes each invalid byte to
// U+FFFD, longer than the byte, which the length test below does not allow
// for (testing name for it would cost every call).
func (m Member) Is(name string) bool {
	if len(m.Key) <= len(name) && string(m.Key) != name {
		// Decoding escapes shortens a key (and a key it cannot decode is
		// its own name): no shorter key, nor a different one as long, is
		// name. Most keys a caller asks about are ruled out here.
		return false
	}
	if bytes.IndexByte(m.Key, '\\') < 0 {
		return string(m.Key) == name
	}
	return m.Name() == name
}

func quoted(key []byte) []byte {
	q := make([]byte, 0, len(key)+2)
	q = append(q, '"')
	q = append(q, key...)
	return append(q, '"')
}

// Members appends the members of the JSON object obj to dst, in document order
// (duplicates included). obj must be valid JSON: Members checks its structure
// (nesting, string ends, separators), not every lexical rule, and reports an
// error for anything that is not an object.
func Members(dst []Member, obj []byte) ([]Member, error) {
	dst, e, err := membersAt(dst, obj, 0)
	if err == nil && skipWS(obj, e) != len(obj) {
		err = errStructure
	}
	return dst, err
}

// membersAt is Members of the object that starts at obj[i] (after any
// whitespace), which also returns the index just past the object; what
// follows it is not looked at. A scan of an array of objects lists each
// object's members and finds its end in one walk.
func membersAt(dst []Member, obj []byte, i int) ([]Member, int, error) {
	i = skipWS(obj, i)
	if i >= len(obj) || obj[i] != '{' {
		return dst, 0, errStructure
	}
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return dst, i + 1, nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return dst, 0, errStructure
		}
		ke, err := stringEnd(obj, i)
		if err != nil {
			return dst, 0, err
		}
		key := obj[i+1 : ke-1]
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return dst, 0, errStructure
		}
		i = skipWS(obj, i+1)
		ve, err := valueEnd(obj, i)
		if err != nil {
			return dst, 0, err
		}
		dst = append(dst, Member{Key: key, Value: obj[i:ve]})
		i = skipWS(obj, ve)
		if i >= len(obj) {
			return dst, 0, errStructure
		}
		switch obj[i] {
		case ',':
			i = skipWS(obj, i+1)
		case '}':
			return dst, i + 1, nil
		default:
			return dst, 0, errStructure
		}
	}
}

// The structural scanning is sdk/jsonscan's, the scanner guest modules use
// too; these adapt its -1 to an error.
func skipWS(b []byte, i int) int { return jsonscan.SkipSpace(b, i) }

// ValueEnd returns the index just past the JSON value starting at b[i]. It
// checks structure (nesting, string termination), not every lexical rule: its
// input is JSON that has already been validated.
func ValueEnd(b []byte, i int) (int, error) { return valueEnd(b, i) }

// SkipSpace returns the index of the first non-whitespace byte at or after i.
func SkipSpace(b []byte, i int) int { return skipWS(b, i) }

// valueEnd returns the index just past the JSON value starting at b[i].
func valueEnd(b []byte, i int) (int, error) {
	if e := scanValueEnd(b, i); e >= 0 {
		return e, nil
	}
	return 0, errStructure
}

// scanValueEnd is jsonscan.ValueEnd's answer for every input (the guests'
// scanner, which cannot change without rebuilding the built-in modules),
// with strings skipped eight bytes at a time: most of a chat body is string
// contents. TestScanValueEndMatchesJSONScan compares the two.
func scanValueEnd(b []byte, i int) int {
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return scanStringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = scanStringEnd(b, i); i < 0 {
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

// scanStringEnd returns the index just past the string literal starting at
// b[i] (a backslash escapes the byte after it), or -1.
func scanStringEnd(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i++; i < len(b); {
		if i+8 <= len(b) {
			// Eight bytes at a time; the lowest flagged byte of the mask is
			// the first quote or backslash (the bit trick is exact there).
			w := binary.LittleEndian.Uint64(b[i:])
			q, bs := w^(ones*'"'), w^(ones*'\\')
			m := ((q-ones)&^q | (bs-ones)&^bs) & highs
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		switch b[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1
		default:
			i++
		}
	}
	return -1
}

// stringEnd returns the index just past the JSON string starting at b[i]
// (b[i] is its opening quote).
func stringEnd(b []byte, i int) (int, error) { return valueEnd(b, i) }

// plainString returns the contents of the JSON string literal raw when it
// needs no unescaping (no backslash), which for valid JSON in valid UTF-8 is
// exactly what encoding/json would decode.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		return "", false
	}
	if k, ok := known(s); ok {
		return k, true
	}
	return string(s), true
}

// known returns b as a string without allocating when it is one of the
// strings nearly every request repeats (its keys, its roles, the routing
// model names): string(b) would copy it on every request. The answer is the
// same string either way.
func known(b []byte) (string, bool) {
	switch string(b) { // compared in place: no conversion is allocated
	case "model":
		return "model", true
	case "messages":
		return "messages", true
	case "max_tokens":
		return "max_tokens", true
	case "max_completion_tokens":
		return "max_completion_tokens", true
	case "stream":
		return "stream", true
	case "stream_options":
		return "stream_options", true
	case "temperature":
		return "temperature", true
	case "top_p":
		return "top_p", true
	case "tools":
		return "tools", true
	case "tool_choice":
		return "tool_choice", true
	case "user":
		return "user", true
	case "system":
		return "system", true
	case "assistant":
		return "assistant", true
	case "tool":
		return "tool", true
	case "developer":
		return "developer", true
	case "function":
		return "function", true
	case "MoM":
		return "MoM", true
	case "auto":
		return "auto", true
	}
	return "", false
}

// Unquote decodes the JSON string literal raw as jsonscan.Unquote does; the
// strings nearly every request repeats (its keys and roles: known) come back
// without an allocation.
func Unquote(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		// known's strings have no escapes: a literal that is one of them
		// decodes to it.
		if k, ok := known(raw[1 : len(raw)-1]); ok {
			return k, nil
		}
	}
	return jsonscan.Unquote(raw)
}

// unquote is jsonscan.Unquote's answer for a JSON string literal, faster on
// the usual escaped prompt (valid UTF-8, escapes of one character such as
// \n): the runs between escapes are copied whole and one string is
// allocated. Anything else (\u escapes, invalid UTF-8, a malformed literal)
// is jsonscan.Unquote's to decode or refuse.
func unquote(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || !utf8.Valid(raw) {
		return jsonscan.Unquote(raw)
	}
	s := raw[1 : len(raw)-1]
	var buf [512]byte
	out := buf[:0]
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' || c < ' ' {
			return jsonscan.Unquote(raw) // refused there
		}
		if c != '\\' {
			continue
		}
		if i+1 >= len(s) {
			return jsonscan.Unquote(raw)
		}
		var e byte
		switch s[i+1] {
		case '"', '\\', '/':
			e = s[i+1]
		case 'n':
			e = '\n'
		case 'r':
			e = '\r'
		case 't':
			e = '\t'
		case 'b':
			e = '\b'
		case 'f':
			e = '\f'
		default: // \u (surrogate pairs and all) or an invalid escape
			return jsonscan.Unquote(raw)
		}
		out = append(append(out, s[start:i]...), e)
		i++
		start = i + 1
	}
	return string(append(out, s[start:]...)), nil
}
