// Package dataplane is the request phase every front end shares: the gateway
// (internal/gateway, a plain HTTP listener) and the Envoy ext_proc adapter
// (internal/extproc) both hand it a chat-completion body and get back either
// the request to forward (rewritten body, upstream headers, the backend it
// is for) or a complete answer to give instead (an OpenAI-style error, the
// 403 security block, a plugin's immediate answer). Parsing, routing, the
// decision's plugins, the reasoning mode and every byte of those answers are
// decided here once, so a request is judged and answered the same way
// whichever way it arrived, and its request-phase metrics are labelled the
// same way.
//
// The response half is shared the same way: a front end creates one
// Exchange per request (exchange.go), which owns the request phase's
// outcome, the protocol translation both ways (a Responses API request, a
// Messages API backend; internal/translate), reading usage from the answer
// (JSON or event stream), every metric of the request (tokens, cost,
// latency, TTFT/TPOT, the decision's), and the response phase (a streamed
// answer collected, the completed answer handed to the decision's plugins).
// The gateway and ext_proc only move bytes between their wire and it.
//
// What must not live here: anything about a wire protocol (HTTP writers,
// gRPC messages), connections, timeouts of the upstream call, or the answer
// relay itself. It takes and gives bytes and values; it never calls a
// backend.
package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/reasoning"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/ratelimit"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/tracing"
	"github.com/junction-router/junction/internal/translate"
	"github.com/junction-router/junction/recipes"
)

// APIFormatAnthropic is the api_format of models behind Anthropic-style
// (Messages API) upstreams.
const APIFormatAnthropic = "anthropic"

// IsAnthropic reports whether an api_format names the Messages API.
func IsAnthropic(apiFormat string) bool { return strings.EqualFold(apiFormat, APIFormatAnthropic) }

// Config is what a Plane needs. Every field is optional.
type Config struct {
	// Metrics receives the request-phase metrics; nil records nothing.
	Metrics *metrics.Metrics
	// Plugins runs decision plugins; nil reports each as not_run.
	Plugins plugin.Runner
	// Backends picks a model's backend; nil picks the first backend_ref.
	Backends Backends
	// AnthropicUpstreams: the front end translates answers from Messages
	// API backends (api_format anthropic) back to chat completions, so the
	// request phase translates requests for them. Without it such models
	// answer 501.
	AnthropicUpstreams bool
	// Logger receives routing failures (never request text); nil discards.
	Logger interface {
		Error(msg string, args ...any)
	}
	// Files opens the uploaded images that image parts name by file_id
	// (input_image with file_id, or image_url with file_id); they are
	// inlined as data URLs before the request goes upstream. nil answers
	// such a part 400.
	Files Files
	// Responses is the Responses API's response store
	// (global.services.response_api); nil keeps nothing, and the stored-
	// response routes and previous_response_id say the store is off.
	Responses storage.Responses
	// Failover: the front end retries and fails over itself under a
	// decision's reliability policy (Exchange.Retarget), so the request
	// phase keeps what rewriting for another candidate needs. ext_proc
	// leaves retries to Envoy and pays nothing for it.
	Failover bool
	// Limiter applies global.rate_limits; nil admits everything. Both front
	// ends of a server share one, so that a limit counts across them.
	Limiter *ratelimit.Limiter
	// Replays receives the decision record of every request whose decision
	// runs router_replay, once the request is over (Exchange.Record); nil
	// records nothing.
	Replays Replays
}

// Plane runs the request phase. It is safe for concurrent use.
type Plane struct {
	anthropic bool
	metrics   *metrics.Metrics
	plugins   plugin.Runner
	backends  Backends
	log       interface{ Error(string, ...any) }
	files     Files
	responses storage.Responses
	epochs    *respcache.Epochs // the response cache's scope per recipe, decision and model (shared by copies)
	failover  bool
	// beside holds a token per response phase running on its own goroutine
	// (runBeside; shared by copies).
	beside  chan struct{}
	limiter *ratelimit.Limiter
	replays Replays
}

// New returns a Plane.
func New(cfg Config) *Plane {
	p := &Plane{metrics: cfg.Metrics, plugins: cfg.Plugins, backends: cfg.Backends, log: cfg.Logger, anthropic: cfg.AnthropicUpstreams, files: cfg.Files, responses: cfg.Responses, epochs: &respcache.Epochs{}, failover: cfg.Failover, limiter: cfg.Limiter, replays: cfg.Replays,
		beside: make(chan struct{}, maxBeside)}
	if p.backends == nil {
		p.backends = &FirstBackend{}
	}
	if p.log == nil {
		p.log = nopLogger{}
	}
	return p
}

