package sdk

import (
	"strings"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/sdk/jsonscan"
)

// Request is the typed view of the routed request a handler reads. It is
// valid only during the handler call: its strings and byte slices point
// into the buffer the host wrote the request to, which the next request
// overwrites. Copy what you keep (strings.Clone, bytes.Clone). Parts are
// decoded when first asked for.
type Request struct {
	b               []byte
	phase           abi.Phase
	mode            abi.Mode
	decision, model string
	at              [5]int // headers, messages, signals, body, status
	body, respBody  []byte
	status          uint32
	host            Host // the native host (HandleHost); nil in a module

	headers             []Header
	messages            []Message
	signals             []Signal
	hdone, mdone, sdone bool
}

// Message is one chat message: role and content flattened to text.
type Message = abi.Message

// Header is one request header value.
type Header = abi.Header

// Signal is a matched signal.
type Signal = abi.Signal

// Mode is the request's mode. In preview no backend host function works; in
// probe nothing is persisted.
func (r *Request) Mode() Mode { return r.mode }

// Decision is the matched decision's name.
func (r *Request) Decision() string { return r.decision }

// Model is the selected model ("" when none was selected).
func (r *Request) Model() string { return r.model }

// Messages are the chat messages in order, content flattened to text.
func (r *Request) Messages() []Message {
	if !r.mdone {
		r.messages, r.mdone = decodeMessages(r.b, r.at[1], r.messages[:0]), true
	}
	return r.messages
}

// NumMessages is the number of messages, without decoding them.
func (r *Request) NumMessages() int {
	if r.mdone { // decoded, or given as values (HandleRequest)
		return len(r.messages)
	}
	n, _, _ := count(r.b, r.at[1])
	return n
}

// Message returns messages[i], decoding only the messages before it.
func (r *Request) Message(i int) (Message, bool) {
	if r.mdone {
		if i < 0 || i >= len(r.messages) {
			return Message{}, false
		}
		return r.messages[i], true
	}
	n, p, ok := count(r.b, r.at[1])
	if !ok || i < 0 || i >= n {
		return Message{}, false
	}
	var role, content string
	for k := 0; k <= i; k++ {
		if role, p, ok = str(r.b, p); !ok {
			return Message{}, false
		}
		if content, p, ok = str(r.b, p); !ok {
			return Message{}, false
		}
	}
	return Message{Role: role, Content: content}, true
}

// LastUserMessage is the text of the last message with role user ("" if none).
func (r *Request) LastUserMessage() string {
	msgs := r.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// Headers are the upstream request's headers (canonical names).
func (r *Request) Headers() []Header {
	if !r.hdone {
		r.headers, r.hdone = decodeHeaders(r.b, r.at[0], r.headers[:0]), true
	}
	return r.headers
}

// Header returns the first value of the named header (case-insensitive).
func (r *Request) Header(name string) (string, bool) {
	for _, h := range r.Headers() {
		if strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// Signals are the signals that matched.
func (r *Request) Signals() []Signal {
	if !r.sdone {
		r.signals, r.sdone = decodeSignals(r.b, r.at[2], r.signals[:0]), true
	}
	return r.signals
}

// Matched reports whether the signal kind/name matched.
func (r *Request) Matched(kind, name string) bool {
	for _, s := range r.Signals() {
		if s.Kind == kind && s.Name == name {
			return true
		}
	}
	return false
}

// Body is the request body (JSON) as it will be sent upstream, before this
// plugin's mutations.
func (r *Request) Body() []byte { return r.body }

// Field returns the raw JSON of the body's top-level field name.
func (r *Request) Field(name string) ([]byte, bool) { return jsonscan.Field(r.body, name) }

// MessageJSON returns the raw JSON of messages[i] as it is in the body.
func (r *Request) MessageJSON(i int) ([]byte, bool) {
	msgs, ok := jsonscan.Field(r.body, "messages")
	if !ok {
		return nil, false
	}
	return jsonscan.Element(msgs, i)
}

// Response is the view of a successful upstream answer in the response
// phase, along with the request it answers.
type Response struct {
	*Request
}

// Status is the upstream HTTP status.
func (r *Response) Status() int { return int(r.status) }

// Body is the upstream answer's body.
func (r *Response) Body() []byte { return r.respBody }

// RequestBody is the body that was sent upstream.
func (r *Response) RequestBody() []byte { return r.body }
