package chat

import (
	"encoding/binary"
	"math/bits"
)

// Valid reports whether b is one valid JSON value, with exactly the answer
// of encoding/json.Valid (same grammar, bytes ≥ 0x20 of any kind accepted in
// strings, nesting up to encoding/json's 10,000 levels). It is the hot path's
// check of every request and answer body: encoding/json's scanner calls a
// state function per byte, which made the check about a tenth of the gateway's
// own CPU; this one walks the bytes in tight loops and allocates nothing for
// nesting up to 64 levels.
func Valid(b []byte) bool {
	_, _, ok := validJSON(b, false, false, nil)
	return ok
}

// ValidObject reports whether b is one valid JSON value (Valid's answer)
// that is an object, and appends its members to dst as Members would (in
// document order, duplicates included; keys as written, values without
// surrounding whitespace, sharing b's memory): one walk of the bytes where
// Valid and then Members take two.
func ValidObject(dst []Member, b []byte) ([]Member, bool) {
	dst, _, ok := validObject(dst, b)
	return dst, ok
}

// validObject is ValidObject, and also reports which of the members it
// appended have a compact value (bit k: the k-th appended member, for the
// first 64): one that compact would accept, since the walk saw no whitespace
// inside it.
func validObject(dst []Member, b []byte) ([]Member, uint64, bool) {
	n := len(dst)
	dst, mask, ok := validJSON(b, false, true, dst)
	if !ok {
		return dst[:n], 0, false
	}
	return dst, mask, b[skipSpace(b, 0)] == '{'
}

// compact reports whether b is valid JSON (as Valid) with no whitespace
// outside its strings: what json.Compact would copy unchanged.
func compact(b []byte) bool {
	_, _, ok := validJSON(b, true, false, nil)
	return ok
}

