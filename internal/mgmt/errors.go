package mgmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/junction-router/junction/recipes"
)

// Error codes of the management API. The classification utilities' codes
// (INVALID_INPUT … NOT_IMPLEMENTED) are the ones document 001 lists; the rest
// are ours where the spec says "not shown".
const (
	CodeInvalidInput        = "INVALID_INPUT"
	CodeTextTooLong         = "TEXT_TOO_LONG"
	CodeModelNotLoaded      = "MODEL_NOT_LOADED"
	CodeClassificationError = "CLASSIFICATION_ERROR"
	// The batch endpoint's codes for an unavailable classifier (503) and a
	// failed classification (500), as document 001 names them.
	CodeUnifiedClassifierUnavailable = "UNIFIED_CLASSIFIER_UNAVAILABLE"
	CodeUnifiedClassificationError   = "UNIFIED_CLASSIFICATION_ERROR"
	CodeTimeout                      = "TIMEOUT_ERROR"
	CodeNotImplemented               = "NOT_IMPLEMENTED"
	CodeUnauthorized                 = "UNAUTHORIZED"
	CodeForbidden                    = "FORBIDDEN"
	CodeNotFound                     = "NOT_FOUND"
	CodeMethodNotAllowed             = "METHOD_NOT_ALLOWED"
	CodePreconditionRequired         = "PRECONDITION_REQUIRED"
	CodePreconditionFailed           = "PRECONDITION_FAILED"
	CodeRestartRequired              = "RESTART_REQUIRED"
	CodeInvalidConfig                = "INVALID_CONFIG"
	CodeActivationFailed             = "ACTIVATION_FAILED"
	CodeRecipeInUse                  = "RECIPE_IN_USE"
	CodeUnknownRecipe                = "UNKNOWN_RECIPE"
	CodeUnknownBinding               = "UNKNOWN_BINDING"
	CodeUnsupportedTask              = "UNSUPPORTED_TASK"
	CodeServiceUnavailable           = "SERVICE_UNAVAILABLE"
	CodeNotReady                     = "NOT_READY"
	CodeInternal                     = "INTERNAL"
)

// ErrorBody is every error answer: error{code, message, timestamp} as the
// classification utilities define it, plus the details a caller needs to act
// (the current ETag, the activation reasons, the input limit).
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
	// Status is "activation_failed" on a mutation whose activation failed.
	Status string `json:"status,omitempty"`
}

// ErrorDetail is the error object.
type ErrorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Timestamp string `json:"timestamp"`
	// CurrentETag is the document's ETag on 412 and 428 answers.
	CurrentETag string `json:"current_etag,omitempty"`
	// Reasons explain a rejected configuration (stage, code, path, message).
	Reasons []Reason `json:"reasons,omitempty"`
	// Limit is the input budget that was exceeded.
	Limit *InputLimit `json:"limit,omitempty"`
	// Required is the permission a 403 lacked.
	Required string `json:"required_permission,omitempty"`
	// Details say which rate limit refused a 429 and when to retry.
	Details *RateLimitDetails `json:"details,omitempty"`
}

// InputLimit says which budget an input exceeded.
type InputLimit struct {
	InputMaxTokens int `json:"input_max_tokens,omitempty"`
	InputTokens    int `json:"input_tokens,omitempty"`
	MaxBatchSize   int `json:"max_batch_size,omitempty"`
	BatchSize      int `json:"batch_size,omitempty"`
}

// Reason is one activation rejection reason.
type Reason struct {
	Stage   string `json:"stage"`
	Code    string `json:"code"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// apiError is an error that knows its HTTP answer.
type apiError struct {
	status int
	body   ErrorBody
}

func (e *apiError) Error() string { return e.body.Error.Message }

func newErr(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, body: ErrorBody{Error: ErrorDetail{
		Code: code, Message: fmt.Sprintf(format, args...), Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}}}
}

func (e *apiError) withReasons(rs []Reason) *apiError { e.body.Error.Reasons = rs; return e }

// reasonsOf turns a document error into activation reasons.
func reasonsOf(stage string, err error) []Reason {
	if ve, ok := recipes.AsValidationError(err); ok {
		out := make([]Reason, 0, len(ve.Problems))
		for _, p := range ve.Problems {
			st := p.Stage()
			if stage != "parse" && stage != "validate" {
				st = stage
			}
			out = append(out, Reason{Stage: st, Code: p.Code, Path: p.Path, Message: p.Message})
		}
		return out
	}
	return []Reason{{Stage: stage, Code: stage + "_failed", Message: err.Error()}}
}

// writeJSON encodes v without HTML escaping: answers are read by programs,
// and documents should come back as they were written ("<redacted>", "a&b").
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		_ = enc.Encode(newErr(status, CodeInternal, "could not encode the answer: %v", err).body)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = newErr(http.StatusInternalServerError, CodeInternal, "%v", err)
	}
	writeJSON(w, ae.status, ae.body)
}

// maxBodyBytes bounds a management request body: a configuration document
// (recipes.MaxDocumentBytes) plus room for an envelope.
const maxBodyBytes = recipes.MaxDocumentBytes + 64<<10

func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "could not read the request body: %v", err)
	}
	if len(b) > maxBodyBytes {
		return nil, newErr(http.StatusRequestEntityTooLarge, CodeInvalidInput, "the request body exceeds %d bytes", maxBodyBytes)
	}
	return b, nil
}

// decodeJSON reads a JSON body into v, refusing unknown fields so that a typo
// is an error rather than an ignored option.
func decodeJSON(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return newErr(http.StatusBadRequest, CodeInvalidInput, "the request needs a JSON body")
	}
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return newErr(http.StatusBadRequest, CodeInvalidInput, "malformed JSON body: %v", err)
	}
	return nil
}
