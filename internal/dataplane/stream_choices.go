package dataplane

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/sdk/jsonscan"
)

// decodeChoices decodes a chunk's choices array into dst as
// json.Unmarshal(raw, &dst) would, without reflection for the shape nearly
// every chunk has: [{"index":0,"delta":{"content":"…"},"finish_reason":null}].
// Anything else — tool calls, a key spelt with escapes or in another case
// (encoding/json matches those to the fields too), a non-integer index —
// goes to encoding/json, so the result is always what it would give.
// Decoding each chunk's choices with reflection was most of the cost of
// assembling a streamed answer (about 5 µs a chunk).
func decodeChoices(raw []byte, dst []streamChoice) ([]streamChoice, error) {
	if out, ok := scanChoices(raw, dst); ok {
		return out, nil
	}
	clear(dst[:cap(dst)])
	dst = dst[:0]
	err := json.Unmarshal(raw, &dst)
	return dst, err
}

func scanChoices(raw []byte, dst []streamChoice) ([]streamChoice, bool) {
	// encoding/json validates the whole value before decoding any of it.
	if !chat.Valid(raw) {
		return nil, false
	}
	elems, err := jsonscan.Elements(raw)
	if err != nil {
		return nil, false
	}
	var buf [6]chat.Member
	for _, e := range elems {
		members, err := chat.Members(buf[:0], e)
		if err != nil {
			return nil, false
		}
		var c streamChoice
		for _, m := range members {
			switch key := string(m.Key); key {
			case "index":
				if isNull(m.Value) {
					continue
				}
				n, err := strconv.Atoi(string(m.Value))
				if err != nil {
					return nil, false
				}
				c.Index = n
			case "delta":
				if !scanDelta(m.Value, &c) {
					return nil, false
				}
			case "finish_reason":
				if !scanStringPtr(m.Value, &c.FinishReason) {
					return nil, false
				}
			default:
				if !plainOtherKey(m.Key, "index", "delta", "finish_reason") {
					return nil, false
				}
			}
		}
		dst = append(dst, c)
	}
	return dst, true
}

func scanDelta(v []byte, c *streamChoice) bool {
	if isNull(v) {
		return true
	}
	var buf [6]chat.Member
	members, err := chat.Members(buf[:0], v)
	if err != nil {
		return false
	}
	d := &c.Delta
	for _, m := range members {
		switch string(m.Key) {
		case "role":
			if isNull(m.Value) {
				continue
			}
			s, ok := scanString(m.Value)
			if !ok {
				return false
			}
			d.Role = s
		case "content":
			if !scanStringPtr(m.Value, &d.Content) {
				return false
			}
		case "reasoning_content":
			if !scanStringPtr(m.Value, &d.ReasoningContent) {
				return false
			}
		case "refusal":
			if !scanStringPtr(m.Value, &d.Refusal) {
				return false
			}
		case "tool_calls":
			if !isNull(m.Value) {
				return false // rare: encoding/json merges them
			}
		default:
			if !plainOtherKey(m.Key, "role", "content", "reasoning_content", "refusal", "tool_calls") {
				return false
			}
		}
	}
	return true
}

// scanStringPtr sets *dst to a JSON string's value, or to nil for null, as
// encoding/json does.
func scanStringPtr(v []byte, dst **string) bool {
	if isNull(v) {
		*dst = nil
		return true
	}
	s, ok := scanString(v)
	if !ok {
		return false
	}
	*dst = &s
	return true
}

func isNull(v []byte) bool { return string(v) == "null" } // chat.Members trims values

func scanString(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s, err := jsonscan.Unquote(v)
	return s, err == nil
}

// plainOtherKey reports whether a key that is none of known can be ignored
// as encoding/json would: written without escapes and not one of known in
// another case.
func plainOtherKey(key []byte, known ...string) bool {
	if bytes.IndexByte(key, '\\') >= 0 {
		return false
	}
	for _, k := range known {
		if bytes.EqualFold(key, []byte(k)) {
			return false
		}
	}
	return true
}