// validJSON is Valid; strict refuses whitespace between tokens. With members
// set, the members of a top-level object are appended to dst, and bit k of
// compactMask is set when the k-th appended member's value (k < 64) holds no
// whitespace outside its strings.
func validJSON(b []byte, strict, members bool, dst []Member) (_ []Member, compactMask uint64, _ bool) {
	keyAt := 0 // the opening quote of the top-level member being read
	ws := -1   // where the last run of whitespace between tokens started (members only)
	first := len(dst)
	var buf [64]byte
	stack := buf[:0] // '{' or '[' per open container
	n := len(b)
	i := skipSpace(b, 0)
	if strict && i > 0 {
		return dst, 0, false
	}
value:
	if i >= n {
		return dst, 0, false
	}
	switch c := b[i]; {
	case c == '{':
		if len(stack) >= maxNesting {
			return dst, 0, false
		}
		stack = append(stack, '{')
		if i = spaceWS(b, i+1, strict, &ws); i < 0 {
			return dst, 0, false
		}
		if i < n && b[i] == '}' {
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		if len(stack) == 1 {
			keyAt = i
		}
		if i = objectKey(b, i, strict, &ws); i < 0 {
			return dst, 0, false
		}
		goto value
	case c == '[':
		if len(stack) >= maxNesting {
			return dst, 0, false
		}
		stack = append(stack, '[')
		if i = spaceWS(b, i+1, strict, &ws); i < 0 {
			return dst, 0, false
		}
		if i < n && b[i] == ']' {
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		goto value
	case c == '"':
		if i = validString(b, i); i < 0 {
			return dst, 0, false
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if i = validNumber(b, i); i < 0 {
			return dst, 0, false
		}
	case c == 't':
		if n-i < 4 || string(b[i:i+4]) != "true" {
			return dst, 0, false
		}
		i += 4
	case c == 'f':
		if n-i < 5 || string(b[i:i+5]) != "false" {
			return dst, 0, false
		}
		i += 5
	case c == 'n':
		if n-i < 4 || string(b[i:i+4]) != "null" {
			return dst, 0, false
		}
		i += 4
	default:
		return dst, 0, false
	}
after:
	if members && len(stack) == 1 && stack[0] == '{' {
		// A top-level member's value ends at i.
		m := member(b, keyAt, i)
		if k := len(dst) - first; k < 64 && ws < i-len(m.Value) {
			compactMask |= 1 << k
		}
		dst = append(dst, m)
	}
	if i = spaceWS(b, i, strict, &ws); i < 0 {
		return dst, 0, false
	}
	if len(stack) == 0 {
		return dst, compactMask, i == n
	}
	if i >= n {
		return dst, 0, false
	}
	switch top := stack[len(stack)-1]; {
	case b[i] == ',':
		if i = spaceWS(b, i+1, strict, &ws); i < 0 {
			return dst, 0, false
		}
		if top == '{' {
			if len(stack) == 1 {
				keyAt = i
			}
			if i = objectKey(b, i, strict, &ws); i < 0 {
				return dst, 0, false
			}
		}
		goto value
	case (top == '{' && b[i] == '}') || (top == '[' && b[i] == ']'):
		stack = stack[:len(stack)-1]
		i++
		goto after
	}
	return dst, 0, false
}

// member is the member whose key's opening quote is b[keyAt] and whose
// value ends at end, in valid JSON: the key ends at the last quote before
// the colon, the value starts after the colon and any whitespace.
func member(b []byte, keyAt, end int) Member {
	colon := keyAt + 1
	for b[colon] != '"' { // the key's closing quote: the first unescaped one
		if b[colon] == '\\' {
			colon++
		}
		colon++
	}
	key := b[keyAt+1 : colon]
	for b[colon] != ':' {
		colon++
	}
	return Member{Key: key, Value: b[skipSpace(b, colon+1):end]}
}

// maxNesting is encoding/json's limit on nested arrays and objects.
const maxNesting = 10000

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// spaceWS skips whitespace from i; in strict mode any is an error (-1).
// It records in *ws where the whitespace it skips
// starts, if any.
func spaceWS(b []byte, i int, strict bool, ws *int) int {
	j := skipSpace(b, i)
	if j != i {
		if strict {
			return -1
		}
		*ws = i
	}
	return j
}

// objectKey checks a member name and its colon at b[i] and returns the index
// of the member's value (whitespace skipped, and recorded in *ws as spaceWS
// does), or -1.
func objectKey(b []byte, i int, strict bool, ws *int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	if i = spaceWS(b, i, strict, ws); i < 0 || i >= len(b) || b[i] != ':' {
		return -1
	}
	return spaceWS(b, i+1, strict, ws)
}

// validString checks the string whose opening quote is b[i] and returns the
// index just past its closing quote, or -1.
func validString(b []byte, i int) int {
	i++
	for i < len(b) {
		if i+8 <= len(b) {
			// Eight bytes at a time: most of a request or an answer is
			// string contents. The lowest flagged byte is the first quote,
			// backslash or control byte.
			m := special8(binary.LittleEndian.Uint64(b[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
	return -1
}

// special8 flags (the high bit of each byte) the bytes of w that may be a
// quote, a backslash or a control byte (< 0x20): the bytes a string's
// contents stop at. It is zero exactly when there is none, and its lowest
// flag is exactly the first one (the "some byte is zero" and "some byte is
// less than n" bit tricks: a borrow only runs upward from a flagged byte).
func special8(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return ((q-ones)&^q | (bs-ones)&^bs | (w-ones*0x20)&^w) & highs
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// validNumber checks the number starting at b[i] and returns the index just
// past it, or -1.
func validNumber(b []byte, i int) int {
	n := len(b)
	if b[i] == '-' {
		i++
		if i >= n {
			return -1
		}
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i++; i < n && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	default:
		return -1
	}
	if i < n && b[i] == '.' {
		i++
		if i >= n || b[i] < '0' || b[i] > '9' {
			return -1
		}
		for i++; i < n && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= n || b[i] < '0' || b[i] > '9' {
			return -1
		}
		for i++; i < n && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	return i
}
