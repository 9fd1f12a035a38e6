package mgmt

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/gorilla/mux"

	"github.com/junction-router/junction/internal/ingest"
	"github.com/junction-router/junction/internal/storage"
)

// Files: /api/v1/storage/files, in the shape of OpenAI's Files API. An
// upload is multipart form data (file, purpose) read part by part: the file
// streams into the store, which stops at the size limit and keeps nothing.

// FileObject is a stored file in OpenAI's shape.
type FileObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
}

// FileUpload documents the multipart upload's fields.
type FileUpload struct {
	// File is the file's bytes, with its filename.
	File string `json:"file"`
	// Purpose is one of assistants, batch, fine-tune, vision, user_data,
	// evals.
	Purpose string `json:"purpose"`
}

// uploadPurposes are the purposes an upload may have (OpenAI's set).
var uploadPurposes = []string{"assistants", "batch", "fine-tune", "vision", "user_data", "evals"}

// uploadSlack is what the multipart envelope (boundaries, part headers, the
// purpose field) may add to the file's own bytes.
const uploadSlack = 64 << 10

func fileObject(f storage.File) FileObject {
	return FileObject{ID: f.ID, Object: "file", Bytes: f.Bytes, CreatedAt: unix(f.CreatedAt), Filename: f.Filename, Purpose: f.Purpose, Status: "processed"}
}

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	f, err := s.receiveUpload(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, fileObject(f))
}

// receiveUpload reads the multipart body. The file part streams straight
// into the store when purpose came first (as OpenAI's Python client sends
// it); otherwise it is spooled to a temporary file, bounded by the same
// limit, until purpose is known.
func (s *Server) receiveUpload(w http.ResponseWriter, r *http.Request) (storage.File, error) {
	ctx := r.Context()
	limit := s.maxFileBytes()
	tooLarge := func() error {
		return newErr(http.StatusRequestEntityTooLarge, CodeFileTooLarge,
			"the file exceeds the upload limit of %d bytes (global.storage.max_file_bytes); nothing was kept", limit)
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit+uploadSlack)
	mr, err := r.MultipartReader()
	if err != nil {
		return storage.File{}, newErr(http.StatusBadRequest, CodeInvalidInput,
			"an upload is multipart/form-data with a file part and a purpose field (%v)", err)
	}
	var (
		purpose, filename string
		created           *storage.File
		spool             *os.File
	)
	defer func() {
		if spool != nil {
			spool.Close()
			os.Remove(spool.Name())
		}
	}()
	// fail undoes a file stored before a later part turned out wrong.
	fail := func(err error) (storage.File, error) {
		if created != nil {
			_ = s.store().DeleteFile(context.WithoutCancel(ctx), created.ID)
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || errors.Is(err, storage.ErrTooLarge) {
			return storage.File{}, tooLarge()
		}
		return storage.File{}, err
	}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(malformed(err))
		}
		switch p.FormName() {
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(p, 65))
			if err != nil {
				return fail(malformed(err))
			}
			if purpose != "" {
				return fail(newErr(http.StatusBadRequest, CodeInvalidInput, "purpose is given twice"))
			}
			purpose = strings.TrimSpace(string(b))
			if !slices.Contains(uploadPurposes, purpose) {
				return fail(newErr(http.StatusBadRequest, CodeInvalidInput, "purpose %q is not one of %s", truncate(purpose, 64), strings.Join(uploadPurposes, ", ")))
			}
		case "file":
			if created != nil || spool != nil {
				return fail(newErr(http.StatusBadRequest, CodeInvalidInput, "an upload carries one file part"))
			}
			filename, err = uploadName(p.FileName())
			if err != nil {
				return fail(err)
			}
			if purpose == "" {
				spool, err = os.CreateTemp("", "junction-upload-*")
				if err != nil {
					return fail(newErr(http.StatusInternalServerError, CodeInternal, "could not spool the upload: %v", err))
				}
				n, err := io.Copy(spool, io.LimitReader(p, limit+1))
				if err != nil {
					return fail(malformed(err))
				}
				if n > limit {
					return fail(tooLarge())
				}
				continue
			}
			f, err := s.storeUpload(ctx, filename, purpose, p, limit)
			if err != nil {
				return fail(err)
			}
			created = &f
		default:
			return fail(newErr(http.StatusBadRequest, CodeInvalidInput, "unknown form field %q: an upload takes file and purpose", truncate(p.FormName(), 64)))
		}
		p.Close()
	}
	if purpose == "" {
		return fail(newErr(http.StatusBadRequest, CodeInvalidInput, "purpose is required: one of %s", strings.Join(uploadPurposes, ", ")))
	}
	if created == nil && spool == nil {
		return fail(newErr(http.StatusBadRequest, CodeInvalidInput, "the upload has no file part (form field file, with a filename)"))
	}
	if created == nil {
		if _, err := spool.Seek(0, io.SeekStart); err != nil {
			return fail(err)
		}
		f, err := s.storeUpload(ctx, filename, purpose, spool, limit)
		if err != nil {
			return fail(err)
		}
		created = &f
	}
	return *created, nil
}

