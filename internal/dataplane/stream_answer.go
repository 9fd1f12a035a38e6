package dataplane

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
)

// MaxResponsePhaseBody bounds the answer a decision's response-phase plugins
// are given. A non-streamed answer is buffered whole up to MaxUpstreamBody
// before they see it; a streamed answer is held to the same bound (counted in
// the bytes of its chunks' data), and one that grows past it is relayed as
// usual but never given to the response phase.
const MaxResponsePhaseBody = MaxUpstreamBody

// Reasons a streamed answer is not given to the response phase
// (junction_response_phase_skipped_total).
const (
	// SkipTooLarge: the chunks grew past MaxResponsePhaseBody (or one event
	// past MaxEventBytes).
	SkipTooLarge = "too_large"
	// SkipIncomplete: the stream did not end with [DONE] delivered to the
	// client: the upstream broke off or sent an error, the client went away.
	SkipIncomplete = "incomplete"
	// SkipUnreadable: a chunk was not a chat.completion.chunk, or carried an
	// error.
	SkipUnreadable = "unreadable"
)

// StreamAnswer keeps a streamed answer's chunks while a front end relays
// them, so that the decision's response-phase plugins can be given, once the
// stream has ended, the chat.completion a non-streamed request would have
// received. While the stream runs it only copies each chunk's data into one
// bounded buffer; decoding and merging happen in Assemble, after the last
// byte went to the client, so a stream is never slowed by more than a copy.
// A nil *StreamAnswer ignores everything (no plugin wants the answer).
type StreamAnswer struct {
	buf   []byte // each chunk's data, preceded by its length (uvarint)
	limit int
	done  bool // [DONE] was seen
	over  bool // past limit: buf was dropped
}

// newStreamAnswer returns the collector for a forwarded streamed request
// whose decision has response-phase plugins, or nil when none would read it.
func (p *Plane) newStreamAnswer(out *Outcome) *StreamAnswer {
	if !p.wantsResponse(out) {
		return nil
	}
	return &StreamAnswer{limit: MaxResponsePhaseBody, buf: getStreamBuffer()}
}

// streamBuffers hold collected chunks; one is taken per stream and given
// back once the answer was assembled, so a stream's chunks are copied into
// memory that is already there instead of a buffer grown from nothing.
var streamBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledStream is the largest buffer kept for reuse: a rare long answer
// should not pin its memory.
const maxPooledStream = 1 << 20

func getStreamBuffer() []byte { return (*streamBuffers.Get().(*[]byte))[:0] }

// release gives the buffer back; s holds nothing afterwards.
func (s *StreamAnswer) release() {
	b := s.buf
	s.buf = nil
	if cap(b) == 0 || cap(b) > maxPooledStream {
		return
	}
	b = b[:0]
	streamBuffers.Put(&b)
}

// Chunk takes one event's data as the client receives it (chat chunk JSON, or
// [DONE]). data is copied; the caller may reuse it.
func (s *StreamAnswer) Chunk(data []byte) {
	if s == nil || s.done {
		return
	}
	if string(data) == "[DONE]" {
		s.done = true
		return
	}
	if s.over {
		return
	}
	if len(s.buf)+len(data)+binary.MaxVarintLen64 > s.limit {
		s.over = true
		s.release()
		return
	}
	s.buf = binary.AppendUvarint(s.buf, uint64(len(data)))
	s.buf = append(s.buf, data...)
}

// TooLarge marks an answer the front end stopped reading event by event (an
// event past MaxEventBytes): it cannot be assembled.
func (s *StreamAnswer) TooLarge() {
	if s != nil {
		s.over = true
		s.release()
	}
}

// streamEnded ends a collected stream: when complete (the front end
// delivered the whole stream, [DONE] included, to a client still there) the
// assembled chat.completion is given to the decision's response-phase
// plugins, as runResponsePhase does for a non-streamed answer; otherwise, or
// when the answer was too large or unreadable, the response phase is skipped,
// counted by reason and logged (never with request or answer text). Call it
// after the last byte went to the client, beside the request (it may take a
// plugin's time), once per stream.
func (p *Plane) streamEnded(ctx context.Context, out *Outcome, status int, s *StreamAnswer, complete bool) []plugin.Report {
	if s == nil {
		return nil
	}
	reason, detail := "", ""
	var body []byte
	switch {
	case s.over: // first: a front end stops reading a stream past its bound, so [DONE] may go unseen
		reason = SkipTooLarge
		detail = fmt.Sprintf("the streamed answer exceeds %d bytes", s.limit)
	case !complete || !s.done:
		reason = SkipIncomplete
	default:
		var err error
		if body, err = s.Assemble(); err != nil {
			reason, detail = SkipUnreadable, err.Error()
		}
	}
	s.release() // the assembled body is a copy
	if reason != "" {
		p.metrics.ResponsePhaseSkipped(reason)
		if reason != SkipIncomplete { // incomplete streams are counted already (errors, cancellations)
			p.warn("plugin response phase skipped for a streamed answer", out, "reason", reason, "detail", detail)
		}
		return nil
	}
	return p.runResponsePhase(ctx, out, status, body)
}

