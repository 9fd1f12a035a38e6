package dataplane

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Error types of the bodies Junction writes itself. invalid_request_error and
// server_error are OpenAI's; the others name Junction's own conditions so that
// a client can tell a router problem from a model's.
const (
	TypeInvalidRequest    = "invalid_request_error"
	TypeAuthentication    = "authentication_error"
	TypeSecurityViolation = "security_violation"
	TypeUpstream          = "upstream_error"
	TypeUpstreamTimeout   = "upstream_timeout"
	TypeNotImplemented    = "not_implemented"
	TypePlugin            = "plugin_error"
	TypePluginResponse    = "plugin_response"
	TypeServer            = "server_error"
)

// Error is an OpenAI-style error body, {"error":{message,type,param,code}}.
// Param and Code encode as null when unset, as OpenAI writes them; Details is
// the earlier-revision security block detail and appears only on a block.
type Error struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// Details is *ErrorDetails (a security block) or *RateLimitDetails.
	Details any `json:"details,omitempty"`
	// Status is the HTTP status the error is answered with.
	Status int `json:"-"`
}

// ErrorDetails is the earlier-revision security block detail.
type ErrorDetails struct {
	EntitiesFound []string `json:"entities_found"`
	ActionTaken   string   `json:"action_taken"`
}

func (e *Error) Error() string { return e.Message }

// NewError returns an error body answered with status.
func NewError(status int, typ, msg string) *Error {
	return &Error{Status: status, Type: typ, Message: msg}
}

// WithParam names the offending request field; an empty p leaves it null.
func (e *Error) WithParam(p string) *Error {
	if p != "" {
		e.Param = &p
	}
	return e
}

// WithCode sets the machine-readable code.
func (e *Error) WithCode(c string) *Error {
	e.Code = &c
	return e
}

// fallbackErrorBody is written if an error cannot be encoded, which cannot
// happen with these field types; the body stays valid regardless.
const fallbackErrorBody = `{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`

// Body encodes e as the response body, with the trailing newline the
// gateway has always written.
func (e *Error) Body() []byte { return append(e.JSON(), '\n') }

// JSON encodes e as the envelope alone, without a trailing newline: what a
// data: event carries when a stream breaks off after its status line.
func (e *Error) JSON() []byte {
	b, err := json.Marshal(struct {
		Error *Error `json:"error"`
	}{e})
	if err != nil {
		b = []byte(fallbackErrorBody)
	}
	return b
}

// Answer is a complete response given without calling a backend: an error,
// a security block, a plugin's immediate answer, the model list. A front end
// writes Header, then Status, then Body, and nothing else: the gateway to its
// client, ext_proc as an ImmediateResponse.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// ErrorAnswer is e as an answer: Content-Type application/json plus the
// headers in h (routing headers, x-request-id), which may be nil.
func ErrorAnswer(e *Error, h http.Header) *Answer {
	if h == nil {
		h = make(http.Header, 2)
	}
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	return &Answer{Status: e.Status, Header: h, Body: e.Body()}
}

// Errors a front end answers before the request phase runs.

// TooLarge is the 413 for a body over limit bytes.
func TooLarge(limit int64) *Error {
	return NewError(http.StatusRequestEntityTooLarge, TypeInvalidRequest,
		fmt.Sprintf("the request body exceeds this listener's limit of %d bytes", limit)).WithCode("request_too_large")
}

// NotFound is the 404 for a path no route serves.
func NotFound(method, path string) *Error {
	return NewError(http.StatusNotFound, TypeInvalidRequest, "no route for "+method+" "+path+" on this listener").WithCode("not_found")
}

// MethodNotAllowed is the 405 for a method the path does not take; allow
// lists the ones it does (the Allow header's value).
func MethodNotAllowed(method, path, allow string) *Error {
	return NewError(http.StatusMethodNotAllowed, TypeInvalidRequest, method+" is not allowed on "+path+"; use "+allow).WithCode("method_not_allowed")
}

// NoGeneration is the 503 while no configuration is active.
func NoGeneration() *Error {
	return NewError(http.StatusServiceUnavailable, TypeServer, "no configuration is active yet")
}

// ResponsesNotServed answers POST /v1/responses on a front end that does not
// translate the Responses API (ext_proc): a silent 404 would look like a typo.
func ResponsesNotServed() *Error {
	return NewError(http.StatusNotImplemented, TypeNotImplemented,
		"the Responses API is served by the standalone gateway, not behind Envoy; use /v1/chat/completions")
}

// NoResponseStore answers the stored-response routes (GET and DELETE
// /v1/responses/{id}, …/input_items) when the response store is off: a 404
// (what OpenAI answers for a response it does not have; its SDKs do not
// retry it, where they retry a 501) whose code and message say why.
func NoResponseStore() *Error {
	return NewError(http.StatusNotFound, TypeInvalidRequest,
		"responses are not stored here: the response store is off (turn it on with global.services.response_api: {enabled: true, store: memory}), so they cannot be retrieved or deleted; keep the answer when it arrives").
		WithCode("response_store_disabled")
}

// BadBody is the 400 for a body that could not be read.
func BadBody() *Error {
	return NewError(http.StatusBadRequest, TypeInvalidRequest, "could not read the request body")
}

func serializationError(err error) *Error {
	return NewError(http.StatusInternalServerError, TypeServer, "could not encode the rewritten request: "+err.Error())
}
