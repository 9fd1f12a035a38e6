package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/chat"
	"github.com/junction-router/junction/engine/metrics"
	"github.com/junction-router/junction/engine/plugin"
	"github.com/junction-router/junction/engine/reasoning"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// APIFormatAnthropic is the api_format of models behind Anthropic-style
// upstreams, which this gateway does not translate to yet.
const APIFormatAnthropic = "anthropic"

// chatCompletions serves POST /v1/chat/completions: read and parse the body,
// route it on the generation taken at the start of the request, answer a
// security block, rewrite the body for the selected model, run the decision's
// plugins, and forward.
func (x *exchange) chatCompletions() {
	if x.gen == nil {
		writeError(x.w, noGeneration())
		return
	}
	body, ok := x.readBody()
	if !ok {
		return
	}
	req, err := chat.Parse(body)
	if err != nil {
		x.error(metrics.ReasonParseError)
		var ce *chat.Error
		if errors.As(err, &ce) {
			writeError(x.w, newError(http.StatusBadRequest, typeInvalidRequest, ce.Message).withParam(ce.Param))
		} else {
			writeError(x.w, newError(http.StatusBadRequest, typeInvalidRequest, err.Error()))
		}
		return
	}

	ctx := x.r.Context()
	res, err := x.gen.Route(ctx, x.listener.Entrypoint, &engine.Request{Model: req.Model, Input: input(req)})
	if err != nil {
		x.routeFailed(err)
		return
	}
	if ctx.Err() != nil {
		x.clientGone()
		return
	}
	x.res = res
	x.category = metrics.Category(res)
	x.model = metrics.ModelLabel(res)
	x.s.metrics.Routed(res)
	rt := &routing{res: res}

	if res.Block != nil {
		x.blocked(rt)
		return
	}
	model, ok := x.gen.Model(res.Model)
	if !ok {
		x.fail(rt, metrics.ReasonClassificationFailed, newError(http.StatusInternalServerError, typeServer,
			fmt.Sprintf("routing selected model %q, which is not configured", res.Model)))
		return
	}
	if strings.EqualFold(model.APIFormat, APIFormatAnthropic) {
		x.fail(rt, metrics.ReasonUnknown, newError(http.StatusNotImplemented, typeNotImplemented,
			fmt.Sprintf("model %q has api_format anthropic; this gateway does not translate to Anthropic-style upstreams yet", model.Name)))
		return
	}

	// Rewrite for the selected model; plugins see the model they will reach.
	if err := req.Set("model", res.Model); err != nil {
		x.fail(rt, metrics.ReasonSerializationError, serializationError(err))
		return
	}
	ref, ok := x.s.ups.pick(model)
	if !ok {
		x.fail(rt, metrics.ReasonUpstream5xx, newError(http.StatusBadGateway, typeUpstream,
			fmt.Sprintf("model %q has no backend_refs to send the request to", model.Name)))
		return
	}
	target := x.s.ups.target(ref)
	if target.err != nil {
		x.fail(rt, metrics.ReasonUpstream5xx, newError(http.StatusBadGateway, typeUpstream,
			fmt.Sprintf("upstream for model %q is misconfigured: %v", model.Name, target.err)))
		return
	}
	header := x.upstreamHeader(ref, req.Stream)
	rt.upstream(header, x.id)

	if len(res.Plugins) > 0 {
		imm, ok := x.runPlugins(rt, req, header)
		if !ok {
			return
		}
		if imm != nil {
			x.immediate(rt, req, imm)
			return
		}
	}

	// Reasoning is written after the plugins: routing owns these fields, so a
	// plugin (request_params strip_unknown, say) cannot erase them. A model named
	// by the client keeps the client's reasoning fields: routing made no
	// reasoning decision for it.
	if res.ReasonCode != engine.ReasonModelSpecified {
		if err := reasoning.Apply(req.Fields, res.Reasoning); err != nil {
			x.fail(rt, metrics.ReasonSerializationError, serializationError(err))
			return
		}
	}

	// Usage is needed for cost and token metrics even when the client did not
	// ask for it; the relay drops the extra usage chunk again.
	dropUsage := false
	if req.Stream && !req.IncludeUsage {
		if err := forceIncludeUsage(req); err != nil {
			x.fail(rt, metrics.ReasonSerializationError, serializationError(err))
			return
		}
		dropUsage = true
	}
	out, err := req.Encode()
	if err != nil {
		x.fail(rt, metrics.ReasonSerializationError, serializationError(err))
		return
	}
	rt.tools = countTools(req.Fields["tools"])
	rt.processing = time.Since(x.start)

	call := &upstreamCall{
		model:     model,
		ref:       ref,
		key:       backendKey(ref),
		target:    target.url,
		reqURL:    target.req,
		header:    header,
		body:      out,
		stream:    req.Stream,
		dropUsage: dropUsage,
		timeout:   upstreamTimeout(ref, x.listener),
	}
	x.forward(rt, call)
}