// warn logs at warning level when the logger can (slog can), else as an
// error.
func (p *Plane) warn(msg string, out *Outcome, args ...any) {
	if out != nil && out.Result != nil {
		args = append(args, "decision", out.Result.Decision, "model", out.Result.Model)
	}
	if out != nil && out.Header != nil {
		if id := out.Header.Get(HeaderRequestID); id != "" {
			args = append(args, "request_id", id)
		}
	}
	if w, ok := p.log.(interface{ Warn(string, ...any) }); ok {
		w.Warn(msg, args...)
		return
	}
	p.log.Error(msg, args...)
}

// Assemble merges the chunks into the chat.completion a non-streamed request
// would have received: id, created, model and system_fingerprint from the
// chunks, one choice per index in order with the role, the content (and
// reasoning_content, refusal) concatenated, tool_calls merged by index (id
// and type kept, name and arguments concatenated, as OpenAI's SDKs merge
// them), the finish reason, and the usage when the stream carried it
// (include_usage). A chunk that is not JSON, or one that carries an error, is
// an error.
func (s *StreamAnswer) Assemble() ([]byte, error) {
	if s == nil {
		return nil, errors.New("no stream was collected")
	}
	if s.over {
		return nil, fmt.Errorf("the streamed answer exceeds %d bytes", s.limit)
	}
	a := assembly{chunk: new(streamChunk)}
	rest := s.buf
	for i := 0; len(rest) > 0; i++ {
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			return nil, errors.New("the collected stream is corrupt") // cannot happen: Chunk wrote it
		}
		data := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		if err := a.add(data); err != nil {
			return nil, fmt.Errorf("chunk %d: %w", i, err)
		}
	}
	return a.encode()
}

// assembleChunks is Assemble over chunk data given directly (each element
// one event's data, [DONE] optional).
func assembleChunks(chunks ...[]byte) ([]byte, error) {
	s := &StreamAnswer{limit: MaxResponsePhaseBody}
	for _, c := range chunks {
		s.Chunk(c)
	}
	return s.Assemble()
}

// streamChunk is what Assemble decodes of a chat.completion.chunk: its
// choices (the other members are read one by one).
type streamChunk struct {
	Choices []streamChoice
}

