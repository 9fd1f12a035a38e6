// Package chat parses and rewrites OpenAI chat-completion request bodies. It keeps
// every top-level field it does not understand, so that a rewritten request
// forwards what the client sent, changed only where routing changed it.
//
// Both data-plane front ends (the gateway and ext_proc) use it, so a body is
// judged the same way whichever way it arrived.
package chat

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Request is a parsed chat-completion request.
type Request struct {
	// Fields holds every top-level field as sent, including those below.
	Fields   map[string]json.RawMessage
	Model    string
	Messages []Message
	Stream   bool
	// IncludeUsage is stream_options.include_usage as the client sent it.
	IncludeUsage bool
	// Tools is the number of tools the client offered.
	Tools int

	// compactValues are values Parse or Set put in Fields that are known to
	// be valid and compact (Parse's walk validated them and saw no
	// whitespace in them; Set wrote them so), which Encode copies without
	// checking them again. A value is recognised by its address and length:
	// Fields' values are never edited in place (Parse's body must not be
	// modified afterwards), so a value with both is one of these bytes.
	compactValues [12]valueSpan
	nCompact      int
}

// valueSpan is where a value's bytes are.
type valueSpan struct {
	at *byte
	n  int
}

// noteCompact records v as valid and compact, while there is room.
func (r *Request) noteCompact(v []byte) {
	if r.nCompact < len(r.compactValues) && len(v) > 0 {
		r.compactValues[r.nCompact] = valueSpan{unsafe.SliceData(v), len(v)}
		r.nCompact++
	}
}

// knownCompact reports whether v is one of the values noteCompact recorded.
func (r *Request) knownCompact(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	at := unsafe.SliceData(v)
	for _, s := range r.compactValues[:r.nCompact] {
		if s.at == at && s.n == len(v) {
			return true
		}
	}
	return false
}

// Message is one message with its content flattened to text (text parts joined
// by newlines; image and audio parts are not text and are skipped).
type Message struct {
	Role    string
	Content string
}

// Error is a request the client must fix; Param names the offending field the
// way OpenAI errors do ("messages[2].content").
type Error struct {
	Param   string
	Message string
}

func (e *Error) Error() string { return e.Message }

func badf(param, format string, args ...any) *Error {
	return &Error{Param: param, Message: fmt.Sprintf(format, args...)}
}

// validRole reports whether role is one a message may have.
func validRole(role string) bool {
	switch role {
	case "system", "developer", "user", "assistant", "tool", "function":
		return true
	}
	return false
}