// readBody reads the request body within the listener's limit.
func (x *exchange) readBody() ([]byte, bool) {
	limit := x.listener.BodyLimit()
	tooLarge := func() ([]byte, bool) {
		x.error(metrics.ReasonParseError)
		writeError(x.w, newError(http.StatusRequestEntityTooLarge, typeInvalidRequest,
			fmt.Sprintf("the request body exceeds this listener's limit of %d bytes", limit)).withCode("request_too_large"))
		return nil, false
	}
	if x.r.ContentLength > limit {
		return tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(x.w, x.r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge()
		}
		if x.r.Context().Err() != nil {
			x.clientGone()
			return nil, false
		}
		x.error(metrics.ReasonParseError)
		writeError(x.w, newError(http.StatusBadRequest, typeInvalidRequest, "could not read the request body"))
		return nil, false
	}
	return body, true
}

// input builds what signals read from the parsed request.
func input(req *chat.Request) signal.Input {
	in := signal.Input{Text: req.LastUserText(), AllTexts: make([]string, 0, len(req.Messages))}
	for _, m := range req.Messages {
		in.AllTexts = append(in.AllTexts, m.Content)
		if m.Role == "user" {
			in.UserTexts = append(in.UserTexts, m.Content)
		}
	}
	return in
}

// routeFailed answers a routing error: an unknown model is the client's
// mistake (404, as OpenAI answers it); anything else is ours.
func (x *exchange) routeFailed(err error) {
	if x.r.Context().Err() != nil {
		x.clientGone()
		return
	}
	if errors.Is(err, engine.ErrUnknownModel) {
		writeError(x.w, newError(http.StatusNotFound, typeInvalidRequest, err.Error()).withParam("model").withCode("model_not_found"))
		return
	}
	x.error(metrics.ReasonClassificationFailed)
	x.s.log.Error("routing failed", "request_id", x.id, "error", err.Error())
	writeError(x.w, newError(http.StatusInternalServerError, typeServer, "routing failed: "+err.Error()).withCode("routing_failed"))
}

// blocked answers a security block with the earlier-revision 403 shape.
// Routed already counted it (error reason and detection action).
func (x *exchange) blocked(rt *routing) {
	b := rt.res.Block
	entities := b.Entities
	if entities == nil {
		entities = []string{}
	}
	rt.processing = time.Since(x.start)
	rt.set(x.w.Header())
	e := newError(http.StatusForbidden, typeSecurityViolation, b.Message).withCode(b.Code)
	e.Details = &errorDetails{EntitiesFound: entities, ActionTaken: "blocked"}
	writeError(x.w, e)
}

// fail answers e after routing, with the routing headers, counting reason.
func (x *exchange) fail(rt *routing, reason string, e *apiError) {
	x.error(reason)
	rt.processing = time.Since(x.start)
	rt.set(x.w.Header())
	writeError(x.w, e)
}

