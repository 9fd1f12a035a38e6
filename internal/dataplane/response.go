package dataplane

import (
	"context"
	"net/http"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/respcache"
	"github.com/junction-router/junction/recipes"
)

// responsePhase is what a plugin runner offers for the response phase
// (plugin.Stage does).
type responsePhase interface {
	plugin.ResponseRunner
	HasResponsePhase(refs []recipes.PluginRef) bool
}

// wantsResponse reports whether a forwarded request's decision has plugins
// with a response phase, so the exchange keeps the answer for them.
func (p *Plane) wantsResponse(out *Outcome) bool {
	return out != nil && out.pluginChat != nil // kept by Run for exactly those decisions
}

// runResponsePhase runs the response phase of the decision's plugins on a
// successful (2xx) upstream answer: body is a non-streamed answer as the
// upstream sent it, or a streamed one merged into a chat.completion
// (streamEnded). It returns the plugins' reports; a failure is in its report
// (the answer has been sent; nothing else can change).
func (p *Plane) runResponsePhase(ctx context.Context, out *Outcome, status int, body []byte) []plugin.Report {
	ro, _ := p.responsePhase(ctx, out, status, body)
	return ro.Reports
}

// responsePhase runs the response phase and returns its whole outcome (the
// response gate applies it); ok is false when no plugin wanted the answer.
func (p *Plane) responsePhase(ctx context.Context, out *Outcome, status int, body []byte) (plugin.ResponseOutcome, bool) {
	rp, ok := p.plugins.(responsePhase)
	if !ok || !p.wantsResponse(out) || out.Result == nil || status < 200 || status > 299 {
		return plugin.ResponseOutcome{}, false
	}
	res := out.Result
	header := out.pluginHeader
	if header == nil {
		header = out.Header
	}
	req := &plugin.Request{Chat: out.pluginChat, Header: header, Decision: res.Decision, Model: res.Model,
		Mode: plugin.ModeLive, Signals: MatchedSignals(res)}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	ro, err := rp.Response(respcache.WithScope(ctx, out.cacheScope), res.Plugins, &plugin.Response{Request: req, Status: status, Body: body})
	if err != nil && p.log != nil {
		p.log.Error("plugin response phase failed", "decision", res.Decision, "error", err)
	}
	return ro, true
}

// MatchedSignals lists the signals that matched, for plugins.
func MatchedSignals(res *engine.Result) []plugin.Signal {
	var out []plugin.Signal
	for _, s := range res.Signals {
		if s.Matched {
			out = append(out, plugin.Signal{Kind: s.Kind, Name: s.Name})
		}
	}
	return out
}
