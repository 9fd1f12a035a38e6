package dataplane

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/internal/chat"
)

// MaxUpstreamBody bounds a non-streamed upstream answer a front end buffers
// to add routing_metadata. Chat answers are far smaller; a larger one is a
// broken backend, not something to hold in memory.
const MaxUpstreamBody = 64 << 20

// MaxEventBytes bounds one SSE event; chat chunks are a few hundred bytes.
const MaxEventBytes = 8 << 20

// ErrEventTooLarge is reported for an SSE event over MaxEventBytes.
var ErrEventTooLarge = fmt.Errorf("an SSE event exceeds %d bytes", MaxEventBytes)

// AnswerInfo is what a front end reads of a non-streamed upstream answer.
type AnswerInfo struct {
	// Object: the body is a valid JSON object; anything else is relayed
	// untouched.
	Object bool
	// Empty: the object has no members.
	Empty bool
	// HasMetadata: the object already has routing_metadata (another Junction
	// upstream).
	HasMetadata bool
	Usage       *cost.Usage
}

// ParseAnswer reads a chat.completion's usage without decoding the rest:
// the body is validated and its top-level members are split (one walk), and only usage is
// decoded (the last one when repeated, as encoding/json keeps it).
func ParseAnswer(body []byte) AnswerInfo {
	var a AnswerInfo
	var buf [16]chat.Member
	members, ok := chat.ValidObject(buf[:0], body) // validated and split in one walk
	if !ok {
		return a // not valid JSON, or valid JSON that is not an object
	}
	a.Object, a.Empty = true, len(members) == 0
	var usage []byte
	for _, m := range members {
		switch {
		case m.Is("usage"):
			usage = m.Value
		case m.Is("routing_metadata"):
			a.HasMetadata = true
		}
	}
	if usage != nil {
		a.Usage = decodeUsage(usage)
	}
	return a
}

// decodeUsage is json.Unmarshal of usage into a *cost.Usage (nil for null),
// with the common shape, an object whose token counts are plain integers,
// read directly: encoding/json's reflection was a twentieth of the gateway's
// CPU per request. Anything else (a differently cased key, which
// encoding/json would match, a fraction, a wrong type) takes encoding/json.
func decodeUsage(raw []byte) *cost.Usage {
	if u, ok := plainUsage(raw); ok {
		return u
	}
	var u *cost.Usage
	_ = json.Unmarshal(raw, &u)
	return u
}

func plainUsage(raw []byte) (*cost.Usage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var buf [16]chat.Member
	members, err := chat.Members(buf[:0], raw)
	if err != nil {
		return nil, false
	}
	u := &cost.Usage{}
	for _, m := range members {
		var dst *int64
		switch string(m.Key) {
		case "prompt_tokens":
			dst = &u.PromptTokens
		case "completion_tokens":
			dst = &u.CompletionTokens
		case "total_tokens":
			dst = &u.TotalTokens
		case "cache_creation_input_tokens":
			dst = &u.CacheCreationInputTokens
		case "prompt_tokens_details":
			if string(m.Value) != "null" {
				return nil, false // cached_tokens, priced apart: encoding/json reads it
			}
			continue
		default:
			if !plainOtherKey(m.Key, "prompt_tokens", "completion_tokens", "total_tokens", "cache_creation_input_tokens", "prompt_tokens_details") {
				return nil, false
			}
			continue
		}
		n, ok := plainInt(m.Value)
		if !ok {
			return nil, false
		}
		*dst = n
	}
	return u, true
}

// plainInt reads a JSON number that is an integer in int64's range.
func plainInt(v []byte) (int64, bool) {
	i := 0
	if len(v) > 0 && v[0] == '-' {
		i = 1
	}
	if i == len(v) || len(v)-i > 18 { // 18 digits always fit
		return 0, false
	}
	var n int64
	for _, c := range v[i:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if i == 1 {
		n = -n
	}
	return n, true
}

// WithRoutingMetadata returns the JSON object body with routing_metadata
// added. The upstream's bytes are kept as sent (field order included) by
// splicing the new member in before the closing brace; only an answer that
// already has routing_metadata (another Junction upstream) is re-encoded, so
// ours replaces it. Without metadata, or for a body that is not an object,
// body is returned as it is. body is not modified.
func WithRoutingMetadata(body []byte, a AnswerInfo, md json.RawMessage) []byte {
	return withMetadata(body, a, md, false)
}

// SpliceRoutingMetadata is WithRoutingMetadata reusing body's memory: its
// closing brace and what follows are overwritten and its spare capacity used,
// so a front end that owns the buffer saves a copy of every answer. body must
// not be read afterwards.
func SpliceRoutingMetadata(body []byte, a AnswerInfo, md json.RawMessage) []byte {
	return withMetadata(body, a, md, true)
}

func withMetadata(body []byte, a AnswerInfo, md json.RawMessage, inPlace bool) []byte {
	if len(md) == 0 || !a.Object {
		return body
	}
	if a.HasMetadata {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
			return body
		}
		// A copy, so that md does not escape: callers build it in a
		// stack buffer for the common case below.
		obj["routing_metadata"] = bytes.Clone(md)
		if b, err := json.Marshal(obj); err == nil {
			return b
		}
		return body
	}
	trimmed := bytes.TrimRight(body, " \t\r\n")
	end := len(trimmed) - 1
	if end < 0 || trimmed[end] != '}' {
		return body
	}
	var out []byte
	if inPlace {
		out = trimmed[:end]
	} else {
		out = make([]byte, 0, len(body)+len(md)+24)
		out = append(out, trimmed[:end]...)
	}
	if !a.Empty {
		out = append(out, ',')
	}
	out = append(out, `"routing_metadata":`...)
	out = append(out, md...)
	out = append(out, '}', '\n')
	return out
}

