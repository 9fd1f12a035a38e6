package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/recipes"
)

// Modules runs the plugin types implemented by modules: the WebAssembly
// plugin host (package internal/plugin/wasm) or the built-in plugins compiled
// natively from their guests' code (package internal/plugin/native). Either
// way a plugin's answer is an abi.Result, which the stage turns into
// mutations in one place.
type Modules interface {
	// Has reports whether a module implements typ.
	Has(typ string) bool
	// HasResponse reports whether typ's module has a response phase.
	HasResponse(typ string) bool
	// Validate checks a configuration of typ against its module's schema.
	// An error with a FieldPath() method names the field.
	Validate(typ string, config json.RawMessage) error
	// Call runs typ's handler for req.Phase with config in req.Mode.
	Call(ctx context.Context, typ string, config json.RawMessage, req *abi.Request) (ModuleResult, error)
}

// BlindModules is implemented by Modules that know which of their types'
// request handlers read nothing of the request (header_mutation,
// fast_response: the configuration alone says what they do). Such a plugin
// is handed a bare record (phase, mode, decision, model and the PII spans;
// no headers, messages, signals or body), and a record an earlier plugin
// made stale is not rebuilt for it.
type BlindModules interface {
	IgnoresRequest(typ string) bool
}

// BoundModules is implemented by Modules that can resolve a (type,
// configuration) pair ahead of its calls: Bind returns a function that does
// what Call(ctx, typ, config, req) does for that pair, or nil (then the stage
// calls Call). A configuration's instance binds on its first call and keeps
// the function, so that a request does not look the pair up again (the
// native modules' binding: a key of type and configuration, hashed and looked
// up under a lock, per call).
type BoundModules interface {
	Bind(typ string, config json.RawMessage) BoundCall
}

// BoundCall is a module call for one bound (type, configuration).
type BoundCall func(ctx context.Context, req *abi.Request) (ModuleResult, error)

// ModuleResult is a module's result and what the host counted.
type ModuleResult struct {
	abi.Result
	BackendCalls int
	Persisted    bool
}

// Signal is a matched signal, as plugins see it.
type Signal struct {
	Kind, Name string
}

// moduleInstance is a binding run by Modules.
type moduleInstance struct {
	mods   Modules
	typ    string
	config json.RawMessage
	// blind: the module's request handler reads nothing of the request
	// (BlindModules).
	blind bool
	// bind sets call, on the first call (BoundModules); nil call: mods.Call.
	bind sync.Once
	call BoundCall
}

// module calls the module with in: through the bound call when mods binds.
func (m *moduleInstance) module(ctx context.Context, in *abi.Request) (ModuleResult, error) {
	m.bind.Do(func() {
		if b, ok := m.mods.(BoundModules); ok {
			m.call = b.Bind(m.typ, m.config)
		}
	})
	if m.call != nil {
		return m.call(ctx, in)
	}
	return m.mods.Call(ctx, m.typ, m.config, in)
}

func (m *moduleInstance) run(*Request) (*mutations, error) {
	return nil, errors.New("a module plugin needs a context")
}

// runContext calls the module and turns its result into mutations. rec is
// the decision's request record, built once and shared by its plugins.
func (m *moduleInstance) runContext(ctx context.Context, req *Request, rec *record) (*mutations, *ModuleResult, error) {
	mode, ok := abi.ParseMode(req.Mode)
	if !ok {
		return nil, nil, fmt.Errorf("unknown mode %q", req.Mode)
	}
	var in *abi.Request
	if m.blind {
		in = rec.bare(req, mode)
	} else {
		in = rec.get(req, mode)
	}
	c := new(moduleCall)
	var err error
	if c.res, err = m.module(ctx, in); err != nil {
		return nil, &c.res, err
	}
	if c.res.Failed {
		return nil, &c.res, fmt.Errorf("the plugin failed: %s", c.res.Error)
	}
	if err := fromResult(&c.mu, req, &c.res.Result); err != nil {
		return nil, &c.res, err
	}
	return &c.mu, &c.res, nil
}

// moduleCall is what one module call leaves for the stage: the module's
// result and the mutations made of it, which live as long as each other, in
// one allocation.
type moduleCall struct {
	res ModuleResult
	mu  mutations
}

