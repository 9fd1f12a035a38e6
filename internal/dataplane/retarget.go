package dataplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/reasoning"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/translate"
	"github.com/junction-router/junction/recipes"
)

// retargetBase is what rewriting the request for another candidate starts
// from: the request as the decision's plugins left it, before routing wrote
// the selected model's reasoning fields, and the headers before a Messages
// API backend's were made from them. Kept only when the decision's policy is
// active (recipes.Policy.Active), so a plain request pays nothing.
type retargetBase struct {
	gen        *engine.Generation
	fields     map[string]json.RawMessage
	header     http.Header
	clientAuth string
	id         string
}

// keepRetargetBase snapshots the request for Exchange.Retarget.
func (p *Plane) keepRetargetBase(in *Request, out *Outcome, fields map[string]json.RawMessage, header http.Header) {
	out.retarget = &retargetBase{gen: in.Gen, fields: maps.Clone(fields), header: header.Clone(), clientAuth: in.ClientAuthorization, id: in.ID}
}

// Retarget rewrites the request for another candidate of the decision's
// fallback (or another backend of the same model): the model name, the
// reasoning mode in the new model's family syntax, the api_format (a
// Messages API backend gets the translated body), and the new backend's
// headers (extra_headers, credentials). What the plugins did stays; they do
// not run again. From here on the exchange meters and translates the answer
// as the new model's, and x-selected-model says the new model. The outcome
// must come from a Run whose decision had an active policy. An error means
// this candidate cannot be tried (it is not counted: the caller moves on).
func (x *Exchange) Retarget(ref recipes.ModelRef, model *recipes.Model, backend *recipes.BackendRef, target *url.URL) error {
	out := &x.Out
	base := out.retarget
	if base == nil {
		return errors.New("the request was not prepared for a retry (no active reliability policy)")
	}
	if e := CheckBackendKey(backend, model.Name); e != nil {
		return e // never called without its key
	}
	anthropic := IsAnthropic(model.APIFormat)
	if anthropic && !x.plane.anthropic {
		return fmt.Errorf("model %q has api_format anthropic, which this front end does not translate to", model.Name)
	}
	res := out.Result
	req := *out.Chat
	req.Fields = maps.Clone(base.fields)
	// Inlined images and the forced include_usage are the same for every
	// candidate: take them as forwarded.
	for _, k := range []string{"messages", "stream_options"} {
		if v, ok := out.Chat.Fields[k]; ok {
			req.Fields[k] = v
		}
	}
	if err := req.Set("model", model.Name); err != nil {
		return err
	}
	mode := res.Reasoning
	if model.Name != res.Model && res.ReasonCode != engine.ReasonModelSpecified {
		mode = base.gen.Reasoning(ref)
	}
	if res.ReasonCode != engine.ReasonModelSpecified {
		if err := reasoning.Apply(req.Fields, mode); err != nil {
			return err
		}
	}
	var body []byte
	var err error
	if anthropic {
		body, err = translate.ChatToAnthropic(req.Fields)
	} else {
		body, err = req.Encode()
	}
	if err != nil {
		return err
	}

	h := base.header.Clone()
	if out.Backend != nil {
		for k := range out.Backend.ExtraHeaders {
			h.Del(k)
		}
	}
	h.Del("Authorization")
	h = UpstreamHeader(h, backend, req.Stream, base.clientAuth)
	if anthropic {
		AnthropicHeader(h)
	}

	rt := &out.Routing
	if model.Name != res.Model {
		if rt.FallbackFrom == "" {
			rt.FallbackFrom = res.Model
		}
		res.Model = model.Name
		res.Reasoning = mode
		// The answer is the new model's: the response cache keeps it under
		// that model's configuration epoch.
		out.cacheScope = x.plane.epochs.Scope(base.gen.Document(), res.Recipe, res.Decision, model.Name).Retargeted(out.cacheScope)
	}
	rt.SetUpstreamHeaders(h, base.id)
	chatReq := req
	out.Chat = &chatReq
	out.Model, out.Backend, out.Target = model, backend, target
	out.Header, out.Body = h, body
	x.anthropic = anthropic
	x.model = model.Name
	return nil
}

// Attempted records how many upstream attempts the request made, for the
// answer's x-junction-attempts and routing_metadata (set by a front end
// that ran the decision's policy).
func (x *Exchange) Attempted(n int) { x.Out.Routing.Attempts = n }

// AttemptFailed counts one failed upstream attempt that is not the
// request's answer (llm_request_errors_total with the attempt's model).
func (x *Exchange) AttemptFailed(model, reason string) { x.plane.metrics.Error(model, reason) }

// StatusReason is the llm_request_errors_total reason of an upstream error
// status.
func StatusReason(status int) string {
	if status >= 500 {
		return metrics.ReasonUpstream5xx
	}
	return metrics.ReasonUpstream4xx
}