// storeUpload checks the file's type for its purpose and streams it into
// the store.
func (s *Server) storeUpload(ctx context.Context, filename, purpose string, body io.Reader, limit int64) (storage.File, error) {
	media, err := ingest.Accept(filename, purpose)
	if err != nil {
		return storage.File{}, newErr(http.StatusBadRequest, CodeUnsupportedFile, "%s: %v", truncate(filename, 128), err)
	}
	src := &sourceReader{r: body}
	f, err := s.store().CreateFile(ctx, storage.NewFile{Filename: filename, Purpose: purpose, MediaType: media}, src, limit)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, storage.ErrTooLarge):
		return f, err // the caller says the limit
	case src.err != nil:
		return f, malformed(src.err) // the upload broke off, not the store
	}
	return f, storageErr("file "+truncate(filename, 128), err)
}

// sourceReader remembers a read error of the request body, so that a body
// that broke off is told apart from a store that failed.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

func malformed(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return newErr(http.StatusBadRequest, CodeInvalidInput, "malformed multipart body: %v", err)
}

// uploadName checks the part's filename (already a base name).
func uploadName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "" || name == "." || name == "..":
		return "", newErr(http.StatusBadRequest, CodeInvalidInput, "the file part needs a filename (Content-Disposition: form-data; name=\"file\"; filename=\"...\")")
	case len(name) > 255:
		return "", newErr(http.StatusBadRequest, CodeInvalidInput, "the filename is longer than 255 bytes")
	case strings.IndexFunc(name, unicode.IsControl) >= 0 || strings.ContainsAny(name, `/\`):
		return "", newErr(http.StatusBadRequest, CodeInvalidInput, "the filename holds control characters or path separators")
	}
	return name, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	o, err := listOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	purpose := r.URL.Query().Get("purpose")
	if len(purpose) > 64 {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "purpose is at most 64 characters"))
		return
	}
	p, err := s.store().ListFiles(r.Context(), purpose, o)
	if err != nil {
		writeError(w, storageErr("files", err))
		return
	}
	writeJSON(w, http.StatusOK, listOf(p, fileObject, func(f FileObject) string { return f.ID }))
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	f, err := s.store().GetFile(r.Context(), id)
	if err != nil {
		writeError(w, storageErr("file "+id, err))
		return
	}
	writeJSON(w, http.StatusOK, fileObject(f))
}

// fileContent streams a file's bytes with its media type and length.
func (s *Server) fileContent(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	rc, f, err := s.store().OpenFile(r.Context(), id)
	if err != nil {
		writeError(w, storageErr("file "+id, err))
		return
	}
	defer rc.Close()
	ct := f.MediaType
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.FormatInt(f.Bytes, 10))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Filename}))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, rc); err != nil {
		s.log.Debug("file download ended early", "file", id, "error", err)
	}
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := mux.Vars(r)["id"]
	if _, err := s.store().GetFile(ctx, id); err != nil {
		writeError(w, storageErr("file "+id, err))
		return
	}
	stores, err := s.storesWithFile(ctx, id)
	if err != nil {
		writeError(w, storageErr("the vector stores of file "+id, err))
		return
	}
	if err := s.store().DeleteFile(ctx, id); err != nil {
		writeError(w, storageErr("file "+id, err))
		return
	}
	for _, vs := range stores {
		s.invalidate(vs)
	}
	writeJSON(w, http.StatusOK, Deleted{ID: id, Object: "file", Deleted: true})
}

// storesWithFile lists the vector stores a file is attached to.
func (s *Server) storesWithFile(ctx context.Context, fileID string) ([]string, error) {
	var out []string
	err := s.eachVectorStore(ctx, func(v storage.VectorStore) error {
		_, err := s.store().GetVectorStoreFile(ctx, v.ID, fileID)
		switch {
		case err == nil:
			out = append(out, v.ID)
		case !errors.Is(err, storage.ErrNotFound):
			return err
		}
		return nil
	})
	return out, err
}

// eachVectorStore calls fn with every vector store, oldest first.
func (s *Server) eachVectorStore(ctx context.Context, fn func(storage.VectorStore) error) error {
	o := storage.ListOptions{Limit: 100, Order: "asc"}
	for {
		p, err := s.store().ListVectorStores(ctx, o)
		if err != nil {
			return err
		}
		for _, v := range p.Data {
			if err := fn(v); err != nil {
				return err
			}
		}
		if !p.HasMore || len(p.Data) == 0 {
			return nil
		}
		o.After = p.Data[len(p.Data)-1].ID
	}
}
