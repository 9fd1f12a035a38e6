package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/junction-router/junction/internal/plugin"
)

// The response gate: a decision with response-checking plugins
// (plugin.Gates: response_jailbreak, hallucination) has its non-streamed
// answer checked before the client gets it, and a streamed one too when a
// check asks to hold it (plugin.HoldsStream). The response phase then runs
// once, on the request's goroutine, instead of beside it after the answer
// went out; its checks may replace the answer (block, redact, annotate) and
// add verdict headers and routing_metadata.response_checks.

// gated reports whether out's decision has response-checking plugins.
func (p *Plane) gated(out *Outcome) bool {
	return p.wantsResponse(out) && out.Result != nil && plugin.Gated(out.Result.Plugins)
}

// HoldsStream reports whether a streamed answer must be held until it has
// been checked: the front end then collects the whole stream, calls
// CheckStream, and relays what it returns.
func (x *Exchange) HoldsStream() bool {
	return x.plane.gated(&x.Out) && plugin.HoldsStream(x.Out.Result.Plugins)
}

// Withheld reports whether the gate withheld the upstream's answer (a
// block, or a failed check with on_error fail): the error a front end then
// gets from JSONAnswer is the gate's, not the backend's fault.
func (x *Exchange) Withheld() bool { return x.withheld }

// GateHeaders makes the checks' header edits (verdict headers) on h, the
// headers of the answer the client receives.
func (x *Exchange) GateHeaders(h http.Header) { plugin.ApplyHeaderEdits(h, x.gateHeader) }

// gateContext is the context the checks run under: the request's, without
// its cancellation (the plugins have their own deadlines, as beside the
// request).
func (x *Exchange) gateContext() context.Context {
	if x.storeCtx != nil {
		return x.storeCtx
	}
	return context.Background()
}

// checkAnswer runs the response phase on a complete chat.completion body
// now. It returns the body the client gets (body itself unless a check
// replaced its content) or the error answer a check gave instead.
func (x *Exchange) checkAnswer(body []byte) (out []byte, replaced bool, e *Error) {
	x.gateRan = true
	ro, ok := x.plane.responsePhase(x.gateContext(), &x.Out, http.StatusOK, body)
	if !ok {
		return body, false, nil
	}
	x.gateHeader = ro.Header
	x.Out.Routing.ResponseChecks = checkReports(ro.Reports)
	if ro.Withheld != nil {
		x.withheld = true
		return nil, true, NewError(http.StatusBadGateway, TypePlugin,
			"the answer was withheld: a response check failed and its on_error is fail; see the plugin's report")
	}
	r := ro.Replace
	if r == nil {
		return body, false, nil
	}
	x.gateReplace = r
	if r.Status >= 400 {
		x.withheld = true
		return nil, true, NewError(r.Status, TypePluginResponse, r.Content)
	}
	nb, err := replaceContent(body, r.Content)
	if err != nil {
		x.withheld = true
		return nil, true, NewError(http.StatusBadGateway, TypePlugin, "the answer was withheld: a response check replaced its content, and the answer could not be rewritten: "+err.Error())
	}
	return nb, true, nil
}

// checkReports are the reports of the checking plugins, for
// routing_metadata.
func checkReports(reps []plugin.Report) []plugin.Report {
	var out []plugin.Report
	for _, r := range reps {
		if plugin.Gates(r.Type) {
			out = append(out, r)
		}
	}
	return out
}

// replaceContent sets every choice's message content to content (a
// redacted or annotated answer), keeping the answer's id, model, usage and
// everything else; tool calls are dropped with the content they came with.
func replaceContent(body []byte, content string) ([]byte, error) {
	var a map[string]json.RawMessage
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, err
	}
	var choices []map[string]json.RawMessage
	if err := json.Unmarshal(a["choices"], &choices); err != nil {
		return nil, err
	}
	c, _ := json.Marshal(content)
	for _, ch := range choices {
		var msg map[string]json.RawMessage
		if err := json.Unmarshal(ch["message"], &msg); err != nil || msg == nil {
			msg = map[string]json.RawMessage{"role": json.RawMessage(`"assistant"`)}
		}
		msg["content"] = c
		delete(msg, "tool_calls")
		delete(msg, "function_call")
		ch["message"], _ = json.Marshal(msg)
		ch["finish_reason"] = json.RawMessage(`"stop"`)
	}
	a["choices"], _ = json.Marshal(choices)
	return json.Marshal(a)
}

// appendResponseChecks appends routing_metadata's response_checks: each
// checking plugin's type, status and verdict.
func appendResponseChecks(b []byte, reps []plugin.Report) []byte {
	b = append(b, `,"response_checks":[`...)
	for i, r := range reps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = appendJSONString(b, r.Type)
		b = append(b, `,"status":`...)
		b = appendJSONString(b, r.Status)
		if r.Module != nil {
			for _, k := range []string{"verdict", "action", "score", "claims", "unsupported", "unsupported_spans"} {
				if v, ok := r.Module.Values[k]; ok {
					b = append(b, ',')
					b = strconv.AppendQuote(b, k)
					b = append(b, ':')
					b = appendJSONString(b, v)
				}
			}
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// CheckStream checks a held stream (HoldsStream) once the front end has
// read all of it without writing anything: complete says the backend's
// stream ended with [DONE]. It returns nil when the events the front end
// held may go out as they are (after GateHeaders), or the answer to send
// instead: the check's error (a block, a failed check), a stream that could
// not be checked (withheld rather than released unchecked), or the replaced
// content as a stream. The response phase does not run again afterwards.
func (x *Exchange) CheckStream(complete bool) *Answer {
	s := x.stream
	x.streamEnded = true
	if s == nil {
		return nil
	}
	defer s.release()
	withhold := func(msg string) *Answer {
		x.withheld = true
		return ErrorAnswer(NewError(http.StatusBadGateway, TypePlugin, msg), nil)
	}
	switch {
	case s.over:
		x.plane.metrics.ResponsePhaseSkipped(SkipTooLarge)
		return withhold(fmt.Sprintf("the streamed answer was withheld: it exceeds %d bytes, more than a response check (hold_stream) can read", s.limit))
	case !complete || !s.done:
		x.plane.metrics.ResponsePhaseSkipped(SkipIncomplete)
		return withhold("the streamed answer was withheld: the backend's stream did not end with [DONE], so a response check (hold_stream) could not check it")
	}
	body, err := s.Assemble()
	if err != nil {
		x.plane.metrics.ResponsePhaseSkipped(SkipUnreadable)
		return withhold("the streamed answer was withheld: a response check (hold_stream) could not read it: " + err.Error())
	}
	_, replaced, e := x.checkAnswer(body)
	if e != nil {
		return ErrorAnswer(e, nil)
	}
	if !replaced {
		return nil
	}
	if x.responses != nil {
		return withhold("the streamed answer was withheld: a response check replaced its content, and a Responses API stream cannot be rewritten; ask without stream, or use action block")
	}
	req := x.Out.pluginChat
	if req == nil {
		return withhold("the streamed answer was withheld: a response check replaced its content and the request is gone")
	}
	var a struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(body, &a)
	imm := *x.gateReplace
	imm.Model = x.Out.Result.Model
	h := make(http.Header, 12)
	x.GateHeaders(h)
	return ImmediateAnswer(&x.Out.Routing, req, &imm, strings.TrimPrefix(a.ID, "chatcmpl-"), x.start, h)
}