type streamChoice struct {
	Index int `json:"index"`
	Delta struct {
		Role             string           `json:"role"`
		Content          *string          `json:"content"`
		ReasoningContent *string          `json:"reasoning_content"`
		Refusal          *string          `json:"refusal"`
		ToolCalls        []streamToolCall `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type streamToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// assembly is the answer merged so far.
type assembly struct {
	id, model         string
	created           int64
	fingerprint, tier *string
	choices           []*choiceAcc
	usage             json.RawMessage
	chunk             *streamChunk // reused: its choices are zeroed before each decode
}

type choiceAcc struct {
	index                       int
	role                        string
	content, reasoning, refusal *bytes.Buffer
	tools                       []*toolAcc
	finish                      *string
}

type toolAcc struct {
	index                int
	id, typ              string
	name, args           bytes.Buffer
	hasFunction, hasName bool
}

func (a *assembly) add(data []byte) error {
	// Split the chunk's members without decoding them (internal/chat's
	// scanner) and decode only what is merged: the choices every chunk
	// carries, the identity once, usage when present. The choices decode
	// into a reused backing array whose elements would keep what the
	// previous chunk set and this one leaves out: zero them first.
	var buf [12]chat.Member
	members, err := chat.Members(buf[:0], data)
	if err != nil {
		return fmt.Errorf("not a chat.completion.chunk: %v", err)
	}
	c := a.chunk
	clear(c.Choices[:cap(c.Choices)])
	c.Choices = c.Choices[:0]
	for _, m := range members {
		var err error
		switch {
		case m.Is("choices"):
			c.Choices, err = decodeChoices(m.Value, c.Choices)
		case m.Is("usage"):
			if string(m.Value) != "null" {
				err = unmarshalRaw(m.Value, &a.usage)
			}
		case m.Is("error"):
			if string(m.Value) != "null" {
				return errors.New("the stream carried an error event")
			}
		case m.Is("id") && a.id == "":
			err = json.Unmarshal(m.Value, &a.id)
		case m.Is("model") && a.model == "":
			err = json.Unmarshal(m.Value, &a.model)
		case m.Is("created") && a.created == 0:
			err = json.Unmarshal(m.Value, &a.created)
		case m.Is("system_fingerprint") && string(m.Value) != "null":
			err = json.Unmarshal(m.Value, &a.fingerprint)
		case m.Is("service_tier") && string(m.Value) != "null":
			err = json.Unmarshal(m.Value, &a.tier)
		}
		if err != nil {
			return fmt.Errorf("%s: %v", m.Name(), err)
		}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		acc := a.choice(ch.Index)
		d := &ch.Delta
		if d.Role != "" {
			acc.role = d.Role
		}
		appendText(&acc.content, d.Content)
		appendText(&acc.reasoning, d.ReasoningContent)
		appendText(&acc.refusal, d.Refusal)
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			t := acc.tool(tc.Index)
			if tc.ID != "" {
				t.id = tc.ID
			}
			if tc.Type != "" {
				t.typ = tc.Type
			}
			if tc.Function != nil {
				t.hasFunction = true
				if tc.Function.Name != "" {
					t.hasName = true
					t.name.WriteString(tc.Function.Name)
				}
				t.args.WriteString(tc.Function.Arguments)
			}
		}
		if ch.FinishReason != nil {
			acc.finish = ch.FinishReason
		}
	}
	return nil
}

func appendText(dst **bytes.Buffer, s *string) {
	if s == nil {
		return
	}
	if *dst == nil {
		*dst = new(bytes.Buffer)
	}
	(*dst).WriteString(*s)
}

func (a *assembly) choice(index int) *choiceAcc {
	for _, c := range a.choices {
		if c.index == index {
			return c
		}
	}
	c := &choiceAcc{index: index}
	a.choices = append(a.choices, c)
	return c
}

func (c *choiceAcc) tool(index int) *toolAcc {
	for _, t := range c.tools {
		if t.index == index {
			return t
		}
	}
	t := &toolAcc{index: index}
	c.tools = append(c.tools, t)
	return t
}

// Output shapes, in the order a chat.completion lists its members.
type (
	completionOut struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		Choices           []choiceOut     `json:"choices"`
		Usage             json.RawMessage `json:"usage,omitempty"`
		SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
		ServiceTier       *string         `json:"service_tier,omitempty"`
	}
	choiceOut struct {
		Index        int        `json:"index"`
		Message      messageOut `json:"message"`
		FinishReason *string    `json:"finish_reason"`
	}
	messageOut struct {
		Role             string        `json:"role"`
		Content          *string       `json:"content"`
		ReasoningContent *string       `json:"reasoning_content,omitempty"`
		Refusal          *string       `json:"refusal,omitempty"`
		ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
	}
	toolCallOut struct {
		ID       string       `json:"id,omitempty"`
		Type     string       `json:"type"`
		Function *functionOut `json:"function,omitempty"`
	}
	functionOut struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
)

func text(b *bytes.Buffer) *string {
	if b == nil {
		return nil
	}
	s := b.String()
	return &s
}

func (a *assembly) encode() ([]byte, error) {
	slices.SortFunc(a.choices, func(x, y *choiceAcc) int { return cmp.Compare(x.index, y.index) })
	out := completionOut{ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model,
		Choices: make([]choiceOut, 0, len(a.choices)), Usage: a.usage, SystemFingerprint: a.fingerprint, ServiceTier: a.tier}
	for _, c := range a.choices {
		role := c.role
		if role == "" {
			role = "assistant"
		}
		m := messageOut{Role: role, Content: text(c.content), ReasoningContent: text(c.reasoning), Refusal: text(c.refusal)}
		slices.SortFunc(c.tools, func(x, y *toolAcc) int { return cmp.Compare(x.index, y.index) })
		for _, t := range c.tools {
			typ := t.typ
			if typ == "" {
				typ = "function"
			}
			tc := toolCallOut{ID: t.id, Type: typ}
			if t.hasFunction {
				tc.Function = &functionOut{Name: t.name.String(), Arguments: t.args.String()}
			}
			m.ToolCalls = append(m.ToolCalls, tc)
		}
		out.Choices = append(out.Choices, choiceOut{Index: c.index, Message: m, FinishReason: c.finish})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding the assembled answer: %v", err)
	}
	return b, nil
}

// unmarshalRaw checks that v is valid JSON and keeps a copy in dst.
func unmarshalRaw(v []byte, dst *json.RawMessage) error {
	if !chat.Valid(v) {
		return errors.New("invalid JSON")
	}
	*dst = append((*dst)[:0], v...)
	return nil
}
