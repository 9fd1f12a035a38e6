package gateway

import (
	"github.com/junction-router/junction/internal/dataplane"
)

// models answers GET /v1/models with the shared model list: MoM first, then
// every configured model with its provider as owner; created is when this
// server started (the configuration has no dates).
func (x *exchange) models() {
	x.answer(dataplane.ModelList(x.gen, x.s.started, nil))
}

// noResponseStore answers the stored-response routes: nothing is stored.
func (x *exchange) noResponseStore() {
	x.answer(dataplane.ErrorAnswer(dataplane.NoResponseStore(), nil))
}
