package mgmt

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/retrieval"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/recipes"
)

// The stored-data routes (/api/v1/storage/*: files, vector stores and their
// files, knowledge bases, memories) share what is here: their options, the
// guard that answers 503 while storage is not configured, list paging and
// the mapping of storage errors to answers.

// StorageOptions connect the stored-data routes to the store. A nil
// Options.Storage (or a nil Store) keeps every such route answering 503: the
// service is not configured.
type StorageOptions struct {
	// Store keeps files, vector stores and memories (required).
	Store storage.Store
	// Ingest chunks and embeds attached files in the background; nil
	// refuses attaching files (503).
	Ingest interface{ Submit(storeID, fileID string) }
	// Library searches stores and names the embedding model new vector
	// stores are built with; *retrieval.Library is one. Nil refuses
	// creating and searching vector stores (503).
	Library StorageLibrary
	// MaxFileBytes bounds one upload when the active configuration's
	// global.storage.max_file_bytes is unset (0: recipes.DefaultMaxFileBytes).
	MaxFileBytes int64
}

// StorageLibrary is what the stored-data routes use of retrieval:
// *retrieval.Library implements it.
type StorageLibrary interface {
	Search(ctx context.Context, q retrieval.Query) (retrieval.Result, error)
	// Invalidate drops cached results of a store after it changed.
	Invalidate(storeID string)
	// Model is the embedding model of stored data.
	Model() embedding.Model
}

// Error codes of the stored-data routes.
const (
	CodeConflict          = "CONFLICT"
	CodeFileTooLarge      = "FILE_TOO_LARGE"
	CodeUnsupportedFile   = "UNSUPPORTED_FILE"
	CodeActivationPending = "CONFIG_ACTIVATION_PENDING"
	CodeModelMismatch     = "EMBEDDING_MODEL_MISMATCH"
)

// storageRoute answers 503 unless storage is configured, then runs h.
func (s *Server) storageRoute(what string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Storage == nil || s.opts.Storage.Store == nil {
			writeError(w, newErr(http.StatusServiceUnavailable, CodeServiceUnavailable,
				"the %s is unavailable: storage is not configured (junction serve opens it in its data directory, global.storage.dir or --data-dir)", what))
			return
		}
		h(w, r)
	}
}

func (s *Server) store() storage.Store { return s.opts.Storage.Store }

// invalidate tells retrieval that a store changed.
func (s *Server) invalidate(storeID string) {
	if lib := s.opts.Storage.Library; lib != nil {
		lib.Invalidate(storeID)
	}
}

// ListPage is OpenAI's list shape: object "list", data, first_id, last_id,
// has_more.
type ListPage[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	FirstID string `json:"first_id"`
	LastID  string `json:"last_id"`
	HasMore bool   `json:"has_more"`
}

func listOf[T, U any](p storage.Page[T], conv func(T) U, id func(U) string) ListPage[U] {
	out := ListPage[U]{Object: "list", Data: make([]U, 0, len(p.Data)), HasMore: p.HasMore}
	for _, v := range p.Data {
		out.Data = append(out.Data, conv(v))
	}
	if n := len(out.Data); n > 0 {
		out.FirstID, out.LastID = id(out.Data[0]), id(out.Data[n-1])
	}
	return out
}

// listQuery lists the paging parameters every stored-data list takes.
var listQuery = []string{"after", "before", "limit", "order"}

// listOptions reads limit (1–100, default 20), order (asc, desc) and the
// after/before cursors.
func listOptions(r *http.Request) (storage.ListOptions, error) {
	q := r.URL.Query()
	o := storage.ListOptions{Order: q.Get("order"), After: q.Get("after"), Before: q.Get("before")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return o, newErr(http.StatusBadRequest, CodeInvalidInput, "limit must be an integer from 1 to 100 (got %q)", v)
		}
		o.Limit = n
	}
	switch o.Order {
	case "", "asc", "desc":
	default:
		return o, newErr(http.StatusBadRequest, CodeInvalidInput, "order must be asc or desc (got %q)", o.Order)
	}
	for _, c := range []string{o.After, o.Before} {
		if len(c) > 128 {
			return o, newErr(http.StatusBadRequest, CodeInvalidInput, "after and before are object ids (at most 128 characters)")
		}
	}
	return o, nil
}

// storageErr maps a storage error to its answer; what names the object
// asked for ("file file-abc", "vector store vs_1").
func storageErr(what string, err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return newErr(http.StatusNotFound, CodeNotFound, "no %s: %v", what, err)
	case errors.Is(err, storage.ErrConflict):
		return newErr(http.StatusConflict, CodeConflict, "%s: %v", what, err)
	case errors.Is(err, storage.ErrTooLarge), errors.As(err, &mbe):
		return newErr(http.StatusRequestEntityTooLarge, CodeFileTooLarge, "%s is too large: %v", what, err)
	case errors.Is(err, storage.ErrInvalid):
		return newErr(http.StatusBadRequest, CodeInvalidInput, "%s: %v", what, err)
	case errors.Is(err, retrieval.ErrModelMismatch), errors.Is(err, storage.ErrDimension):
		return newErr(http.StatusConflict, CodeModelMismatch, "%s: %v", what, err)
	case errors.Is(err, context.DeadlineExceeded):
		return newErr(http.StatusRequestTimeout, CodeTimeout, "%s: %v", what, err)
	}
	return newErr(http.StatusInternalServerError, CodeInternal, "%s: %v", what, err)
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// maxFileBytes is the upload limit: the active configuration's
// global.storage.max_file_bytes, else the option, else the default.
func (s *Server) maxFileBytes() int64 {
	if st := s.cfg.Runtime().Current().Document().Global.Storage; st != nil && st.MaxFileBytes > 0 {
		return st.MaxFileBytes
	}
	if n := s.opts.Storage.MaxFileBytes; n > 0 {
		return n
	}
	return recipes.DefaultMaxFileBytes
}

// Deleted answers a delete, in OpenAI's shape.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}
