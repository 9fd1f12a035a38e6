package mgmt

import (
	"net/http"
	"time"

	"github.com/junction-router/junction/recipes"
)

// InterimOptions configure the stand-in that answers on the management
// address before the management API itself can listen.
type InterimOptions struct {
	// Document is the configuration serve starts with: its
	// management_api.auth decides which tokens /ready and /startup-status
	// need, exactly as the management API will.
	Document *recipes.Document
	// Status is the current start-up status (phase, pending models,
	// deployments); the stand-in answers it with 503.
	Status  func() StartupStatus
	Version string
	// Message is the 503 SERVICE_UNAVAILABLE answer to every other route.
	Message string
}

// InterimHandler answers GET /health (200, public), GET /ready and GET
// /startup-status (503 with Status, permission ready.read) and 503
// SERVICE_UNAVAILABLE to everything else, with the same bearer
// authentication, error bodies and WWW-Authenticate challenge as the
// management API. Serve runs it while it waits for model deployments before
// its configuration compiles (the management API needs a compiled
// configuration). It fails when a token source of the document cannot be
// read, as the management API would.
func InterimHandler(o InterimOptions) (http.Handler, error) {
	auth, err := newAuthenticator(o.Document)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	// guard checks the caller's token like Server.wrap does; false when it
	// has answered.
	guard := func(w http.ResponseWriter, r *http.Request, perm, path string) bool {
		p := auth.authenticate(r)
		if p == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="junction-management"`)
			writeError(w, newErr(http.StatusUnauthorized, CodeUnauthorized, "this route needs Authorization: Bearer <token> (permission %s)", perm))
			return false
		}
		if !p.Has(perm) {
			e := newErr(http.StatusForbidden, CodeForbidden, "principal %q lacks permission %s for %s %s", p.Name, perm, r.Method, path)
			e.body.Error.Required = perm
			writeError(w, e)
			return false
		}
		return true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, HealthResponse{Status: "healthy", Version: o.Version, Uptime: int64(time.Since(started).Seconds()), Models: map[string]string{}, Cache: HealthCache{Status: "disabled"}, Endpoints: map[string]string{}})
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, r *http.Request) {
		if guard(w, r, PermReadyRead, "/ready") {
			writeJSON(w, http.StatusServiceUnavailable, o.Status().ReadyStatus)
		}
	})
	mux.HandleFunc("GET /startup-status", func(w http.ResponseWriter, r *http.Request) {
		if guard(w, r, PermReadyRead, "/startup-status") {
			writeJSON(w, http.StatusServiceUnavailable, o.Status())
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, newErr(http.StatusServiceUnavailable, CodeServiceUnavailable, "%s", o.Message))
	})
	return mux, nil
}
