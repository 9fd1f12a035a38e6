package gateway

import (
	"net/http"

	"github.com/junction-router/junction/internal/dataplane"
)

// writeError writes e (the one OpenAI error envelope, dataplane.Error) as the
// response. Callers set routing headers first.
func writeError(w http.ResponseWriter, e *dataplane.Error) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.Body())
}