// ChunkUsage returns a chunk's usage, and whether the chunk carries nothing
// else (no choices): the final usage chunk of include_usage.
func ChunkUsage(data []byte) (u *cost.Usage, usageOnly bool) {
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return nil, false // most chunks: skip decoding
	}
	var c struct {
		Choices []json.RawMessage `json:"choices"`
		Usage   *cost.Usage       `json:"usage"`
	}
	if json.Unmarshal(data, &c) != nil || c.Usage == nil {
		return nil, false
	}
	return c.Usage, len(c.Choices) == 0
}

// IsEventStream reports whether a Content-Type value is text/event-stream.
func IsEventStream(contentType string) bool {
	const p = "text/event-stream"
	return len(contentType) >= len(p) && bytes.EqualFold([]byte(contentType[:len(p)]), []byte(p))
}

// EventScanner splits a text/event-stream that arrives in arbitrary pieces
// into events, the way the gateway's reader does: each event is its lines,
// each ended by \n (a \r\n line end becomes \n), then a blank line; blank lines between events are dropped. An incomplete event is kept
// until the piece that completes it, bounded by MaxEventBytes. The zero value
// is ready to use.
type EventScanner struct {
	pending []byte // the unfinished tail, as received
	event   []byte // the current event as relayed
	data    []byte // the current event's data lines joined by \n
}

// Feed scans piece and calls fn for each event it completes, in order, with
// the event as relayed and its data (nil for an event without a data line,
// such as a keep-alive comment). Both are valid only during the call. fn
// returning false stops the scan; the rest of piece is dropped. Feed returns
// ErrEventTooLarge when the unfinished tail grows past MaxEventBytes (the
// tail is then discarded).
func (s *EventScanner) Feed(piece []byte, fn func(event, data []byte) bool) error {
	buf := piece
	if len(s.pending) > 0 {
		s.pending = append(s.pending, piece...)
		buf = s.pending
	}
	consumed := 0
	for {
		end, ok := eventEnd(buf, consumed)
		if !ok {
			break
		}
		ev, data, has := s.split(buf[consumed:end])
		consumed = end
		if ev == nil {
			continue // only blank lines
		}
		if !has {
			data = nil
		}
		if !fn(ev, data) {
			consumed = len(buf)
			break
		}
	}
	rest := buf[consumed:]
	if len(rest) > MaxEventBytes {
		s.pending = s.pending[:0]
		return ErrEventTooLarge
	}
	// Keep the tail; copy it out of piece (which the caller may reuse), or
	// slide it to the front of pending.
	s.pending = append(s.pending[:0], rest...)
	return nil
}

// Pending is the unfinished tail held since the last complete event.
func (s *EventScanner) Pending() []byte { return s.pending }

// Flush returns the unfinished tail as a final event (as the gateway's
// reader returns an event the stream ended without a blank line after), and
// empties it. ok is false when the tail holds nothing but blank lines.
func (s *EventScanner) Flush() (event, data []byte, ok bool) {
	tail := s.pending
	s.pending = nil
	ev, d, has := s.split(tail)
	if ev == nil {
		return nil, nil, false
	}
	if !has {
		d = nil
	}
	return ev, d, true
}

// eventEnd finds the end of the next event in b from i: the index just past
// the blank line that ends it. Lines end at \n (a \r before it is dropped,
// as the gateway's reader does); leading blank lines belong to the event that
// follows them.
func eventEnd(b []byte, i int) (int, bool) {
	sawLine := false // a non-blank line of the event has been seen
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0, false // the line is not complete yet
		}
		line := b[i : i+j]
		i += j + 1
		blank := len(line) == 0 || (len(line) == 1 && line[0] == '\r')
		if blank && sawLine {
			return i, true
		}
		if !blank {
			sawLine = true
		}
	}
	return 0, false
}

// split turns the raw bytes of one event (with its line ends and blank lines)
// into the relayed form and its data. ev is nil when there are no lines.
func (s *EventScanner) split(raw []byte) (ev, data []byte, hasData bool) {
	s.event, s.data = s.event[:0], s.data[:0]
	lines := 0
	for len(raw) > 0 {
		var line []byte
		if j := bytes.IndexByte(raw, '\n'); j >= 0 {
			line, raw = raw[:j], raw[j+1:]
		} else {
			line, raw = raw, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			continue
		}
		lines++
		s.event = append(append(s.event, line...), '\n')
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v, _ = bytes.CutPrefix(v, []byte(" "))
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, v...)
			hasData = true
		}
	}
	if lines == 0 {
		return nil, nil, false
	}
	s.event = append(s.event, '\n')
	return s.event, s.data, hasData
}