// abiRequest is the request record a module reads. Its slices come from a
// pool: give it back with releaseRequest once the module has it.
func abiRequest(req *Request, mode abi.Mode) *abi.Request {
	in := requests.Get().(*abi.Request)
	*in = abi.Request{Phase: abi.PhaseRequest, Mode: mode, Decision: req.Decision, Model: req.Model,
		Headers: in.Headers[:0], Messages: in.Messages[:0], Signals: in.Signals[:0], PII: req.PII}
	in.Headers = appendHeaders(in.Headers, req.Header)
	for _, s := range req.Signals {
		in.Signals = append(in.Signals, abi.Signal{Kind: s.Kind, Name: s.Name})
	}
	if c := req.Chat; c != nil {
		in.Messages = appendMessages(in.Messages, c.Messages)
		in.Body = rawBody(c)
	}
	return in
}

// record is the request record a decision's module plugins read. Building it
// costs more than many plugin calls (headers sorted, the body joined), and a
// module only reads it (the wasm host copies it into the guest, the native
// host's view copies its lists), so it is built on the first module call and
// rebuilt in part only where a plugin's applied mutations changed the request
// (changed): later plugins see the record abiRequest would build.
type record struct {
	in                                     *abi.Request
	staleHeaders, staleMessages, staleBody bool
	// blind is the bare record blind plugins are given (see BlindModules).
	blind *abi.Request
}

// bare returns the record a plugin that reads nothing of the request is
// given: the cheap fields only. The full record, and what is stale in it,
// is left as it is for the plugins after.
func (r *record) bare(req *Request, mode abi.Mode) *abi.Request {
	if r.blind == nil {
		r.blind = requests.Get().(*abi.Request)
	}
	*r.blind = abi.Request{Phase: abi.PhaseRequest, Mode: mode, Decision: req.Decision, Model: req.Model, PII: req.PII,
		Headers: r.blind.Headers[:0], Messages: r.blind.Messages[:0], Signals: r.blind.Signals[:0]}
	return r.blind
}

// get returns the record of req as it is now.
func (r *record) get(req *Request, mode abi.Mode) *abi.Request {
	if r.in == nil {
		r.in = abiRequest(req, mode)
		return r.in
	}
	in := r.in
	// Cheap fields are set on every call, so only the costly parts need
	// tracking.
	in.Mode, in.Decision, in.Model, in.PII = mode, req.Decision, req.Model, req.PII
	if r.staleHeaders {
		in.Headers = appendHeaders(clearKeep(in.Headers), req.Header)
	}
	if c := req.Chat; c != nil {
		if r.staleMessages {
			in.Messages = appendMessages(clearKeep(in.Messages), c.Messages)
		}
		if r.staleBody {
			releaseBody(in.Body)
			in.Body = rawBody(c)
		}
	}
	r.staleHeaders, r.staleMessages, r.staleBody = false, false, false
	return in
}

// changed notes what m, just applied, changed in the request (see apply).
func (r *record) changed(m *mutations) {
	if len(m.headers) > 0 {
		r.staleHeaders = true
	}
	if len(m.messages) > 0 {
		r.staleMessages = true
	}
	if len(m.del) > 0 || len(m.set) > 0 || len(m.messages) > 0 || m.tools != nil {
		r.staleBody = true
	}
}

// release gives the record back to its pool once the decision's plugins ran.
func (r *record) release() {
	if r.in != nil {
		releaseRequest(r.in)
		r.in = nil
	}
	if r.blind != nil {
		releaseRequest(r.blind)
		r.blind = nil
	}
}

func clearKeep[T any](s []T) []T {
	clear(s)
	return s[:0]
}

func appendHeaders(dst []abi.Header, h http.Header) []abi.Header {
	if len(h) == 0 {
		return dst
	}
	var buf [16]string
	names := buf[:0]
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range h[k] {
			dst = append(dst, abi.Header{Name: k, Value: v})
		}
	}
	return dst
}

func appendMessages(dst []abi.Message, ms []chat.Message) []abi.Message {
	for _, m := range ms {
		dst = append(dst, abi.Message{Role: m.Role, Content: m.Content})
	}
	return dst
}

// requests hold request records being built; they live only until the
// record is copied into a module.
var requests = sync.Pool{New: func() any { return new(abi.Request) }}

