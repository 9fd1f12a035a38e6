package dataplane

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/replay/replayconfig"
	"github.com/junction-router/junction/recipes"
)

// Replays keeps decision records (router_replay; internal/replay is the
// recorder serve uses). Record is called once a request is over, on the
// request's goroutine after the client has its answer, so it must not
// block: a recorder queues the event and writes it elsewhere.
type Replays interface {
	Record(ev *ReplayEvent)
}

// ReplayEvent is one finished request whose decision runs router_replay.
// It is the recorder's to keep: nothing else holds it after Record.
type ReplayEvent struct {
	RequestID string
	Endpoint  string
	// Start is when the front end received the request; Latency how long
	// until it was over; TTFT until its first streamed token (0: not
	// streamed, or no token).
	Start   time.Time
	Latency time.Duration
	TTFT    time.Duration
	Status  int
	Stream  bool
	// Result is the routing decision (its Plugins name the router_replay
	// and shadow_dispatch configurations).
	Result *engine.Result
	// Model is the selected model's configuration (pricing); nil when
	// none was selected.
	Model *recipes.Model
	// Usage is what the answer reported; nil without usage.
	Usage *cost.Usage
	// Input is the routing input the signals read.
	Input signal.Input
	// Shadow builds the copy of the request for a shadow model (the
	// forwarded chat request, model replaced, not streamed), where it goes
	// and its headers; nil unless the decision runs shadow_dispatch.
	Shadow func(model string) (*ShadowRequest, error)
}

// ShadowRequest is a copy of a request for a shadow model.
type ShadowRequest struct {
	Model  *recipes.Model
	URL    *url.URL
	Header http.Header
	Body   []byte
}

type replayInput struct {
	input     signal.Input
	requestID string
	stream    bool
	gen       *engine.Generation
}

// replayed reports whether refs run router_replay.
func replayed(refs []recipes.PluginRef) bool { return has(refs, replayconfig.TypeReplay) }

func has(refs []recipes.PluginRef, typ string) bool {
	for _, r := range refs {
		if r.Type == typ {
			return true
		}
	}
	return false
}

// shadowOf returns the builder of a shadow copy of the request c (as it
// was forwarded), routed with gen.
func (x *Exchange) shadowOf(c *chat.Request, gen *engine.Generation, requestID string) func(string) (*ShadowRequest, error) {
	backends := x.plane.backends
	return func(name string) (*ShadowRequest, error) {
		m, ok := gen.Model(name)
		if !ok {
			return nil, fmt.Errorf("shadow model %q is not a configured model (providers.models)", name)
		}
		if IsAnthropic(m.APIFormat) {
			return nil, fmt.Errorf("shadow model %q has api_format anthropic; shadows go to OpenAI-compatible models only", name)
		}
		ref, ok := backends.Pick(m)
		if !ok {
			return nil, fmt.Errorf("shadow model %q has no backend_refs", name)
		}
		target, err := backends.Target(ref, m.APIFormat)
		if err != nil {
			return nil, fmt.Errorf("shadow model %q: %v", name, err)
		}
		cp := *c
		cp.Fields = maps.Clone(c.Fields)
		cp.Delete("stream")
		cp.Delete("stream_options")
		if err := cp.Set("model", name); err != nil {
			return nil, err
		}
		body, err := cp.Encode()
		if err != nil {
			return nil, err
		}
		h := UpstreamHeader(nil, ref, false, "")
		h.Set(HeaderRequestID, requestID+"-shadow")
		return &ShadowRequest{Model: m, URL: target, Header: h, Body: body}, nil
	}
}

// recordReplay hands the finished request to the recorder.
func (x *Exchange) recordReplay(endpoint string, status int, d time.Duration) {
	ri := x.Out.replay
	if ri == nil || x.plane.replays == nil || x.Out.Result == nil {
		return
	}
	x.Out.replay = nil // once
	ev := &ReplayEvent{RequestID: ri.requestID, Endpoint: endpoint, Start: x.start, Latency: d, Status: status, Stream: ri.stream,
		Result: x.Out.Result, Model: x.Out.Model, Usage: x.usage, Input: ri.input}
	if !x.first.IsZero() {
		ev.TTFT = x.first.Sub(x.start)
	}
	if c := x.Out.Chat; c != nil && ri.gen != nil && status < 400 && has(x.Out.Result.Plugins, replayconfig.TypeShadow) {
		ev.Shadow = x.shadowOf(c, ri.gen, ri.requestID)
	}
	x.plane.replays.Record(ev)
}