type nopLogger struct{}

func (nopLogger) Error(string, ...any) {}

// Request is one chat-completion request as a front end received it.
type Request struct {
	// Gen is the generation the request is routed with; the caller took it
	// when the request arrived and keeps it for the whole request.
	Gen *engine.Generation
	// Recipe is the entrypoint recipe; empty means the default recipe.
	Recipe string
	// ID is the request id (see RequestID).
	ID string
	// Start is when the front end received the request; Processing and the
	// immediate answers' created timestamps count from it.
	Start time.Time
	// Body is the raw request body. It is parsed in place: the caller must not
	// modify it afterwards.
	Body []byte
	// Header is what the upstream request's headers start from, changed in
	// place: the gateway passes nil (it builds them from nothing), ext_proc a
	// copy of the client's headers (Envoy forwards those). The routing
	// headers, extra_headers, credentials and the plugins' changes are
	// applied to it.
	Header http.Header
	// ClientAuthorization is forwarded as Authorization to a backend with
	// forward_client_auth; the gateway sets it only on a listener without
	// api_keys (on one with keys, the client's key is the gateway's).
	ClientAuthorization string
	// ClientHeader is the client's request headers, for a front end whose
	// Header does not start from them (the gateway): the decision's plugins
	// see them beside the upstream headers, since some act on what the
	// client sent (a response cache's bypass header), less credentials and
	// hop-by-hop headers. They are lent for the plugin stage only: none is
	// forwarded unless a plugin changed it.
	ClientHeader http.Header
}

// RoutedPanic is what Run panics with when something panics after routing
// decided (a plugin, say): the original value, and the decision, so that the
// front end that recovers it labels the failure with the request's decision
// and model as it would any other error of that request.
type RoutedPanic struct {
	Result *engine.Result
	Value  any
}

func (p *RoutedPanic) String() string { return fmt.Sprint(p.Value) }

// Outcome is the result of the request phase: Answer is set when the
// request is answered without a backend; otherwise the request goes to
// Target with Header and Body. Cancelled means the request's context ended
// (the client went away): nothing is to be written.
type Outcome struct {
	// Result is the routing decision; nil when routing did not run (a body
	// that does not parse, an unknown model, a cancelled request).
	Result *engine.Result
	// Routing is what the client's routing headers report; meaningful only
	// when Result is set.
	Routing Routing
	// Chat is the parsed request as forwarded; nil when it did not parse.
	Chat *chat.Request
	// pluginChat is the request as the decision's plugins left it, before
	// routing wrote its own fields (reasoning mode, include_usage, a
	// translation): what the response phase is given, so that a plugin
	// sees the same request in both phases. Kept only when the decision has
	// response-phase plugins.
	pluginChat *chat.Request
	// pluginHeader is the headers the plugins saw, the client's lent ones
	// included (see Request.ClientHeader), kept with pluginChat.
	pluginHeader http.Header
	// cacheScope is the response cache's scope of the request (recipe and
	// configuration epoch), for the response phase.
	cacheScope respcache.Scope

	Model   *recipes.Model
	Backend *recipes.BackendRef
	Target  *url.URL
	Header  http.Header
	Body    []byte
	// Stream: the client asked for server-sent events.
	Stream bool
	// DropUsage: include_usage was turned on for the metrics although the
	// client did not ask for it; the relay drops the usage-only chunk.
	DropUsage bool

	Answer    *Answer
	Cancelled bool

	// retarget is kept for Exchange.Retarget when the decision's policy is
	// active.
	retarget *retargetBase
	// admission holds the request's rate-limit tokens until its usage
	// settles them.
	admission ratelimit.Admission
	// pending is the request's rate-limit take while it is held back for
	// the plugin stage (Plane.admit), nil once resolved.
	pending *ratelimit.Pending
	// replay is what the decision record needs beyond the result, kept
	// when the decision runs router_replay and a recorder is configured.
	replay *replayInput
}

// Category is the category label of the request (its decision, or default).
func (o *Outcome) Category() string { return metrics.Category(o.Result) }

// ModelLabel is the model label of the request's metrics.
func (o *Outcome) ModelLabel() string {
	if o.Result == nil {
		return metrics.UnknownModel
	}
	return metrics.ModelLabel(o.Result)
}

