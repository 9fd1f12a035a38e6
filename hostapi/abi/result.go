package abi

// Result is what a handler returns. Record layout, in order:
//
//	u8    flags          bit 0: skipped (the plugin chose not to act)
//	                     bit 1: failed (error holds why; mutations are ignored)
//	                     bit 2: immediate answer present
//	str   error          why the plugin failed ("" unless failed)
//	str   detail         what the plugin did, for the report (never request text)
//	str   cache_status   "hit", "miss" or "" (no cache involved)
//	list  values         of {str key, str value}: report values (kept_tokens, …)
//	                     bit 3: the immediate answer calls tools (revision 3)
//	u32   status         immediate answer's HTTP status (present only with bit 2)
//	str   content        immediate answer's assistant text (only with bit 2)
//	bytes tool_calls     the assistant message's tool_calls, a JSON array (only with bit 3)
//	list  mutations      of Mutation
//
// Each Mutation is {u8 op, u32 index, str name, bytes value}; see Op for what
// each field means per op. Mutations are applied in order after the handler
// returns, by the host; a plugin never edits the request itself.
type Result struct {
	Skipped     bool
	Failed      bool
	Error       string
	Detail      string
	CacheStatus string
	Values      []KV
	Immediate   *Immediate
	Mutations   []Mutation
}

// KV is one report value.
type KV struct{ Key, Value string }

// Immediate answers the request without calling a backend; later plugins do
// not run. The answer takes the form the client asked for (a chat.completion,
// or an event stream when the request has stream: true). A status of 400 or
// more is sent as an OpenAI-style error whose message is Content.
type Immediate struct {
	Status  uint32
	Content string
	// ToolCalls, when set, is the answer's tool_calls as a JSON array
	// (OpenAI's shape: id, type function, function name and arguments);
	// the answer then finishes with reason tool_calls. Revision 3.
	ToolCalls []byte
}

// Op is a mutation's kind.
type Op uint8

// Mutation ops. "index" counts the messages as left by the mutations before.
const (
	// OpMessageInsert inserts value (one message as JSON) before
	// messages[index]; index equal to the count appends.
	OpMessageInsert Op = 1
	// OpMessageReplace replaces messages[index] with value (JSON).
	OpMessageReplace Op = 2
	// OpMessageRemove removes messages[index].
	OpMessageRemove Op = 3
	// OpFieldSet sets the top-level body field name to value (JSON).
	// "model" and "messages" are the host's and are refused.
	OpFieldSet Op = 4
	// OpFieldRemove removes the top-level body field name.
	OpFieldRemove Op = 5
	// OpHeaderAdd appends value to header name.
	OpHeaderAdd Op = 6
	// OpHeaderSet replaces every value of header name with value.
	OpHeaderSet Op = 7
	// OpHeaderRemove removes header name.
	OpHeaderRemove Op = 8
	// OpToolAdd appends value (one tool as JSON) to the tools array.
	OpToolAdd Op = 9
	// OpToolRemove removes every tool whose function name is name.
	OpToolRemove Op = 10
)

// OpName names an op for error messages.
func OpName(o Op) string {
	switch o {
	case OpMessageInsert:
		return "message_insert"
	case OpMessageReplace:
		return "message_replace"
	case OpMessageRemove:
		return "message_remove"
	case OpFieldSet:
		return "field_set"
	case OpFieldRemove:
		return "field_remove"
	case OpHeaderAdd:
		return "header_add"
	case OpHeaderSet:
		return "header_set"
	case OpHeaderRemove:
		return "header_remove"
	case OpToolAdd:
		return "tool_add"
	case OpToolRemove:
		return "tool_remove"
	}
	return "op_" + itoa(int64(o))
}

// Mutation is one change to the request.
type Mutation struct {
	Op    Op
	Index uint32
	Name  string
	Value []byte
}

const (
	flagSkipped   = 1 << 0
	flagFailed    = 1 << 1
	flagImmediate = 1 << 2
	flagToolCalls = 1 << 3
)

// Size is the length of r's record.
func (r *Result) Size() int {
	n := 1 + 4 + len(r.Error) + 4 + len(r.Detail) + 4 + len(r.CacheStatus) + 4
	for _, kv := range r.Values {
		n += 8 + len(kv.Key) + len(kv.Value)
	}
	if r.Immediate != nil {
		n += 4 + 4 + len(r.Immediate.Content)
	}
	n += 4
	for _, m := range r.Mutations {
		n += 1 + 4 + 4 + len(m.Name) + 4 + len(m.Value)
	}
	return n
}

// Append encodes r onto b.
func (r *Result) Append(b []byte) []byte {
	e := Encoder{B: b}
	var flags uint8
	if r.Skipped {
		flags |= flagSkipped
	}
	if r.Failed {
		flags |= flagFailed
	}
	if r.Immediate != nil {
		flags |= flagImmediate
		if len(r.Immediate.ToolCalls) > 0 {
			flags |= flagToolCalls
		}
	}
	e.U8(flags)
	e.Str(r.Error)
	e.Str(r.Detail)
	e.Str(r.CacheStatus)
	e.U32(uint32(len(r.Values)))
	for _, kv := range r.Values {
		e.Str(kv.Key)
		e.Str(kv.Value)
	}
	if r.Immediate != nil {
		e.U32(r.Immediate.Status)
		e.Str(r.Immediate.Content)
		if len(r.Immediate.ToolCalls) > 0 {
			e.Bytes(r.Immediate.ToolCalls)
		}
	}
	e.U32(uint32(len(r.Mutations)))
	for _, m := range r.Mutations {
		e.U8(uint8(m.Op))
		e.U32(m.Index)
		e.Str(m.Name)
		e.Bytes(m.Value)
	}
	return e.B
}

// DecodeResult reads a Result record. Mutation values alias b.
func DecodeResult(b []byte) (Result, error) {
	d := Decoder{B: b}
	var r Result
	flags := d.U8()
	r.Skipped = flags&flagSkipped != 0
	r.Failed = flags&flagFailed != 0
	r.Error = d.Str()
	r.Detail = d.Str()
	r.CacheStatus = d.Str()
	if n := d.Count(8); n > 0 {
		r.Values = make([]KV, n)
		for i := range r.Values {
			r.Values[i] = KV{d.Str(), d.Str()}
		}
	}
	if flags&flagImmediate != 0 {
		r.Immediate = &Immediate{Status: d.U32(), Content: d.Str()}
		if flags&flagToolCalls != 0 {
			r.Immediate.ToolCalls = d.Bytes()
		}
	}
	if n := d.Count(13); n > 0 {
		r.Mutations = make([]Mutation, n)
		for i := range r.Mutations {
			r.Mutations[i] = Mutation{Op: Op(d.U8()), Index: d.U32(), Name: d.Str(), Value: d.Bytes()}
		}
	}
	if d.Err() == nil && len(d.B) != 0 {
		return r, errTrailing
	}
	return r, d.Err()
}

var errTrailing = errorString("abi: trailing bytes after the record")

type errorString string

func (e errorString) Error() string { return string(e) }