// releaseRequest gives in and its body back to their pools.
func releaseRequest(in *abi.Request) {
	releaseBody(in.Body)
	clear(in.Headers)
	clear(in.Messages)
	clear(in.Signals)
	*in = abi.Request{Headers: in.Headers[:0], Messages: in.Messages[:0], Signals: in.Signals[:0]}
	requests.Put(in)
}

// rawBody joins the body's fields, keys sorted, values as they are: a plugin
// reads the body, it does not need chat.Request.Encode's compaction and
// checks (every value is valid JSON already: parsed, or checked when a
// plugin set it), which would cost more than the plugin call itself.
func rawBody(c *chat.Request) []byte {
	var kb [16]string // a request has a handful of fields: no allocation
	keys := kb[:0]
	n := 2
	for k, v := range c.Fields {
		keys = append(keys, k)
		n += len(k) + len(v) + 8
	}
	slices.Sort(keys)
	bp := bodyBuffers.Get().(*[]byte)
	b := (*bp)[:0]
	*bp = nil
	holders.Put(bp)
	if cap(b) < n {
		b = make([]byte, 0, n)
	}
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if plainJSONKey(k) {
			b = append(append(append(b, '"'), k...), '"')
		} else {
			kb, _ := json.Marshal(k)
			b = append(b, kb...)
		}
		b = append(b, ':')
		if v := c.Fields[k]; len(v) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, v...)
		}
	}
	return append(b, '}')
}

func plainJSONKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// fromResult checks a module's mutations and turns them into the stage's, in m.
// Anything malformed fails the step with the op's index.
func fromResult(m *mutations, req *Request, r *abi.Result) error {
	*m = mutations{skipped: r.Skipped, detail: r.Detail}
	if r.Immediate != nil {
		st := int(r.Immediate.Status)
		if st == 0 {
			st = http.StatusOK
		}
		if st < 200 || st > 599 {
			return fmt.Errorf("the plugin answered with HTTP status %d", st)
		}
		m.immediate = &Immediate{Status: st, Content: r.Immediate.Content}
		if tc := r.Immediate.ToolCalls; len(tc) > 0 {
			if st > 299 {
				return fmt.Errorf("the plugin answered with tool calls and HTTP status %d; tool calls need a 2xx answer", st)
			}
			if !validToolCalls(tc) {
				return fmt.Errorf("the plugin answered with tool calls that are not a JSON array of objects")
			}
			m.immediate.ToolCalls = append(json.RawMessage(nil), tc...)
		}
	}
	var tools []json.RawMessage
	toolsChanged := false
	for k, op := range r.Mutations {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("mutation %d (%s): %s", k, abi.OpName(op.Op), fmt.Sprintf(format, args...))
		}
		switch op.Op {
		case abi.OpMessageInsert, abi.OpMessageReplace:
			msg, err := checkMessage(op.Value)
			if err != nil {
				return bad("%v", err)
			}
			if m.messages == nil {
				m.messages = m.messageBuf[:0]
			}
			m.messages = append(m.messages, messageEdit{index: int(op.Index), insert: op.Op == abi.OpMessageInsert,
				raw: json.RawMessage(bytes.Clone(op.Value)), msg: msg})
		case abi.OpMessageRemove:
			m.messages = append(m.messages, messageEdit{index: int(op.Index), remove: true})
		case abi.OpFieldSet:
			if op.Name == "" {
				return bad("no field name")
			}
			if op.Name == "tools" {
				return bad("tools change only through tool_add and tool_remove")
			}
			if !chat.Valid(op.Value) {
				return bad("the value of %s is not valid JSON", op.Name)
			}
			m.set = append(m.set, field{name: op.Name, raw: json.RawMessage(bytes.Clone(op.Value))})
		case abi.OpFieldRemove:
			if op.Name == "" {
				return bad("no field name")
			}
			m.del = append(m.del, op.Name)
		case abi.OpHeaderAdd, abi.OpHeaderSet, abi.OpHeaderRemove:
			if !abi.ValidHeaderName(op.Name) {
				return bad("%q is not a valid header name", op.Name)
			}
			if !abi.ValidHeaderValue(string(op.Value)) {
				return bad("the value of header %s holds a control character", op.Name)
			}
			kind := headerAdd
			switch op.Op {
			case abi.OpHeaderSet:
				kind = headerSet
			case abi.OpHeaderRemove:
				kind = headerDel
			}
			if m.headers == nil {
				m.headers = m.headerBuf[:0]
			}
			m.headers = append(m.headers, headerOp{kind: kind, name: http.CanonicalHeaderKey(op.Name), value: string(op.Value)})
		case abi.OpToolAdd, abi.OpToolRemove:
			if !toolsChanged {
				var err error
				if tools, err = currentTools(req); err != nil {
					return bad("%v", err)
				}
				toolsChanged = true
			}
			if op.Op == abi.OpToolAdd {
				var t struct {
					Type string `json:"type"`
				}
				if json.Unmarshal(op.Value, &t) != nil || t.Type == "" {
					return bad("the tool is not a JSON object with a type")
				}
				tools = append(tools, json.RawMessage(bytes.Clone(op.Value)))
				continue
			}
			if op.Name == "" {
				return bad("no tool name")
			}
			tools = slices.DeleteFunc(tools, func(t json.RawMessage) bool { return toolName(t) == op.Name })
		default:
			return bad("unknown op %d", op.Op)
		}
	}
	if toolsChanged {
		if len(tools) == 0 {
			m.del = append(m.del, "tools")
		} else {
			m.tools, _ = json.Marshal(tools)
			m.toolCount = len(tools)
		}
	}
	m.values = r.Values
	m.cacheStatus = r.CacheStatus
	return nil
}