// Run parses, routes and rewrites one chat-completion request. It records
// the request-phase metrics (routing, detections, reasoning, and an error
// when the outcome is an error or a cancellation); the front end records the
// rest (llm_model_requests_total when it forwards, the answer's metrics and
// router_requests_total when the request is done).
func (p *Plane) Run(ctx context.Context, in *Request) Outcome {
	var out Outcome
	p.run(ctx, in, &out)
	return out
}

func (p *Plane) run(ctx context.Context, in *Request, out *Outcome) {
	if in.Gen == nil {
		out.Answer = ErrorAnswer(NoGeneration(), p.idHeader(in))
		return
	}
	req, err := chat.Parse(in.Body)
	if err != nil {
		p.metrics.Error(metrics.UnknownModel, metrics.ReasonParseError)
		var ce *chat.Error
		e := NewError(http.StatusBadRequest, TypeInvalidRequest, err.Error())
		if errors.As(err, &ce) {
			e = NewError(http.StatusBadRequest, TypeInvalidRequest, ce.Message).WithParam(ce.Param)
		}
		out.Answer = ErrorAnswer(e, p.idHeader(in))
		return
	}
	out.Chat = req

	traced := tracing.Recording(ctx)
	var routeStart time.Time
	if traced {
		routeStart = time.Now()
	}
	input := Input(req)
	res, err := in.Gen.Route(ctx, in.Recipe, &engine.Request{Model: req.Model, Input: input})
	if traced {
		traceRoute(ctx, in.Recipe, routeStart, time.Now(), res, err)
	}
	if err != nil {
		p.routeFailed(ctx, in, out, err)
		return
	}
	if ctx.Err() != nil {
		p.cancelled(out, metrics.UnknownModel)
		return
	}
	out.Result = res
	p.metrics.Routed(res)
	if p.replays != nil && replayed(res.Plugins) {
		out.replay = &replayInput{input: input, requestID: in.ID, stream: req.Stream, gen: in.Gen}
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler { // net/http's way to cut a connection
				panic(v)
			}
			panic(&RoutedPanic{Result: res, Value: v})
		}
	}()
	rt := &out.Routing
	rt.Result = res
	label := metrics.ModelLabel(res)

	if res.Block != nil {
		out.Answer = p.blocked(in, rt)
		return
	}
	model, ok := in.Gen.Model(res.Model)
	if !ok {
		p.fail(in, out, label, metrics.ReasonClassificationFailed, NewError(http.StatusInternalServerError, TypeServer,
			fmt.Sprintf("routing selected model %q, which is not configured", res.Model)))
		return
	}
	anthropic := IsAnthropic(model.APIFormat)
	if anthropic && !p.anthropic {
		p.fail(in, out, label, metrics.ReasonUnknown, NewError(http.StatusNotImplemented, TypeNotImplemented,
			fmt.Sprintf("model %q has api_format anthropic; this front end does not translate to Anthropic-style upstreams (the standalone gateway does)", model.Name)))
		return
	}

	// Rewrite for the selected model; plugins see the model they will reach.
	if err := req.Set("model", res.Model); err != nil {
		p.fail(in, out, label, metrics.ReasonSerializationError, serializationError(err))
		return
	}
	ref, ok := p.backends.Pick(model)
	if !ok {
		p.fail(in, out, label, metrics.ReasonUpstream5xx, NewError(http.StatusBadGateway, TypeUpstream,
			fmt.Sprintf("model %q has no backend_refs to send the request to", model.Name)))
		return
	}
	target, err := p.backends.Target(ref, model.APIFormat)
	if err != nil {
		p.fail(in, out, label, metrics.ReasonUpstream5xx, NewError(http.StatusBadGateway, TypeUpstream,
			fmt.Sprintf("upstream for model %q is misconfigured: %v", model.Name, err)))
		return
	}
	if e := CheckBackendKey(ref, model.Name); e != nil {
		p.fail(in, out, label, metrics.ReasonUpstream5xx, e)
		return
	}
	pctx, ok := p.admit(ctx, in, out, req, res, label)
	if !ok {
		return
	}
	header := UpstreamHeader(in.Header, ref, req.Stream, in.ClientAuthorization)
	rt.SetUpstreamHeaders(header, in.ID)

	if len(res.Plugins) > 0 {
		lent := lendClientHeaders(header, in.ClientHeader)
		imm, ok := p.runPlugins(pctx, in, out, rt, req, &header)
		if !ok {
			return
		}
		if imm != nil {
			out.Answer = ImmediateAnswer(rt, req, imm, in.ID, in.Start, p.idHeader(in))
			return
		}
		if rp, ok := p.plugins.(responsePhase); ok && rp.HasResponsePhase(res.Plugins) {
			// Routing only sets and deletes top-level fields from here on, so
			// a copy of the field map keeps this state.
			snap := *req
			snap.Fields = maps.Clone(req.Fields)
			out.pluginChat = &snap
			out.pluginHeader = header
			if len(lent) > 0 {
				out.pluginHeader = header.Clone()
			}
		}
		returnClientHeaders(header, lent)
	}

	if p.failover && res.Policy.Active() {
		p.keepRetargetBase(in, out, req.Fields, header)
	}

	// Reasoning is written after the plugins: routing owns these fields, so a
	// plugin (request_params strip_unknown, say) cannot erase them. A model
	// named by the client keeps the client's reasoning fields: routing made
	// no reasoning decision for it.
	if res.ReasonCode != engine.ReasonModelSpecified {
		if err := reasoning.Apply(req.Fields, res.Reasoning); err != nil {
			p.fail(in, out, label, metrics.ReasonSerializationError, serializationError(err))
			return
		}
	}

	// Usage is needed for cost and token metrics even when the client did not
	// ask for it; the relay drops the extra usage chunk again.
	if req.Stream && !req.IncludeUsage {
		if err := ForceIncludeUsage(req); err != nil {
			p.fail(in, out, label, metrics.ReasonSerializationError, serializationError(err))
			return
		}
		out.DropUsage = true
	}
	// Images named by file_id go upstream inline, after the plugins (they
	// see the short reference, not megabytes of base64).
	if e := p.inlineImages(ctx, req); e != nil {
		if ctx.Err() != nil {
			p.cancelled(out, label)
			return
		}
		reason := metrics.ReasonParseError
		if e.Status >= 500 {
			reason = metrics.ReasonUnknown
		}
		p.fail(in, out, label, reason, e)
		return
	}
	var body []byte
	if anthropic {
		body, err = translate.ChatToAnthropic(req.Fields)
		var te *translate.Error
		if errors.As(err, &te) {
			p.fail(in, out, label, metrics.ReasonParseError, NewError(http.StatusBadRequest, TypeInvalidRequest, te.Message).WithParam(te.Param))
			return
		}
		AnthropicHeader(header)
	} else {
		body, err = req.Encode()
	}
	if err != nil {
		p.fail(in, out, label, metrics.ReasonSerializationError, serializationError(err))
		return
	}
	rt.Tools = CountTools(req.Fields["tools"])
	rt.Processing = time.Since(in.Start)
	out.Model, out.Backend, out.Target = model, ref, target
	out.Header, out.Body, out.Stream = header, body, req.Stream
}

