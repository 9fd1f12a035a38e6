package chatmsg

import (
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/junction-router/junction/hostapi/abi"
)

// A small JSON scanner: the built-in plugins read a few members of a body the
// host has already parsed (so it is valid JSON), and encoding/json's
// reflection costs hundreds of microseconds a request inside a wasm guest.
// These functions find spans without decoding what they skip, and edit an
// object by splicing, which also keeps the other members' bytes and order.

var errSyntax = errors.New("malformed JSON")

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipValue returns the index just past the value starting at i, or -1.
func skipValue(b []byte, i int) int {
	i = skipSpace(b, i)
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
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

func skipString(b []byte, i int) int {
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

// Member is one member of a JSON object: its name and raw value, and where
// the member (name to value) lies in the object.
type Member struct {
	Name       string
	Value      []byte
	start, end int
}

// Members lists the members of a JSON object, in order.
func Members(obj []byte) ([]Member, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []Member
	for i++; ; {
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return nil, errSyntax
		}
		if obj[i] == '}' {
			return out, nil
		}
		if obj[i] != '"' {
			return nil, errSyntax
		}
		end := skipString(obj, i)
		if end < 0 {
			return nil, errSyntax
		}
		name, err := Unquote(obj[i:end])
		if err != nil {
			return nil, err
		}
		start := i
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, errSyntax
		}
		vs := skipSpace(obj, i+1)
		ve := skipValue(obj, vs)
		if ve < 0 {
			return nil, errSyntax
		}
		out = append(out, Member{Name: name, Value: obj[vs:ve], start: start, end: ve})
		i = skipSpace(obj, ve)
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
}

// Lookup returns the raw value of member name, or nil.
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
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	var out [][]byte
	for i++; ; {
		i = skipSpace(arr, i)
		if i >= len(arr) {
			return nil, errSyntax
		}
		if arr[i] == ']' {
			return out, nil
		}
		end := skipValue(arr, i)
		if end < 0 {
			return nil, errSyntax
		}
		out = append(out, arr[i:end])
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i++
		}
	}
}

// Unquote decodes a JSON string literal.
func Unquote(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errors.New("not a JSON string")
	}
	plain := true
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' || c == '"' || c < ' ' {
			plain = false
			break
		}
	}
	if plain && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errors.New("not a valid JSON string")
	}
	return s, nil
}

// Quote encodes s as a JSON string literal.
func Quote(s string) []byte { return abi.AppendJSONString(nil, s) }

// splice sets member name of obj to value (appending it when absent), or
// removes it when value is nil.
func splice(obj []byte, name string, value []byte) ([]byte, error) {
	ms, err := Members(obj)
	if err != nil {
		return nil, err
	}
	for k, m := range ms {
		if m.Name != name {
			continue
		}
		vs := m.end - len(m.Value)
		out := make([]byte, 0, len(obj)+len(value))
		if value != nil {
			out = append(out, obj[:vs]...)
			out = append(out, value...)
			return append(out, obj[m.end:]...), nil
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
		return append(out, obj[end:]...), nil
	}
	if value == nil {
		return obj, nil
	}
	close := len(obj) - 1
	for close > 0 && obj[close] != '}' {
		close--
	}
	out := make([]byte, 0, len(obj)+len(name)+len(value)+4)
	out = append(out, obj[:close]...)
	if len(ms) > 0 {
		out = append(out, ',')
	}
	out = append(out, Quote(name)...)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, obj[close:]...), nil
}
