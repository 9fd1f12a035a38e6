// Package recorder is a stand-in plugin module for the front ends' tests: a
// module type "recorder" with a response phase that records every answer it
// is given (as a response cache would see it) and changes nothing.
package recorder

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/plugin"
)

// Type is the plugin type the recorder answers to.
const Type = "recorder"

// Recorder implements plugin.Modules for the one type "recorder". Use it with
// plugin.New.
type Recorder struct {
	mu      sync.Mutex
	answers []string
}

// Has reports whether typ is the recorder's type.
func (r *Recorder) Has(typ string) bool { return typ == Type }

// HasResponse reports whether typ has a response phase (the recorder's has).
func (r *Recorder) HasResponse(typ string) bool { return typ == Type }

// Validate accepts any configuration.
func (r *Recorder) Validate(string, json.RawMessage) error { return nil }

// Call records the answer of a response-phase call and returns no mutations.
func (r *Recorder) Call(_ context.Context, _ string, _ json.RawMessage, req *abi.Request) (plugin.ModuleResult, error) {
	if req.Phase == abi.PhaseResponse {
		r.mu.Lock()
		r.answers = append(r.answers, string(req.ResponseBody))
		r.mu.Unlock()
	}
	return plugin.ModuleResult{}, nil
}

// Answers returns the answers recorded so far, in order.
func (r *Recorder) Answers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.answers...)
}