// idHeader is the headers of an answer given before routing: x-request-id.
func (p *Plane) idHeader(in *Request) http.Header {
	h := make(http.Header, 4)
	if in.ID != "" {
		h[HeaderRequestID] = []string{in.ID}
	}
	return h
}

// routeFailed answers a routing error: an unknown model is the client's
// mistake (404, as OpenAI answers it); anything else is ours.
func (p *Plane) routeFailed(ctx context.Context, in *Request, out *Outcome, err error) {
	if ctx.Err() != nil {
		p.cancelled(out, metrics.UnknownModel)
		return
	}
	if errors.Is(err, engine.ErrUnknownModel) {
		out.Answer = ErrorAnswer(NewError(http.StatusNotFound, TypeInvalidRequest, err.Error()).
			WithParam("model").WithCode("model_not_found"), p.idHeader(in))
		return
	}
	p.metrics.Error(metrics.UnknownModel, metrics.ReasonClassificationFailed)
	p.log.Error("routing failed", "request_id", in.ID, "error", err.Error())
	out.Answer = ErrorAnswer(NewError(http.StatusInternalServerError, TypeServer, "routing failed: "+err.Error()).
		WithCode("routing_failed"), p.idHeader(in))
}

// cancelled marks a request whose client went away; nothing can be written.
func (p *Plane) cancelled(out *Outcome, model string) {
	out.Cancelled = true
	p.metrics.Error(model, metrics.ReasonCancellation)
}

