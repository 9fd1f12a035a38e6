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

// model answers GET /v1/models/{id}: the list's entry for id, or 404.
func (x *exchange) model(id string) {
	x.answer(dataplane.Model(x.gen, id, x.s.started, nil))
}

// storedResponse answers GET and DELETE /v1/responses/{id} and GET
// /v1/responses/{id}/input_items from the response store.
func (x *exchange) storedResponse() {
	id, sub := dataplane.StoredResponsePath(x.r.URL.Path)
	x.answer(x.s.plane.StoredResponse(x.r.Context(), x.r.Method, id, sub, x.r.URL.Query(), nil))
}
