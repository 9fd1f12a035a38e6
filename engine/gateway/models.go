package gateway

import (
	"github.com/junction-router/junction/engine/dataplane"
)

// models answers GET /v1/models with the shared model list: MoM first, then
// every configured model with its provider as owner; created is when this
// server started (the configuration has no dates).
func (x *exchange) models() {
	x.answer(dataplane.ModelList(x.gen, x.s.started, nil))
}

// responsesNotServed answers the Responses API routes honestly: they are part
// of the spec but not built yet, and a silent 404 would look like a typo.
func (x *exchange) responsesNotServed() {
	x.answer(dataplane.ErrorAnswer(dataplane.ResponsesNotServed(), nil))
}
