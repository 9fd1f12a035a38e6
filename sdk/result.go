package sdk

import (
	"strconv"

	"github.com/junction-router/junction/hostapi/abi"
)

// Result collects what a handler wants done. The host applies the mutations in
// the order they were added, after the handler returns; nothing changes if
// the handler returns an error.
type Result struct {
	r abi.Result
	// arena holds the JSON the builders make, reused from call to call.
	arena []byte
	// firstMutation is the mutation list's first storage: most handlers
	// make one mutation, and a native call's result is new each time.
	firstMutation [1]abi.Mutation
}

//lint:ignore U1000 reached from the wasm exports (exports.go), which host builds do not call
func (o *Result) fail(msg string) {
	o.reset()
	o.r.Failed, o.r.Error = true, msg
}

// reset empties the result, keeping its buffers.
//
//lint:ignore U1000 reached from the wasm exports (exports.go), which host builds do not call
func (o *Result) reset() {
	o.r = abi.Result{Mutations: o.r.Mutations[:0], Values: o.r.Values[:0]}
	o.arena = o.arena[:0]
}

func (o *Result) add(op abi.Op, index int, name string, value []byte) {
	if o.r.Mutations == nil {
		o.r.Mutations = o.firstMutation[:0]
	}
	o.r.Mutations = append(o.r.Mutations, abi.Mutation{Op: op, Index: uint32(index), Name: name, Value: value})
}

// InsertMessage inserts a message with text content before messages[i]
// (i equal to the count appends).
func (o *Result) InsertMessage(i int, role, content string) {
	start := len(o.arena)
	o.arena = appendMessageJSON(o.arena, role, content)
	o.InsertMessageJSON(i, o.arena[start:len(o.arena):len(o.arena)])
}

// InsertMessageJSON inserts a message given as JSON before messages[i].
func (o *Result) InsertMessageJSON(i int, raw []byte) { o.add(abi.OpMessageInsert, i, "", raw) }

// ReplaceMessage replaces messages[i] with a message given as JSON.
func (o *Result) ReplaceMessage(i int, raw []byte) { o.add(abi.OpMessageReplace, i, "", raw) }

// RemoveMessage removes messages[i].
func (o *Result) RemoveMessage(i int) { o.add(abi.OpMessageRemove, i, "", nil) }

// SetField sets a top-level body field to a JSON value ("model" and
// "messages" are refused by the host).
func (o *Result) SetField(name string, raw []byte) { o.add(abi.OpFieldSet, 0, name, raw) }

// SetFieldString sets a top-level body field to a string.
func (o *Result) SetFieldString(name, value string) {
	o.SetField(name, abi.AppendJSONString(nil, value))
}

// SetFieldInt sets a top-level body field to an integer.
func (o *Result) SetFieldInt(name string, value int64) {
	o.SetField(name, strconv.AppendInt(nil, value, 10))
}

// RemoveField removes a top-level body field.
func (o *Result) RemoveField(name string) { o.add(abi.OpFieldRemove, 0, name, nil) }

// AddHeader appends a value to an upstream request header.
func (o *Result) AddHeader(name, value string) { o.add(abi.OpHeaderAdd, 0, name, []byte(value)) }

// SetHeader replaces an upstream request header's values with value.
func (o *Result) SetHeader(name, value string) { o.add(abi.OpHeaderSet, 0, name, []byte(value)) }

// RemoveHeader removes an upstream request header.
func (o *Result) RemoveHeader(name string) { o.add(abi.OpHeaderRemove, 0, name, nil) }

// AddTool appends a tool (JSON) to the request's tools.
func (o *Result) AddTool(raw []byte) { o.add(abi.OpToolAdd, 0, "", raw) }

// RemoveTool removes every tool whose function name is name.
func (o *Result) RemoveTool(name string) { o.add(abi.OpToolRemove, 0, name, nil) }

// Respond answers the request without a backend: later plugins do not run.
// The answer takes the form the client asked for (JSON or an event stream); a
// status of 400 or more is sent as an error whose message is content.
func (o *Result) Respond(status int, content string) {
	o.r.Immediate = &abi.Immediate{Status: uint32(status), Content: content}
}

// RespondWithToolCalls answers the request with an assistant message that
// calls tools: toolCalls is its tool_calls, a JSON array in OpenAI's shape
// (content may be empty). The answer finishes with reason tool_calls. It
// needs a host of ABI revision 3 or later.
func (o *Result) RespondWithToolCalls(status int, content string, toolCalls []byte) {
	o.r.Immediate = &abi.Immediate{Status: uint32(status), Content: content, ToolCalls: toolCalls}
}

// Skip marks the step skipped (the plugin chose not to act) and says why.
func (o *Result) Skip(detail string) {
	o.r.Skipped = true
	o.r.Detail = detail
}

// Detail says what the plugin did, for the report. Never put request text
// in it.
func (o *Result) Detail(detail string) { o.r.Detail = detail }

// Value adds a key/value to the report (kept_tokens, similarity, …).
func (o *Result) Value(key, value string) {
	o.r.Values = append(o.r.Values, abi.KV{Key: key, Value: value})
}

// CacheStatus reports a response-cache status: "hit" or "miss".
func (o *Result) CacheStatus(status string) { o.r.CacheStatus = status }

// MessageJSON builds {"role":role,"content":content}.
func MessageJSON(role, content string) []byte {
	return appendMessageJSON(make([]byte, 0, len(role)+len(content)+32), role, content)
}

func appendMessageJSON(b []byte, role, content string) []byte {
	b = append(b, `{"role":`...)
	b = abi.AppendJSONString(b, role)
	b = append(b, `,"content":`...)
	b = abi.AppendJSONString(b, content)
	return append(b, '}')
}