// Parse reads a chat-completion body. Errors are *Error.
//
// The body is validated once and then split without decoding it again: the
// values in Fields are sub-slices of body (so the caller must not modify body
// afterwards), and the common shapes of model, messages and the scalar
// parameters are read directly. Anything less common goes through
// encoding/json exactly as before, so every body is accepted or refused, with
// the same message, as the plain encoding/json reading would.
func Parse(body []byte) (*Request, error) {
	if !utf8.Valid(body) {
		return nil, badf("", "the request body is not valid UTF-8")
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, badf("", "the request body is empty: send a JSON object with model and messages")
	}
	if body[0] != '{' {
		return nil, badf("", "the request body must be a JSON object")
	}
	var buf [16]Member
	members, compactMask, ok := validObject(buf[:0], body) // validated and split in one walk; body[0] is '{'
	if !ok {
		// Decode only to report the syntax error the way encoding/json does.
		var fields map[string]json.RawMessage
		err := json.Unmarshal(body, &fields)
		if err == nil {
			err = errStructure
		}
		return nil, badf("", "the request body is not valid JSON: %s", jsonErrText(err))
	}
	fields := make(map[string]json.RawMessage, len(members))
	r := &Request{Fields: fields}
	// The fields read below are picked up on the way (a member's value is
	// never nil, so nil is absent) instead of looked up in the map after.
	var known knownFields
	for k, m := range members {
		// A repeated key keeps its last value, as with encoding/json.
		name := m.Name()
		fields[name] = m.Value
		known.note(name, m.Value)
		if k < 64 && compactMask&(1<<k) != 0 {
			r.noteCompact(m.Value)
		}
	}
	raw := known.model
	if raw == nil || isNull(raw) {
		return nil, badf("model", "you must provide a model parameter")
	}
	if s, ok := plainString(raw); ok {
		r.Model = s
	} else if err := json.Unmarshal(raw, &r.Model); err != nil {
		return nil, badf("model", "model must be a string")
	}
	if strings.TrimSpace(r.Model) == "" {
		return nil, badf("model", "model must not be empty")
	}
	raw = known.messages
	if raw == nil || isNull(raw) {
		return nil, badf("messages", "missing required parameter: messages")
	}
	var msgBuf [8]rawMessage // the messages are only read here: most requests' fit
	msgs, ok := scanMessages(msgBuf[:0], raw)
	if !ok {
		var decoded []rawMessage
		if err := json.Unmarshal(raw, &decoded); err != nil {
			return nil, badf("messages", "messages must be an array of message objects")
		}
		msgs = decoded
	}
	if len(msgs) == 0 {
		return nil, badf("messages", "messages must contain at least one message")
	}
	r.Messages = make([]Message, len(msgs))
	for i, m := range msgs {
		if m.Role == "" {
			return nil, badf(fmt.Sprintf("messages[%d].role", i), "messages[%d] is missing its role", i)
		}
		if !validRole(m.Role) {
			return nil, badf(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		text, err := flatten(m.Content)
		if err != nil {
			return nil, badf(fmt.Sprintf("messages[%d].content", i), "messages[%d].content %s", i, err)
		}
		r.Messages[i] = Message{Role: m.Role, Content: text}
	}
	if raw := known.stream; raw != nil && !isNull(raw) {
		switch string(raw) {
		case "true":
			r.Stream = true
		case "false":
		default:
			if err := json.Unmarshal(raw, &r.Stream); err != nil {
				return nil, badf("stream", "stream must be a boolean")
			}
		}
	}
	if raw := known.streamOptions; raw != nil && !isNull(raw) {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(raw, &so); err != nil {
			return nil, badf("stream_options", "stream_options must be an object")
		}
		r.IncludeUsage = so.IncludeUsage
	}
	if raw := known.tools; raw != nil && !isNull(raw) {
		var tools []json.RawMessage
		if err := json.Unmarshal(raw, &tools); err != nil {
			return nil, badf("tools", "tools must be an array")
		}
		r.Tools = len(tools)
	}
	for k, name := range [...]string{"max_tokens", "max_completion_tokens", "n"} {
		if raw := known.integers[k]; raw != nil && !isNull(raw) && !smallInteger(raw) {
			var n int64
			if err := json.Unmarshal(raw, &n); err != nil {
				return nil, badf(name, "%s must be an integer", name)
			}
		}
	}
	if raw := known.temperature; raw != nil && !isNull(raw) && !smallInteger(raw) {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, badf("temperature", "temperature must be a number")
		}
	}
	return r, nil
}

// knownFields are the values of the body fields Parse reads (nil: absent),
// the last of each name as in Fields.
type knownFields struct {
	model, messages, stream, streamOptions, tools, temperature []byte
	integers                                                   [3][]byte // max_tokens, max_completion_tokens, n
}

func (k *knownFields) note(name string, v []byte) {
	switch name {
	case "model":
		k.model = v
	case "messages":
		k.messages = v
	case "stream":
		k.stream = v
	case "stream_options":
		k.streamOptions = v
	case "tools":
		k.tools = v
	case "max_tokens":
		k.integers[0] = v
	case "max_completion_tokens":
		k.integers[1] = v
	case "n":
		k.integers[2] = v
	case "temperature":
		k.temperature = v
	}
}

// smallInteger reports whether raw is a JSON integer literal that fits an
// int64 for certain (at most 18 digits), which encoding/json would decode
// into an int64 or a float64 without error.
func smallInteger(raw []byte) bool {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// scanMessages reads the usual messages array (objects whose role is a plain
// string) without encoding/json. ok is false for anything else, which the
// caller then decodes with encoding/json: non-object elements, a role that is
// not a plain string, or a key that only differs from role or content in case
// or needs unescaping (encoding/json matches those to the fields too).
//
// The messages are appended to dst (a caller's buffer).
func scanMessages(dst []rawMessage, raw []byte) (msgs []rawMessage, ok bool) {
	msgs = dst
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return msgs, true
	}
	var buf [8]Member
	for {
		// raw is valid JSON (Parse validated the body): the object's members
		// and its end come from one walk.
		if raw[i] != '{' {
			return nil, false
		}
		members, e, err := membersAt(buf[:0], raw, i)
		if err != nil {
			return nil, false
		}
		var m rawMessage
		for _, mb := range members {
			switch string(mb.Key) {
			case "role":
				s, ok := plainString(mb.Value)
				if !ok {
					return nil, false
				}
				m.Role = s
			case "content":
				m.Content = mb.Value
			default:
				if !asciiKey(mb.Key) || equalFoldASCII(mb.Key, "role") || equalFoldASCII(mb.Key, "content") {
					return nil, false
				}
			}
		}
		msgs = append(msgs, m)
		i = skipWS(raw, e)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = skipWS(raw, i+1)
		case ']':
			return msgs, true
		default:
			return nil, false
		}
	}
}