func checkMessage(raw []byte) (chat.Message, error) {
	// A validity check, not a decode: this runs for
	// every message a plugin writes. The whole value must be valid JSON, as
	// it is sent upstream as it is.
	// Validated and split in one walk.
	var buf [8]chat.Member
	ms, ok := chat.ValidObject(buf[:0], raw)
	if !ok {
		if !chat.Valid(raw) {
			return chat.Message{}, errors.New("the message is not valid JSON")
		}
		return chat.Message{}, errors.New("the message is not a JSON object: not a JSON object")
	}
	roleRaw := memberValue(ms, "role")
	if len(roleRaw) == 0 || roleRaw[0] != '"' {
		return chat.Message{}, errors.New("the message has no role")
	}
	role, err := unquote(roleRaw)
	if err != nil || role == "" {
		return chat.Message{}, errors.New("the message has no role")
	}
	text := ""
	if content := memberValue(ms, "content"); len(content) > 0 {
		if text, err = chat.ContentText(content); err != nil {
			return chat.Message{}, fmt.Errorf("the message's content: %v", err)
		}
	}
	return chat.Message{Role: role, Content: text}, nil
}

// memberValue is the value of the first member named key (its escapes
// decoded, as encoding/json matches keys exactly here), nil when none is.
func memberValue(ms []chat.Member, key string) []byte {
	for _, m := range ms {
		if m.Is(key) {
			return m.Value
		}
	}
	return nil
}

func currentTools(req *Request) ([]json.RawMessage, error) {
	if req.Chat == nil {
		return nil, errors.New("the request has no chat body")
	}
	raw := req.Chat.Fields["tools"]
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, fmt.Errorf("the request's tools are not an array: %v", err)
	}
	return tools, nil
}

func toolName(raw json.RawMessage) string {
	var t struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return ""
	}
	if t.Function.Name != "" {
		return t.Function.Name
	}
	return t.Name
}

// Response is the response phase's input: the request as it was sent and
// the upstream's successful answer.
type Response struct {
	Request *Request
	Status  int
	Body    []byte
}

// ResponseOutcome is one report per plugin with a response phase, and what
// the response-checking plugins (Gates) decided about the answer. A front
// end that holds the answer until the phase has run (dataplane's response
// gate) applies Replace, Header and Withheld; one that ran the phase after
// the answer went out can only report them.
type ResponseOutcome struct {
	Reports []Report
	// Replace is the answer a checking plugin gave instead of the
	// upstream's (its immediate answer): a 2xx status replaces the
	// assistant's content (a redacted or annotated answer), 400 or more
	// answers an error with Content as its message. The first one wins;
	// the plugins after it are not run, so nothing stores the answer it
	// withheld.
	Replace *Immediate
	// Header are the checking plugins' header edits, for the client's
	// answer (a verdict header).
	Header []HeaderEdit
	// Withheld is set when a checking plugin with on_error fail failed: the
	// answer must not be released unchecked.
	Withheld error
}

