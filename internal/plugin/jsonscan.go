package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/junction-router/junction/internal/chat"
)

// This file holds the small byte-level JSON helpers the stage uses to edit a
// request without decoding and re-encoding all of it: a
// message that is not changed keeps its exact bytes, and editing the first
// message of a long conversation costs only that message.

var errBadJSON = errors.New("malformed JSON")

// The structural scanning (where a value ends) is internal/chat's; this file
// adds the edits plugins need on top of it.
func skipWS(b []byte, i int) int { return chat.SkipSpace(b, i) }

func valueEnd(b []byte, i int) (int, error) { return chat.ValueEnd(b, i) }

// arrayPrefix splits off at most max elements of a JSON array (all of them when
// max < 0). rest is the array's remaining bytes after the last element taken
// (", …]" or "]"), so "[" + join(elems, ",") + rest is the array again.
func arrayPrefix(arr []byte, max int) (elems []json.RawMessage, rest []byte, err error) {
	return appendArrayPrefix(nil, arr, max)
}

// appendArrayPrefix is arrayPrefix appending the elements to elems, which
// lets a caller keep a short list on its stack.
func appendArrayPrefix(elems []json.RawMessage, arr []byte, max int) (_ []json.RawMessage, rest []byte, err error) {
	i := skipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, nil, fmt.Errorf("not a JSON array")
	}
	i = skipWS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return elems, arr[i:], nil
	}
	taken := len(elems)
	after := i // where rest begins when no element is taken (never used for a non-empty array with max != 0)
	for max < 0 || len(elems)-taken < max {
		e, err := valueEnd(arr, i)
		if err != nil {
			return nil, nil, err
		}
		elems = append(elems, json.RawMessage(arr[i:e]))
		after = e
		i = skipWS(arr, e)
		if i >= len(arr) {
			return nil, nil, errBadJSON
		}
		if arr[i] == ']' {
			break
		}
		if arr[i] != ',' {
			return nil, nil, errBadJSON
		}
		i = skipWS(arr, i+1)
	}
	return elems, arr[after:], nil
}

// joinArray writes "[" + elems joined by "," + rest.
func joinArray(elems []json.RawMessage, rest []byte) json.RawMessage {
	n := 1 + len(rest)
	for _, e := range elems {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	if len(elems) == 0 {
		// rest is "]" (possibly after whitespace) or ", x]" when every taken
		// element was removed; drop a leading comma.
		r := bytes.TrimLeft(rest, " \t\r\n")
		if len(r) > 0 && r[0] == ',' {
			rest = r[1:]
		}
	}
	return append(out, rest...)
}

// member is one member of a JSON object: its key (the literal's contents,
// still escaped) and where its value lies.
type member struct {
	key        []byte
	escaped    bool // key holds a backslash escape
	start, end int
}

// is reports whether the member's key is name.
func (m member) is(name string) bool {
	if !m.escaped {
		return string(m.key) == name
	}
	var s string
	return json.Unmarshal(append(append([]byte{'"'}, m.key...), '"'), &s) == nil && s == name
}

// objectMembers lists the members of a JSON object in document order.
func objectMembers(obj []byte) ([]member, error) { return appendMembers(nil, obj) }

// appendMembers is objectMembers appending to ms (a caller's stack buffer:
// a message has a handful of members).
func appendMembers(ms []member, obj []byte) ([]member, error) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return ms, nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return nil, errBadJSON
		}
		ke, err := valueEnd(obj, i) // obj[i] is a quote: the end of the key string
		if err != nil {
			return nil, err
		}
		key := obj[i+1 : ke-1]
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return nil, errBadJSON
		}
		i = skipWS(obj, i+1)
		ve, err := valueEnd(obj, i)
		if err != nil {
			return nil, err
		}
		ms = append(ms, member{key: key, escaped: bytes.IndexByte(key, '\\') >= 0, start: i, end: ve})
		i = skipWS(obj, ve)
		if i >= len(obj) {
			return nil, errBadJSON
		}
		if obj[i] == '}' {
			return ms, nil
		}
		if obj[i] != ',' {
			return nil, errBadJSON
		}
		i = skipWS(obj, i+1)
	}
}

// lookup returns the raw value of key in obj (nil when absent).
func lookup(obj []byte, ms []member, key string) json.RawMessage {
	for _, m := range ms {
		if m.is(key) {
			return obj[m.start:m.end]
		}
	}
	return nil
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// unquote decodes a JSON string literal, without reflection when it has no
// escapes, and without an allocation for the keys and roles chat bodies
// repeat (chat.Unquote).
func unquote(lit []byte) (string, error) { return chat.Unquote(lit) }
