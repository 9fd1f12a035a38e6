package sdk

import (
	"strings"

	"github.com/junction-router/junction/hostapi/abi"
)

// Request is the typed view of the routed request a handler reads. It is
// valid only during the handler call: its strings and byte slices point
// into the buffer the host wrote the request to, which the next request
// overwrites. Copy what you keep (strings.Clone, bytes.Clone).
type Request struct {
	r abi.Request
}

// Message is one chat message: role and content flattened to text.
type Message = abi.Message

// Header is one request header value.
type Header = abi.Header

// Signal is a matched signal.
type Signal = abi.Signal

// Mode is the request's mode. In preview no backend host function works; in
// probe nothing is persisted.
func (r *Request) Mode() Mode { return r.r.Mode }

// Decision is the matched decision's name.
func (r *Request) Decision() string { return r.r.Decision }

// Model is the selected model ("" when none was selected).
func (r *Request) Model() string { return r.r.Model }

// Messages are the chat messages in order, content flattened to text.
func (r *Request) Messages() []Message { return r.r.Messages }

// LastUserMessage is the text of the last message with role user ("" if none).
func (r *Request) LastUserMessage() string {
	for i := len(r.r.Messages) - 1; i >= 0; i-- {
		if r.r.Messages[i].Role == "user" {
			return r.r.Messages[i].Content
		}
	}
	return ""
}

// Headers are the upstream request's headers (canonical names).
func (r *Request) Headers() []Header { return r.r.Headers }

// Header returns the first value of the named header (case-insensitive).
func (r *Request) Header(name string) (string, bool) {
	for _, h := range r.r.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// Signals are the signals that matched.
func (r *Request) Signals() []Signal { return r.r.Signals }

// Matched reports whether the signal kind/name matched.
func (r *Request) Matched(kind, name string) bool {
	for _, s := range r.r.Signals {
		if s.Kind == kind && s.Name == name {
			return true
		}
	}
	return false
}

// Body is the request body (JSON) as it will be sent upstream, before this
// plugin's mutations.
func (r *Request) Body() []byte { return r.r.Body }

// Field returns the raw JSON of the body's top-level field name.
func (r *Request) Field(name string) ([]byte, bool) { return objectField(r.r.Body, name) }

// MessageJSON returns the raw JSON of messages[i] as it is in the body.
func (r *Request) MessageJSON(i int) ([]byte, bool) {
	msgs, ok := objectField(r.r.Body, "messages")
	if !ok {
		return nil, false
	}
	return arrayElem(msgs, i)
}

// Response is the view of a successful upstream answer in the response
// phase, along with the request it answers.
type Response struct {
	*Request
}

// Status is the upstream HTTP status.
func (r *Response) Status() int { return int(r.r.Status) }

// Body is the upstream answer's body (for a streamed answer, the event stream
// as received).
func (r *Response) Body() []byte { return r.r.ResponseBody }

// RequestBody is the body that was sent upstream.
func (r *Response) RequestBody() []byte { return r.r.Body }
