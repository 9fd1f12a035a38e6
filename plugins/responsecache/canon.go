package responsecache

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/junction-router/junction/sdk/jsonscan"
)

// appendCanon appends the JSON value raw (valid JSON) as encoding/json
// writes it once decoded into an any: object members sorted by name (the
// last of duplicates wins), no white space, strings and numbers in Go's
// encoding. The cache keys hash that form; writing it straight from the
// text spares the guest the decoding and reflection (most of a miss's cost
// inside wasm). Values it cannot copy as written (escaped or HTML-special
// strings, numbers that are not short integers) go through encoding/json
// itself, so the bytes are the same.
func appendCanon(dst, raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return dst, jsonscan.ErrSyntax
	}
	switch raw[0] {
	case '{':
		ms, err := jsonscan.Members(raw)
		if err != nil {
			return dst, err
		}
		ms = lastOfEach(ms)
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, m.Name)
			dst = append(dst, ':')
			if dst, err = appendCanon(dst, m.Value); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case '[':
		es, err := jsonscan.Elements(raw)
		if err != nil {
			return dst, err
		}
		dst = append(dst, '[')
		for i, e := range es {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendCanon(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' && plain(raw[1:len(raw)-1]) {
			return append(dst, raw...), nil
		}
	case 't', 'f', 'n':
		return append(dst, raw...), nil
	default:
		if shortInt(raw) {
			return append(dst, raw...), nil
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return dst, err
	}
	b, err := json.Marshal(v)
	return append(dst, b...), err
}

// lastOfEach sorts members by name, keeping only the last of each name (as
// decoding into a map does).
func lastOfEach(ms []jsonscan.Member) []jsonscan.Member {
	slices.SortStableFunc(ms, func(a, b jsonscan.Member) int { return strings.Compare(a.Name, b.Name) })
	out := ms[:0]
	for i, m := range ms {
		if i+1 < len(ms) && ms[i+1].Name == m.Name {
			continue
		}
		out = append(out, m)
	}
	return out
}

// appendString appends s as encoding/json encodes a string.
func appendString(dst []byte, s string) []byte {
	if plain([]byte(s)) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s)
	return append(dst, b...)
}

// plain reports whether the bytes of a string need no escaping by
// encoding/json: printable ASCII other than the quote, the backslash and
// the HTML-special <, > and &.
func plain(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// shortInt reports whether a JSON number is an integer of at most 15 digits
// without a leading zero: a float64 holds it exactly and encoding/json
// writes it back as written.
func shortInt(raw []byte) bool {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || d[0] == '0' && len(d) > 1 {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
