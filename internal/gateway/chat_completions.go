package gateway

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/recipes"
)

// APIFormatAnthropic is the api_format of models behind Anthropic-style
// (Messages API) upstreams.
const APIFormatAnthropic = dataplane.APIFormatAnthropic

// chatCompletions serves POST /v1/chat/completions: read the body within the
// listener's limit, run the request phase every front end shares
// (internal/dataplane: parse, route on the generation taken at the start of the
// request, security block, rewrite for the selected model, plugins, reasoning
// mode), then write its answer or forward the rewritten request.
func (x *exchange) chatCompletions() {
	if x.gen == nil {
		x.answer(dataplane.ErrorAnswer(dataplane.NoGeneration(), nil))
		return
	}
	body, ok := x.readBody()
	if !ok {
		return
	}
	x.chat(body)
}

// chat runs a chat-completion body through the request phase and answers it
// or forwards it.
func (x *exchange) chat(body []byte) {
	// No gateway keys: the client's key is meant for the backend.
	clientAuth := ""
	if len(x.listener.APIKeys) == 0 {
		clientAuth = x.r.Header.Get("Authorization")
	}
	x.dp.UsePlugins(x.s.opts.Plugins) // the runner in force for this request
	out := x.dp.Run(x.r.Context(), &dataplane.Request{
		Gen: x.gen, Recipe: x.listener.Entrypoint, ID: x.id, Start: x.start, Body: body, ClientAuthorization: clientAuth,
		ClientHeader: x.r.Header,
	})
	switch {
	case out.Cancelled:
		x.cancelled = true // counted by the request phase
		return
	case out.Answer != nil:
		x.answer(out.Answer) // in the client's protocol already
		return
	}
	target := x.s.ups.target(out.Backend, out.Model.APIFormat) // parsed once per backend; Run checked it
	call := &upstreamCall{
		model:   out.Model,
		ref:     out.Backend,
		key:     backendKey(out.Backend),
		target:  target.url,
		reqURL:  target.req,
		header:  out.Header,
		body:    out.Body,
		stream:  out.Stream,
		timeout: upstreamTimeout(out.Backend, x.listener),
	}
	x.forward(&out.Routing, call)
}

// answer writes an answer the request phase gave instead of forwarding: its
// headers over the exchange's (x-request-id is already there), its status and
// its body, with its length. With the length the flush sends the whole
// answer in one write before the bookkeeping that follows (as writeJSON
// does); without it net/http would chunk the flushed answer and write the
// last chunk, which the client waits for, only once the handler returns.
func (x *exchange) answer(a *dataplane.Answer) {
	h := x.w.Header()
	for k, v := range a.Header {
		h[k] = v
	}
	if bodyAllowed(a.Status) {
		h["Content-Length"] = []string{strconv.Itoa(len(a.Body))}
	} else {
		h.Del("Content-Length")
	}
	x.w.WriteHeader(a.Status)
	if _, err := x.w.Write(a.Body); err != nil {
		if x.r.Context().Err() != nil {
			x.clientGone()
		}
		return
	}
	x.w.Flush()
}

// upstreamBackends lets the request phase pick backends the gateway's way:
// the first healthy backend_ref, its URL parsed once.
type upstreamBackends struct{ u *Upstreams }

func (b upstreamBackends) Pick(m *recipes.Model) (*recipes.BackendRef, bool) { return b.u.pick(m) }

func (b upstreamBackends) Target(ref *recipes.BackendRef, apiFormat string) (*url.URL, error) {
	t := b.u.target(ref, apiFormat)
	return t.url, t.err
}

// readBody reads the request body within the listener's limit.
func (x *exchange) readBody() ([]byte, bool) {
	limit := x.listener.BodyLimit()
	tooLarge := func() ([]byte, bool) {
		x.error(metrics.ReasonParseError)
		x.answer(dataplane.ErrorAnswer(dataplane.TooLarge(limit), nil))
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
		x.answer(dataplane.ErrorAnswer(dataplane.BadBody(), nil))
		return nil, false
	}
	return body, true
}

// fail answers e after routing, with the routing headers, counting reason.
func (x *exchange) fail(rt *dataplane.Routing, reason string, e *dataplane.Error) {
	x.error(reason)
	x.failCounted(rt, e)
}

// failCounted answers e after routing, with the routing headers; the data
// plane counted it.
func (x *exchange) failCounted(rt *dataplane.Routing, e *dataplane.Error) {
	rt.Processing = time.Since(x.start)
	rt.SetClientHeaders(x.w.Header())
	writeError(x.w, e)
}

// clientGone marks a request whose client went away; nothing can be written.
func (x *exchange) clientGone() {
	x.cancelled = true
	x.error(metrics.ReasonCancellation)
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