// blocked answers a security block with the earlier-revision 403 shape.
// Routed already counted it (error reason and detection action).
func (p *Plane) blocked(in *Request, rt *Routing) *Answer {
	b := rt.Result.Block
	entities := b.Entities
	if entities == nil {
		entities = []string{}
	}
	rt.Processing = time.Since(in.Start)
	h := p.idHeader(in)
	rt.SetClientHeaders(h)
	e := NewError(http.StatusForbidden, TypeSecurityViolation, b.Message).WithCode(b.Code)
	e.Details = &ErrorDetails{EntitiesFound: entities, ActionTaken: "blocked"}
	return ErrorAnswer(e, h)
}

// fail answers e after routing, with the routing headers, counting reason.
func (p *Plane) fail(in *Request, out *Outcome, model, reason string, e *Error) {
	p.metrics.Error(model, reason)
	out.Routing.Processing = time.Since(in.Start)
	h := p.idHeader(in)
	out.Routing.SetClientHeaders(h)
	out.Answer = ErrorAnswer(e, h)
}

// runPlugins runs the decision's plugins on the rewritten request. ok is
// false when the outcome is already decided (a plugin with on_error: fail
// failed, or the request was cancelled).
func (p *Plane) runPlugins(ctx context.Context, in *Request, out *Outcome, rt *Routing, req *chat.Request, header *http.Header) (imm *plugin.Immediate, ok bool) {
	res := rt.Result
	if p.plugins == nil {
		for _, pr := range res.Plugins {
			rt.Plugins = append(rt.Plugins, plugin.Report{Type: pr.Type, Status: PluginNotRun})
		}
		return nil, true
	}
	preq := &plugin.Request{Chat: req, Header: *header, Decision: res.Decision, Model: res.Model, Recipe: res.Recipe, Mode: plugin.ModeLive, Signals: MatchedSignals(res)}
	// Cache entries are kept per recipe and configuration epoch (the host's
	// cache adds them to every namespace), in both phases.
	out.cacheScope = p.epochs.Scope(in.Gen.Document(), res.Recipe, res.Decision, res.Model).ForRequest()
	ctx = respcache.WithScope(ctx, out.cacheScope)
	if res.PII.Scanned && len(res.Plugins) > 0 {
		pii, err := LocatePII(req, &res.PII)
		if err != nil {
			if !p.resolve(ctx, in, out, metrics.ModelLabel(res)) {
				return nil, false
			}
			// Plugins that mask personal data must not be told there is none.
			p.fail(in, out, metrics.ModelLabel(res), metrics.ReasonUnknown, NewError(http.StatusInternalServerError, TypePlugin, err.Error()))
			return nil, false
		}
		preq.PII = pii
	}
	po, err := p.plugins.Request(ctx, res.Plugins, preq)
	// A held-back take's verdict comes before anything of the stage is
	// used: a refused request is answered as if it never reached it.
	if !p.resolve(ctx, in, out, metrics.ModelLabel(res)) {
		return nil, false
	}
	*header = preq.Header
	rt.Plugins = po.Reports
	rt.CacheStatus = po.CacheStatus
	if po.CacheStatus == CacheHit {
		rt.CacheSimilarity, rt.CacheHit = cacheReport(po.Reports)
	}
	if err != nil {
		if ctx.Err() != nil {
			p.cancelled(out, metrics.ModelLabel(res))
			return nil, false
		}
		p.fail(in, out, metrics.ModelLabel(res), metrics.ReasonUnknown, NewError(http.StatusInternalServerError, TypePlugin, err.Error()))
		return nil, false
	}
	return po.Immediate, true
}

// LocatePII places the spans routing detected in req for plugins (see
// plugin.LocatePII): offsets into string contents or into text parts.
func LocatePII(req *chat.Request, scan *engine.PIIScan) (*abi.PIISpans, error) {
	spans := make([]plugin.TextSpan, len(scan.Spans))
	for i, s := range scan.Spans {
		spans[i] = plugin.TextSpan(s)
	}
	return plugin.LocatePII(req, spans, scan.Truncated, scan.Unscanned)
}

// Input builds what signals read from a parsed request.
func Input(req *chat.Request) signal.Input {
	in := signal.Input{Text: req.LastUserText(), AllTexts: make([]string, 0, len(req.Messages))}
	for _, m := range req.Messages {
		in.AllTexts = append(in.AllTexts, m.Content)
	}
	in.UserTexts, in.UserMessages = req.UserTexts()
	return in
}

