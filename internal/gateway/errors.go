package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Error types of the bodies the gateway writes itself. invalid_request_error and
// server_error are OpenAI's; the others name Junction's own conditions so that
// a client can tell a gateway problem from a model's.
const (
	typeInvalidRequest  = "invalid_request_error"
	typeAuthentication  = "authentication_error"
	typeUpstream        = "upstream_error"
	typeUpstreamTimeout = "upstream_timeout"
	typeServer          = "server_error"
)

// apiError is an OpenAI-style error body: {"error":{message,type,param,code}}.
// Param and Code are null when unset, as OpenAI writes them.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	status  int
}

func (e *apiError) Error() string { return e.Message }

func ptr(s string) *string { return &s }

func newError(status int, typ, msg string) *apiError {
	return &apiError{status: status, Type: typ, Message: msg}
}

func (e *apiError) withParam(p string) *apiError {
	if p != "" {
		e.Param = ptr(p)
	}
	return e
}

func (e *apiError) withCode(c string) *apiError {
	e.Code = ptr(c)
	return e
}

// writeError writes e as the response. Callers set routing headers first.
func writeError(w http.ResponseWriter, e *apiError) {
	b, err := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	if err != nil {
		// Cannot happen with these field types; keep a valid body regardless.
		b = []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	w.WriteHeader(e.status)
	_, _ = w.Write(append(b, '\n'))
}

// errorAs unwraps err to an *apiError when it is one.
func errorAs(err error) (*apiError, bool) {
	var e *apiError
	ok := errors.As(err, &e)
	return e, ok
}

func notFound(r *http.Request) *apiError {
	return newError(http.StatusNotFound, typeInvalidRequest, "no route for "+r.Method+" "+r.URL.Path+" on this listener").withCode("not_found")
}

func methodNotAllowed(r *http.Request, allow string) *apiError {
	return newError(http.StatusMethodNotAllowed, typeInvalidRequest, r.Method+" is not allowed on "+r.URL.Path+"; use "+allow).withCode("method_not_allowed")
}