// HeaderEdit is one response header edit a checking plugin asked for.
type HeaderEdit struct {
	// Op is "add", "set" or "remove".
	Op          string
	Name, Value string
}

// ApplyHeaderEdits makes edits on h.
func ApplyHeaderEdits(h http.Header, edits []HeaderEdit) {
	for _, e := range edits {
		switch e.Op {
		case "add":
			h[e.Name] = append(h[e.Name], e.Value)
		case "set":
			h[e.Name] = []string{e.Value}
		case "remove":
			delete(h, e.Name)
		}
	}
}

// gateTypes are the plugin types that check an answer before the client
// may have it (the response gate). Keeping them here rather than in a
// descriptor field leaves the plugin ABI as it is.
var gateTypes = map[string]bool{"response_jailbreak": true, "hallucination": true}

// Gates reports whether typ is a response-checking plugin type.
func Gates(typ string) bool { return gateTypes[typ] }

// Gated reports whether any of refs is a response-checking plugin, so a
// front end holds a non-streamed answer until the response phase has run.
func Gated(refs []recipes.PluginRef) bool {
	for _, r := range refs {
		if gateTypes[r.Type] {
			return true
		}
	}
	return false
}

// HoldsStream reports whether a checking plugin of refs asks, with
// hold_stream: true in its configuration, that a streamed answer be held
// until it has been checked.
func HoldsStream(refs []recipes.PluginRef) bool {
	for _, r := range refs {
		if !gateTypes[r.Type] || len(r.Configuration) == 0 {
			continue
		}
		var c struct {
			HoldStream bool `json:"hold_stream"`
		}
		if json.Unmarshal(r.Configuration, &c) == nil && c.HoldStream {
			return true
		}
	}
	return false
}

// responseHeaderRefused are headers a checking plugin may not set on the
// client's answer: the framing and the connection are the front end's.
var responseHeaderRefused = map[string]bool{
	"Content-Length": true, "Content-Type": true, "Content-Encoding": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Upgrade": true, "Trailer": true, "Te": true,
	"Proxy-Authenticate": true, "Set-Cookie": true, "X-Request-Id": true,
}

// ResponseRunner runs the response phase of a decision's plugins.
type ResponseRunner interface {
	Response(ctx context.Context, refs []recipes.PluginRef, resp *Response) (ResponseOutcome, error)
}

var _ ResponseRunner = (*Stage)(nil)

// HasResponsePhase reports whether any of refs has a response phase, so a
// front end keeps the answer's body only when one will read it.
func (n *Stage) HasResponsePhase(refs []recipes.PluginRef) bool {
	if n.mods == nil {
		return false
	}
	for _, r := range refs {
		if n.mods.HasResponse(r.Type) {
			return true
		}
	}
	return false
}