// UpstreamHeader builds the forwarded request's headers on h (nil: new
// headers): the content type, what the answer should be, the backend's
// extra_headers and its credentials. Credentials are the key api_key_env
// names, else, only with forward_client_auth, the client's own (clientAuth
// for the gateway, which builds headers from nothing; the client's headers
// already in h for ext_proc); any other client credential in h is removed,
// so that a key meant for Junction or Envoy never reaches a backend. A
// backend whose api_key_env is unset gets no Authorization at all (Run
// refuses to call it; see CheckBackendKey).
func UpstreamHeader(h http.Header, ref *recipes.BackendRef, stream bool, clientAuth string) http.Header {
	if h == nil {
		// Room for these, the routing headers and a few extra.
		h = make(http.Header, 8+len(ref.ExtraHeaders))
	}
	if !ref.ForwardClientAuth || ref.APIKeyEnv != "" {
		for _, k := range clientCredentialHeaders {
			delete(h, k)
		}
	}
	hv := make(headerValues, 0, 2)
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
	case ref.APIKeyEnv != "":
		if key := os.Getenv(ref.APIKeyEnv); key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
	case ref.ForwardClientAuth && clientAuth != "":
		h.Set("Authorization", clientAuth)
	}
	return h
}

// clientCredentialHeaders are the headers a client authenticates with,
// removed from the upstream request unless the backend forwards them.
var clientCredentialHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key"}

// CheckBackendKey fails when the backend's api_key_env is unset or empty in
// this process: serve refuses such a document at activation
// (recipes.CheckCredentials), so this catches a variable removed since, and
// answers 502 naming it rather than calling the backend without its key.
func CheckBackendKey(ref *recipes.BackendRef, model string) *Error {
	if ref.APIKeyEnv == "" || os.Getenv(ref.APIKeyEnv) != "" {
		return nil
	}
	return NewError(http.StatusBadGateway, TypeUpstream,
		fmt.Sprintf("the backend of model %q takes its key from the environment variable %s, which is not set; set it where junction serve runs", model, ref.APIKeyEnv))
}

// AnthropicHeader turns the upstream headers UpstreamHeader built into a
// Messages API backend's: the key goes in x-api-key (Bearer stripped) and
// anthropic-version is set unless extra_headers chose one.
func AnthropicHeader(h http.Header) {
	if auth := h.Get("Authorization"); auth != "" {
		h.Del("Authorization")
		if h.Get("X-Api-Key") == "" {
			key, ok := strings.CutPrefix(auth, "Bearer ")
			if !ok {
				key, _ = strings.CutPrefix(auth, "bearer ")
			}
			h.Set("X-Api-Key", key)
		}
	}
	if h.Get("Anthropic-Version") == "" {
		h.Set("Anthropic-Version", translate.AnthropicVersion)
	}
}

// ForceIncludeUsage sets stream_options.include_usage, keeping the client's
// other stream options.
func ForceIncludeUsage(req *chat.Request) error {
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

// CountTools is the number of tools forwarded (after plugins), for
// x-tools-selected.
func CountTools(raw json.RawMessage) int {
	if len(bytes.TrimSpace(raw)) == 0 {
		return 0
	}
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return 0
	}
	return len(tools)
}

// unlentHeaders are the client headers never lent to plugins: credentials
// meant for the front end, and hop-by-hop and framing headers.
var unlentHeaders = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "X-Api-Key": true, "Api-Key": true,
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Content-Length": true, "Host": true,
}

// lendClientHeaders adds to h the client headers it does not have (the
// upstream's own win), and returns what it added.
func lendClientHeaders(h, client http.Header) map[string][]string {
	var lent map[string][]string
	for k, v := range client {
		if unlentHeaders[k] || len(v) == 0 {
			continue
		}
		if _, ok := h[k]; ok {
			continue
		}
		if lent == nil {
			lent = make(map[string][]string, len(client))
		}
		h[k] = slices.Clone(v) // a plugin's AddHeader must not write into the client's slice
		lent[k] = v
	}
	return lent
}

// returnClientHeaders removes from h the lent headers no plugin changed, so
// that only what the plugins set is forwarded. (A plugin that set a lent
// header to the value it already had is indistinguishable from one that left
// it: that header is not forwarded.)
func returnClientHeaders(h http.Header, lent map[string][]string) {
	for k, v := range lent {
		if slices.Equal(h[k], v) {
			delete(h, k)
		}
	}
}
