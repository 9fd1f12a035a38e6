package dataplane

import (
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/engine/signal"
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
}

type replayInput struct {
	input     signal.Input
	requestID string
	stream    bool
}

// replayed reports whether refs run router_replay.
func replayed(refs []recipes.PluginRef) bool {
	for _, r := range refs {
		if r.Type == replayconfig.TypeReplay {
			return true
		}
	}
	return false
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
	x.plane.replays.Record(ev)
}