// Response runs the response phase of every plugin in refs that has one on
// a successful (2xx) upstream answer: the checking plugins (Gates) first,
// in order, then the others in order, so that a plugin that stores answers
// (response_cache) never stores one a check withheld. A failure is
// reported; with on_error fail the error is returned too (and, for a
// checking plugin, Withheld is set).
func (n *Stage) Response(ctx context.Context, refs []recipes.PluginRef, resp *Response) (ResponseOutcome, error) {
	var out ResponseOutcome
	if n.mods == nil || resp == nil || resp.Request == nil || resp.Status < 200 || resp.Status > 299 {
		return out, nil
	}
	mode, ok := abi.ParseMode(resp.Request.Mode)
	if !ok {
		return out, fmt.Errorf("plugin response phase: unknown mode %q", resp.Request.Mode)
	}
	order := make([]int, 0, len(refs))
	for i, ref := range refs {
		if gateTypes[ref.Type] {
			order = append(order, i)
		}
	}
	for i, ref := range refs {
		if !gateTypes[ref.Type] {
			order = append(order, i)
		}
	}
	var in *abi.Request
	replacedBy := -1
	for _, i := range order {
		ref := refs[i]
		if !n.mods.HasResponse(ref.Type) {
			continue
		}
		if replacedBy >= 0 {
			out.Reports = append(out.Reports, Report{Type: ref.Type, Status: StatusSkipped,
				Detail: fmt.Sprintf("not run: plugin %d (%s) withheld the upstream answer", replacedBy, refs[replacedBy].Type)})
			continue
		}
		if in == nil {
			in = abiRequest(resp.Request, mode)
			in.Phase, in.Status, in.ResponseBody = abi.PhaseResponse, uint32(resp.Status), resp.Body
		}
		res, err := n.mods.Call(ctx, ref.Type, ref.Configuration, in)
		if err == nil && res.Failed {
			err = fmt.Errorf("the plugin failed: %s", res.Error)
		}
		var edits []HeaderEdit
		if err == nil && gateTypes[ref.Type] {
			edits, err = responseHeaderEdits(res.Mutations)
		}
		rep := moduleReport(ref.Type, &res, resp.Request.Mode)
		if err != nil {
			rep.Module.Values = nil
			rep.Status, rep.Detail = StatusFailed, err.Error()
			out.Reports = append(out.Reports, rep)
			if ref.OnError == recipes.OnErrorFail {
				err = fmt.Errorf("plugin %d (%s) response phase failed (on_error: fail): %w", i, ref.Type, err)
				if gateTypes[ref.Type] {
					out.Withheld = err
				}
				return out, err
			}
			continue
		}
		out.Reports = append(out.Reports, rep)
		if !gateTypes[ref.Type] {
			continue // other plugins' answers and mutations have no meaning here
		}
		out.Header = append(out.Header, edits...)
		if im := res.Immediate; im != nil {
			status := int(im.Status)
			if status == 0 {
				status = 200
			}
			out.Replace = &Immediate{Status: status, Content: im.Content, Model: resp.Request.Model}
			replacedBy = i
		}
	}
	return out, nil
}

// responseHeaderEdits are a checking plugin's header mutations; any other
// mutation is refused (an answer has no messages or fields to edit).
func responseHeaderEdits(muts []abi.Mutation) ([]HeaderEdit, error) {
	var out []HeaderEdit
	for j, op := range muts {
		var kind string
		switch op.Op {
		case abi.OpHeaderAdd:
			kind = "add"
		case abi.OpHeaderSet:
			kind = "set"
		case abi.OpHeaderRemove:
			kind = "remove"
		default:
			return nil, fmt.Errorf("mutation %d (op %d): the response phase edits only headers", j, op.Op)
		}
		name := http.CanonicalHeaderKey(op.Name)
		if !abi.ValidHeaderName(op.Name) || responseHeaderRefused[name] {
			return nil, fmt.Errorf("mutation %d: %q is not a header a plugin may set on the answer", j, op.Name)
		}
		if !abi.ValidHeaderValue(string(op.Value)) {
			return nil, fmt.Errorf("mutation %d: the value of header %s holds a control character", j, name)
		}
		out = append(out, HeaderEdit{Op: kind, Name: name, Value: string(op.Value)})
	}
	return out, nil
}

func moduleReport(typ string, res *ModuleResult, mode string) Report {
	return moduleReportIn(new(ModuleReport), typ, res, mode)
}

// moduleReportIn is moduleReport with the module part written to into.
func moduleReportIn(into *ModuleReport, typ string, res *ModuleResult, mode string) Report {
	if mode == "" {
		mode = ModeLive
	}
	*into = ModuleReport{Mode: mode, BackendCalls: res.BackendCalls, Persisted: res.Persisted, Values: kvMap(res.Values)}
	rep := Report{Type: typ, Status: StatusApplied, Detail: res.Detail, Module: into}
	if res.Skipped {
		rep.Status = StatusSkipped
	}
	return rep
}

func kvMap(kvs []abi.KV) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// bodyBuffers hold the bodies built for request records; holders are the
// empty *[]byte a body is put back in, so that giving one back allocates
// nothing.
var (
	bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}
	holders     = sync.Pool{New: func() any { return new([]byte) }}
)

func releaseBody(b []byte) {
	if cap(b) == 0 || cap(b) > 1<<20 {
		return
	}
	h := holders.Get().(*[]byte)
	*h = b[:0]
	bodyBuffers.Put(h)
}

// validToolCalls reports whether raw is a non-empty JSON array of objects.
func validToolCalls(raw []byte) bool {
	var calls []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &calls); err != nil || len(calls) == 0 {
		return false
	}
	for _, c := range calls {
		if c == nil {
			return false
		}
	}
	return true
}