// clientGone marks a request whose client went away; nothing can be written.
func (x *exchange) clientGone() {
	x.cancelled = true
	x.error(metrics.ReasonCancellation)
}

func serializationError(err error) *apiError {
	return newError(http.StatusInternalServerError, typeServer, "could not encode the rewritten request: "+err.Error())
}

// upstreamHeader builds the forwarded request's headers. Client headers are not
// copied wholesale: only what the backend needs goes upstream, so nothing the
// client sent for the gateway (its key in particular) leaks to a backend.
func (x *exchange) upstreamHeader(ref *recipes.BackendRef, stream bool) http.Header {
	// Room for these, the routing headers rt.upstream adds and a few extra.
	h := make(http.Header, 8+len(ref.ExtraHeaders))
	hv := newHeaderValues(2)
	hv.set(h, "Content-Type", "application/json")
	if stream {
		hv.set(h, "Accept", "text/event-stream")
	} else {
		hv.set(h, "Accept", "application/json")
	}
	for k, v := range ref.ExtraHeaders {
		h.Set(k, v)
	}
	switch {
	case ref.APIKeyEnv != "" && os.Getenv(ref.APIKeyEnv) != "":
		h.Set("Authorization", "Bearer "+os.Getenv(ref.APIKeyEnv))
	case len(x.listener.APIKeys) == 0 && x.r.Header.Get("Authorization") != "":
		// No gateway keys: the client's key is meant for the backend.
		h.Set("Authorization", x.r.Header.Get("Authorization"))
	}
	return h
}

// runPlugins runs the decision's plugins on the rewritten request. ok is false
// when an answer was already written (a plugin with on_error: fail failed).
func (x *exchange) runPlugins(rt *routing, req *chat.Request, header http.Header) (imm *plugin.Immediate, ok bool) {
	res := rt.res
	if x.s.opts.Plugins == nil {
		for _, p := range res.Plugins {
			rt.plugins = append(rt.plugins, plugin.Report{Type: p.Type, Status: pluginNotRun})
		}
		return nil, true
	}
	out, err := x.s.opts.Plugins.Request(x.r.Context(), res.Plugins, &plugin.Request{
		Chat: req, Header: header, Decision: res.Decision, Model: res.Model, Mode: plugin.ModeLive,
	})
	rt.plugins = out.Reports
	rt.cacheStatus = out.CacheStatus
	if err != nil {
		if x.r.Context().Err() != nil {
			x.clientGone()
			return nil, false
		}
		x.fail(rt, metrics.ReasonUnknown, newError(http.StatusInternalServerError, typePlugin, err.Error()))
		return nil, false
	}
	return out.Immediate, true
}

// forceIncludeUsage sets stream_options.include_usage, keeping the client's
// other stream options.
func forceIncludeUsage(req *chat.Request) error {
	opts := map[string]json.RawMessage{}
	if raw, ok := req.Fields["stream_options"]; ok {
		_ = json.Unmarshal(raw, &opts) // chat.Parse checked it is an object or null
		if opts == nil {
			opts = map[string]json.RawMessage{}
		}
	}
	opts["include_usage"] = json.RawMessage("true")
	return req.Set("stream_options", opts)
}

// countTools is the number of tools forwarded (after plugins), for
// x-tools-selected.
func countTools(raw json.RawMessage) int {
	if len(bytes.TrimSpace(raw)) == 0 {
		return 0
	}
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return 0
	}
	return len(tools)
}

// upstreamTimeout is the backend_ref's timeout, else the listener's, else the
// default listener timeout.
func upstreamTimeout(ref *recipes.BackendRef, l recipes.Listener) time.Duration {
	if ref.Timeout.Duration > 0 {
		return ref.Timeout.Duration
	}
	if l.Timeout.Duration > 0 {
		return l.Timeout.Duration
	}
	return recipes.DefaultListenerTimeout
}