// asciiKey reports whether a key literal is printable ASCII with no escapes.
func asciiKey(k []byte) bool {
	for _, c := range k {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

func equalFoldASCII(k []byte, s string) bool {
	if len(k) != len(s) {
		return false
	}
	for i := range k {
		c := k[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

type rawMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// ContentText flattens one message content value as Parse does: a string as
// is, null as "", an array of parts as the text of its text parts joined by
// newlines. Plugins that rewrite a message use it to keep Messages in step.
func ContentText(raw []byte) (string, error) {
	return flatten(bytes.TrimSpace(raw))
}

// flatten turns a content value (string, null, or array of parts) into text.
func flatten(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || isNull(raw) {
		return "", nil
	}
	switch raw[0] {
	case '"':
		if s, ok := plainString(raw); ok {
			return s, nil
		}
		// Escapes (a newline is one) are common in prompts: decode them
		// without encoding/json's reflection, which costs about a
		// microsecond a message.
		s, err := unquote(raw)
		if err != nil {
			return "", fmt.Errorf("is not a valid string")
		}
		return s, nil
	case '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", fmt.Errorf("must be a string or an array of content parts")
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Text == nil {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(*p.Text)
		}
		return b.String(), nil
	default:
		return "", fmt.Errorf("must be a string or an array of content parts")
	}
}

func isNull(raw json.RawMessage) bool {
	if n := len(raw); n < 4 || (raw[0] > ' ' && raw[0] < 0x80 && raw[n-1] > ' ' && raw[n-1] < 0x80) {
		return string(raw) == "null" // no whitespace to trim (a parsed value has none)
	}
	return string(bytes.TrimSpace(raw)) == "null"
}

func jsonErrText(err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	return err.Error()
}

// LastUserText returns the content of the last user message, or of the last
// message of any role when there is no user message.
func (r *Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	if len(r.Messages) > 0 {
		return r.Messages[len(r.Messages)-1].Content
	}
	return ""
}

// UserTexts returns the content of every user message, oldest first, and
// each one's index in Messages; the indexes are nil while every user message
// is at its own index (a request of user messages only), which is the common
// case and needs no slice. Safety scans read these (see pii.Texts).
func (r *Request) UserTexts() (texts []string, at []int) {
	for i, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		texts = append(texts, m.Content)
		if i != len(texts)-1 || at != nil {
			// Only needed once a user message is not at its own index.
			if at == nil {
				at = make([]int, len(texts)-1, len(r.Messages))
				for k := range at {
					at[k] = k
				}
			}
			at = append(at, i)
		}
	}
	return texts, at
}

// Set replaces a top-level field with v encoded as JSON.
func (r *Request) Set(key string, v any) error {
	if s, ok := v.(string); ok && plainKey(s) {
		// What json.Marshal writes for a string that needs no escaping.
		b := make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
		r.Fields[key] = b
		r.noteCompact(b)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	r.Fields[key] = b
	r.noteCompact(b) // json.Marshal writes valid, compact JSON
	return nil
}

// Delete removes a top-level field.
func (r *Request) Delete(key string) { delete(r.Fields, key) }

// Encode writes the request with its current fields. The output is what
// json.Marshal(r.Fields) writes (keys sorted, values compacted, <, > and &
// escaped), without reflection: a value that is valid and compact already is
// copied (one Parse or Set wrote without checking it again), any other is
// checked and compacted with json.Compact, and an invalid one is the same
// *json.MarshalerError.
func (r *Request) Encode() ([]byte, error) {
	// The fields sorted by key, taken from the map once (a request has a
	// handful: the buffer is on the stack for up to 16).
	var buf [16]encodeField
	fields := buf[:0]
	n := 2
	for k, v := range r.Fields {
		fields = append(fields, encodeField{k, v})
		n += len(k) + len(v) + 4
	}
	slices.SortFunc(fields, func(a, b encodeField) int { return strings.Compare(a.key, b.key) })
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i, f := range fields {
		if i > 0 {
			out = append(out, ',')
		}
		if plainKey(f.key) {
			out = append(out, '"')
			out = append(out, f.key...)
			out = append(out, '"')
		} else {
			q, err := json.Marshal(f.key)
			if err != nil {
				return nil, err
			}
			out = append(out, q...)
		}
		out = append(out, ':')
		v := f.value
		if v == nil {
			out = append(out, "null"...)
			continue
		}
		if r.knownCompact(v) || compact(v) { // nearly every value: parsed or spliced in already compact
			out = append(out, v...)
			continue
		}
		w := bytes.NewBuffer(out)
		if err := json.Compact(w, v); err != nil {
			return nil, &json.MarshalerError{Type: rawMessageType, Err: err}
		}
		out = w.Bytes()
	}
	out = append(out, '}')
	if needsHTMLEscape(out) {
		var esc bytes.Buffer
		esc.Grow(len(out) + 16)
		json.HTMLEscape(&esc, out)
		out = esc.Bytes()
	}
	return out, nil
}

// encodeField is one of the fields Encode writes.
type encodeField struct {
	key   string
	value json.RawMessage
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// plainKey reports whether json.Marshal writes k as itself between quotes.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// needsHTMLEscape reports whether b holds a byte json.HTMLEscape rewrites:
// <, > and &, or the first byte of U+2028 and U+2029.
func needsHTMLEscape(b []byte) bool {
	// Eight bytes at a time, then the tail.
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		lt, gt, amp, e2 := w^(ones*'<'), w^(ones*'>'), w^(ones*'&'), w^(ones*0xe2)
		if ((lt-ones)&^lt|(gt-ones)&^gt|(amp-ones)&^amp|(e2-ones)&^e2)&highs != 0 {
			break // one of them is in this word: the loop below finds it
		}
		b = b[8:]
	}
	for _, c := range b {
		if c == '<' || c == '>' || c == '&' || c == 0xe2 {
			return true
		}
	}
	return false
}
