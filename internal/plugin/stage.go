package plugin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
)

// instance is one configured plugin, ready to run. run only reads req; what it
// wants changed comes back as mutations for the stage to apply. A module's
// binding is the one kind in serving code (moduleInstance).
type instance interface {
	run(req *Request) (*mutations, error)
}

// mutations are one plugin's result. The zero value changes nothing.
type mutations struct {
	// skipped: the plugin chose not to act (it is disabled by its configuration).
	skipped bool
	// detail is the report's Detail: what changed, or why nothing did.
	detail string
	// del and set change top-level body fields, deletions first.
	del []string
	set []field
	// messages edits the messages array, in order.
	messages []messageEdit
	headers  []headerOp
	// immediate answers the request; later plugins do not run.
	immediate *Immediate
	// tools, when set, replaces the tools array (toolCount tools); only
	// module plugins' tool edits produce it.
	tools     json.RawMessage
	toolCount int
	// values and cacheStatus come from module plugins' reports.
	values      []abi.KV
	cacheStatus string
	// messageBuf and headerBuf are where a module's first message edit and
	// header op go: most plugins make one, and then allocate no list.
	messageBuf [1]messageEdit
	headerBuf  [1]headerOp
}

type field struct {
	name string
	raw  json.RawMessage
}

// messageEdit replaces the message at index, or inserts one before it (index
// equal to the length appends). raw is the message as sent upstream; msg is its
// flattened view for chat.Request.Messages. Indexes count the list as left by
// the edits before.
type messageEdit struct {
	index  int
	insert bool
	remove bool
	raw    json.RawMessage
	msg    chat.Message
}

type headerKind uint8

const (
	headerAdd headerKind = iota // append a value, keeping those present
	headerSet                   // replace every value
	headerDel                   // remove the header
)

type headerOp struct {
	kind  headerKind
	name  string // canonical form
	value string
}

// bodyOwned are fields the stage never lets a plugin delete or set as a whole.
var bodyOwned = map[string]string{
	"model":    "the model is chosen by routing",
	"messages": "messages change only through message edits",
}

// apply makes m's changes to req. Everything that can fail is checked before
// anything is changed, so a failing plugin leaves the request as it was.
func apply(req *Request, m *mutations) error {
	var newMessages json.RawMessage
	var newFlat []chat.Message
	if len(m.del) > 0 || len(m.set) > 0 || len(m.messages) > 0 || m.tools != nil {
		if req.Chat == nil {
			return fmt.Errorf("the plugin changes the request body, but the request has no chat body")
		}
		for _, name := range m.del {
			if why, ok := bodyOwned[name]; ok {
				return fmt.Errorf("the plugin may not remove %s: %s", name, why)
			}
		}
		for _, f := range m.set {
			if why, ok := bodyOwned[f.name]; ok {
				return fmt.Errorf("the plugin may not set %s: %s", f.name, why)
			}
			if _, ok := derived[f.name]; ok {
				return fmt.Errorf("the plugin may not set %s", f.name)
			}
		}
		if len(m.messages) > 0 {
			var err error
			if newMessages, newFlat, err = editMessages(req.Chat, m.messages); err != nil {
				return err
			}
		}
	}
	for _, op := range m.headers {
		if why := abi.ForbiddenHeader(op.name); why != "" {
			return fmt.Errorf("the plugin may not change header %s: %s", op.name, why)
		}
	}

	if c := req.Chat; c != nil {
		if c.Fields == nil && (len(m.set) > 0 || newMessages != nil || m.tools != nil) {
			c.Fields = make(map[string]json.RawMessage)
		}
		for _, name := range m.del {
			delete(c.Fields, name)
			if sync, ok := derived[name]; ok {
				sync(c)
			}
		}
		for _, f := range m.set {
			c.Fields[f.name] = f.raw
		}
		if m.tools != nil {
			c.Fields["tools"] = m.tools
			c.Tools = m.toolCount
		}
		if newMessages != nil {
			c.Fields["messages"] = newMessages
			c.Messages = newFlat
			shiftPII(req.PII, m.messages)
		}
	}
	if len(m.headers) > 0 && req.Header == nil {
		req.Header = make(http.Header)
	}
	for _, op := range m.headers {
		switch op.kind {
		case headerAdd:
			req.Header[op.name] = append(req.Header[op.name], op.value)
		case headerSet:
			req.Header[op.name] = []string{op.value}
		case headerDel:
			delete(req.Header, op.name)
		}
	}
	return nil
}

// derived are body fields chat.Request also keeps in parsed form; removing one
// resets that form so the gateway does not act on a field it will not send.
var derived = map[string]func(*chat.Request){
	"stream":         func(c *chat.Request) { c.Stream = false },
	"stream_options": func(c *chat.Request) { c.IncludeUsage = false },
	"tools":          func(c *chat.Request) { c.Tools = 0 },
}

// editMessages applies edits to the request's messages array. Only the prefix
// of the array the edits reach is split; the rest is copied as it is.
func editMessages(c *chat.Request, edits []messageEdit) (json.RawMessage, []chat.Message, error) {
	need := 0
	inserts, removes := 0, 0
	for _, e := range edits {
		if e.index+1 > need {
			need = e.index + 1
		}
		if e.insert {
			inserts++
		}
		if e.remove {
			removes++
		}
	}
	// A removal shifts later indexes down: reach that much further.
	need += removes
	raw := c.Fields["messages"]
	if isNull(raw) {
		raw = json.RawMessage("[]")
	}
	// Plugins edit the first few messages: their list stays on the stack.
	var buf [4]json.RawMessage
	elems, rest, err := appendArrayPrefix(buf[:0], raw, need)
	if err != nil {
		return nil, nil, fmt.Errorf("the request's messages cannot be edited: %v", err)
	}
	flat := make([]chat.Message, len(c.Messages), len(c.Messages)+inserts)
	copy(flat, c.Messages)
	for _, e := range edits {
		if e.index < 0 || e.index > len(elems) || (!e.insert && e.index == len(elems)) {
			return nil, nil, fmt.Errorf("the plugin edits messages[%d], which does not exist", e.index)
		}
		if e.index > len(flat) || (!e.insert && e.index == len(flat)) {
			return nil, nil, fmt.Errorf("the parsed messages are out of step with the request body")
		}
		if e.remove {
			elems = slices.Delete(elems, e.index, e.index+1)
			flat = slices.Delete(flat, e.index, e.index+1)
			continue
		}
		if e.insert {
			elems = append(elems, nil)
			copy(elems[e.index+1:], elems[e.index:])
			elems[e.index] = e.raw
			flat = append(flat, chat.Message{})
			copy(flat[e.index+1:], flat[e.index:])
			flat[e.index] = e.msg
		} else {
			elems[e.index] = e.raw
			flat[e.index] = e.msg
		}
	}
	return joinArray(elems, rest), flat, nil
}
