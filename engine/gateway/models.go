package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/junction-router/junction/engine"
)

// modelEntry is one entry of GET /v1/models.
type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models answers GET /v1/models: MoM first (it is what most clients should
// ask for), then every configured model with its provider as owner. auto is an
// accepted alias of MoM but is not listed, so a model picker shows one routing
// entry. created is the process start: the configuration has no dates.
func (x *exchange) models() {
	if x.gen == nil {
		writeError(x.w, noGeneration())
		return
	}
	created := x.s.started.Unix()
	out := struct {
		Object string       `json:"object"`
		Data   []modelEntry `json:"data"`
	}{Object: "list", Data: []modelEntry{{ID: engine.ModelMoM, Object: "model", Created: created, OwnedBy: "junction"}}}
	for _, m := range x.gen.Document().Providers.Models {
		owner := "junction"
		if len(m.BackendRefs) > 0 && m.BackendRefs[0].Provider != "" {
			owner = m.BackendRefs[0].Provider
		}
		out.Data = append(out.Data, modelEntry{ID: m.Name, Object: "model", Created: created, OwnedBy: owner})
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeError(x.w, newError(http.StatusInternalServerError, typeServer, "could not encode the model list"))
		return
	}
	x.w.Header().Set("Content-Type", "application/json")
	x.w.WriteHeader(http.StatusOK)
	_, _ = x.w.Write(append(b, '\n'))
}

// responsesNotServed answers the Responses API routes honestly: they are part
// of the spec but not built yet, and a silent 404 would look like a typo.
func (x *exchange) responsesNotServed() {
	writeError(x.w, newError(http.StatusNotImplemented, typeNotImplemented,
		"the Responses API is not served yet; use /v1/chat/completions"))
}

func noGeneration() *apiError {
	return newError(http.StatusServiceUnavailable, typeServer, "no configuration is active yet")
}
