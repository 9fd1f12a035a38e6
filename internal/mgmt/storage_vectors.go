package mgmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/junction-router/junction/internal/ingest"
	"github.com/junction-router/junction/internal/retrieval"
	"github.com/junction-router/junction/internal/storage"
)

// Vector stores and their files: /api/v1/storage/vector-stores, in the
// shapes of OpenAI's vector stores API. Attaching a file answers at once
// with status in_progress; the ingestion pipeline chunks and embeds it in
// the background. Every change of a store invalidates retrieval's cache of
// it.

// VectorStoreObject is a vector store in OpenAI's shape, plus the embedding
// model and dimension every chunk and query of it uses.
type VectorStoreObject struct {
	ID           string            `json:"id"`
	Object       string            `json:"object"`
	CreatedAt    int64             `json:"created_at"`
	Name         string            `json:"name"`
	UsageBytes   int64             `json:"usage_bytes"`
	FileCounts   FileCountsObject  `json:"file_counts"`
	Status       string            `json:"status"`
	ExpiresAfter any               `json:"expires_after"`
	ExpiresAt    *int64            `json:"expires_at"`
	LastActiveAt int64             `json:"last_active_at"`
	Metadata     map[string]string `json:"metadata"`
	// EmbeddingModel and Dimensions are Junction's: the model the store's
	// chunks are embedded with.
	EmbeddingModel string `json:"embedding_model"`
	Dimensions     int    `json:"dimensions"`
}

// FileCountsObject counts a store's files by status.
type FileCountsObject struct {
	InProgress int `json:"in_progress"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
	Cancelled  int `json:"cancelled"`
	Total      int `json:"total"`
}

// ChunkingStrategy is how a file is cut into chunks: {type: auto} or
// {type: static, static: {max_chunk_size_tokens, chunk_overlap_tokens}}.
type ChunkingStrategy struct {
	Type   string          `json:"type" oas:"required,enum=auto|static"`
	Static *StaticChunking `json:"static,omitempty" oas:"when=type:static"`
}

// StaticChunking sizes chunks in tokens.
type StaticChunking struct {
	MaxChunkSizeTokens int `json:"max_chunk_size_tokens" oas:"required,min=100,max=4096"`
	ChunkOverlapTokens int `json:"chunk_overlap_tokens" oas:"min=0,max=2048"`
}

// VectorStoreCreateRequest creates a vector store.
type VectorStoreCreateRequest struct {
	// Name is required and unique among vector stores.
	Name string `json:"name" oas:"required,minLength=1,maxLength=256"`
	// Metadata: at most 16 keys of 64 characters, values of 512.
	Metadata map[string]string `json:"metadata,omitempty" oas:"maxProperties=16"`
	// FileIDs are attached (and ingested) at once.
	FileIDs          []string          `json:"file_ids,omitempty" oas:"maxItems=500,uniqueItems"`
	ChunkingStrategy *ChunkingStrategy `json:"chunking_strategy,omitempty"`
}

// VectorStoreUpdateRequest renames a store or replaces its metadata.
type VectorStoreUpdateRequest struct {
	Name     *string           `json:"name,omitempty" oas:"minLength=1,maxLength=256"`
	Metadata map[string]string `json:"metadata,omitempty" oas:"maxProperties=16"`
}

// VectorStoreSearchRequest searches one vector store.
type VectorStoreSearchRequest struct {
	// Query is a string or an array of strings (searched joined).
	Query any `json:"query" oas:"query,required"`
	// MaxNumResults is 1–50 (default 10).
	MaxNumResults *int `json:"max_num_results,omitempty" oas:"min=1,max=50"`
	// Filters is an attribute filter: {type: eq|ne|gt|gte|lt|lte|in|nin,
	// key, value} or {type: and|or, filters: [...]}.
	Filters        any             `json:"filters,omitempty" oas:"filter"`
	RankingOptions *RankingOptions `json:"ranking_options,omitempty"`
	// RewriteQuery true is refused: queries are embedded as given.
	RewriteQuery bool `json:"rewrite_query,omitempty" oas:"false"`
}

// RankingOptions tune a search: score_threshold (0–1) drops weaker hits.
type RankingOptions struct {
	Ranker         string   `json:"ranker,omitempty" oas:"enum=auto|none|default-2024-11-15"`
	ScoreThreshold *float64 `json:"score_threshold,omitempty" oas:"min=0,max=1"`
}

// SearchResultsPage answers a search.
type SearchResultsPage struct {
	Object      string         `json:"object"`
	SearchQuery []string       `json:"search_query"`
	Data        []SearchResult `json:"data"`
	HasMore     bool           `json:"has_more"`
	NextPage    *string        `json:"next_page"`
}

// SearchResult is one matching chunk.
type SearchResult struct {
	FileID     string          `json:"file_id"`
	Filename   string          `json:"filename"`
	Score      float64         `json:"score"`
	Attributes map[string]any  `json:"attributes"`
	Content    []SearchContent `json:"content"`
}

// SearchContent is a chunk's text.
type SearchContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// VectorStoreFileRequest attaches a file to a store.
type VectorStoreFileRequest struct {
	FileID string `json:"file_id" oas:"required,minLength=1"`
	// Attributes: at most 16 keys of 64 characters; string (≤512), number
	// or boolean values. Search filters match them.
	Attributes       map[string]any    `json:"attributes,omitempty" oas:"maxProperties=16"`
	ChunkingStrategy *ChunkingStrategy `json:"chunking_strategy,omitempty"`
}

// VectorStoreFileObject is a file of a store in OpenAI's shape.
type VectorStoreFileObject struct {
	ID               string           `json:"id"`
	Object           string           `json:"object"`
	UsageBytes       int64            `json:"usage_bytes"`
	CreatedAt        int64            `json:"created_at"`
	VectorStoreID    string           `json:"vector_store_id"`
	Status           string           `json:"status"`
	LastError        *FileError       `json:"last_error"`
	ChunkingStrategy ChunkingStrategy `json:"chunking_strategy"`
	Attributes       map[string]any   `json:"attributes"`
}

// FileError is why a file failed.
type FileError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// maxFileIDs bounds file_ids of a create (OpenAI's limit).
const maxFileIDs = 500

func vectorStoreObject(v storage.VectorStore) VectorStoreObject {
	fc := v.FileCounts
	status := "completed"
	if fc.InProgress > 0 {
		status = "in_progress"
	}
	md := v.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return VectorStoreObject{ID: v.ID, Object: "vector_store", CreatedAt: unix(v.CreatedAt), Name: v.Name, UsageBytes: v.UsageBytes,
		FileCounts: FileCountsObject{InProgress: fc.InProgress, Completed: fc.Completed, Failed: fc.Failed, Cancelled: fc.Cancelled, Total: fc.Total},
		Status:     status, LastActiveAt: unix(v.LastActiveAt), Metadata: md, EmbeddingModel: v.EmbeddingModel, Dimensions: v.Dimensions}
}

func vectorStoreFileObject(f storage.VectorStoreFile) VectorStoreFileObject {
	out := VectorStoreFileObject{ID: f.FileID, Object: "vector_store.file", UsageBytes: f.UsageBytes, CreatedAt: unix(f.CreatedAt),
		VectorStoreID: f.VectorStoreID, Status: f.Status, Attributes: f.Attributes,
		ChunkingStrategy: ChunkingStrategy{Type: "static", Static: &StaticChunking{MaxChunkSizeTokens: f.Chunking.MaxTokens, ChunkOverlapTokens: f.Chunking.OverlapTokens}}}
	if out.Attributes == nil {
		out.Attributes = map[string]any{}
	}
	if f.Status == storage.StatusFailed {
		out.LastError = &FileError{Code: f.LastErrorCode, Message: f.LastErrorMessage}
	}
	return out
}

// checkMetadata bounds metadata as OpenAI does.
func checkMetadata(md map[string]string) error {
	if len(md) > 16 {
		return newErr(http.StatusBadRequest, CodeInvalidInput, "metadata has %d keys; at most 16", len(md))
	}
	for k, v := range md {
		if k == "" || len(k) > 64 {
			return newErr(http.StatusBadRequest, CodeInvalidInput, "metadata keys are 1 to 64 characters (got %q)", truncate(k, 80))
		}
		if len(v) > 512 {
			return newErr(http.StatusBadRequest, CodeInvalidInput, "metadata value of %q is longer than 512 characters", k)
		}
	}
	return nil
}

// checkAttributes bounds file attributes: 16 keys, string (≤512), number or
// boolean values.
func checkAttributes(attrs map[string]any) error {
	if len(attrs) > 16 {
		return newErr(http.StatusBadRequest, CodeInvalidInput, "attributes has %d keys; at most 16", len(attrs))
	}
	for k, v := range attrs {
		if k == "" || len(k) > 64 {
			return newErr(http.StatusBadRequest, CodeInvalidInput, "attribute keys are 1 to 64 characters (got %q)", truncate(k, 80))
		}
		switch x := v.(type) {
		case string:
			if len(x) > 512 {
				return newErr(http.StatusBadRequest, CodeInvalidInput, "attribute %q is longer than 512 characters", k)
			}
		case float64, bool:
		default:
			return newErr(http.StatusBadRequest, CodeInvalidInput, "attribute %q must be a string, a number or a boolean", k)
		}
	}
	return nil
}

// chunking reads a chunking strategy; nil or auto is ingestion's default
// (800 tokens with 400 of overlap).
func chunking(c *ChunkingStrategy) (storage.Chunking, error) {
	auto := ingest.WithDefaults(storage.Chunking{})
	if c == nil {
		return auto, nil
	}
	switch c.Type {
	case "auto":
		if c.Static != nil {
			return auto, newErr(http.StatusBadRequest, CodeInvalidInput, "chunking_strategy: static settings need type static")
		}
		return auto, nil
	case "static":
		st := c.Static
		if st == nil {
			return auto, newErr(http.StatusBadRequest, CodeInvalidInput, "chunking_strategy: type static needs static{max_chunk_size_tokens, chunk_overlap_tokens}")
		}
		ch := storage.Chunking{MaxTokens: st.MaxChunkSizeTokens, OverlapTokens: st.ChunkOverlapTokens}
		if st.MaxChunkSizeTokens == 0 {
			return auto, newErr(http.StatusBadRequest, CodeInvalidInput, "chunking_strategy.static.max_chunk_size_tokens is required")
		}
		if err := ingest.CheckChunking(ch); err != nil {
			return auto, newErr(http.StatusBadRequest, CodeInvalidInput, "chunking_strategy.static: %v", err)
		}
		return ch, nil
	}
	return auto, newErr(http.StatusBadRequest, CodeInvalidInput, "chunking_strategy.type must be auto or static (got %q)", c.Type)
}

func (s *Server) needLibrary(what string) error {
	if s.opts.Storage.Library == nil {
		return newErr(http.StatusServiceUnavailable, CodeServiceUnavailable, "%s needs the embedding model of stored data, which is not configured", what)
	}
	return nil
}

func (s *Server) needIngest() error {
	if s.opts.Storage.Ingest == nil {
		return newErr(http.StatusServiceUnavailable, CodeServiceUnavailable, "attaching files needs the ingestion pipeline, which is not running")
	}
	return nil
}

// ingestible checks that a stored file can be chunked: a document, not an
// image.
func (s *Server) ingestible(r *http.Request, fileID string) (storage.File, error) {
	f, err := s.store().GetFile(r.Context(), fileID)
	if err != nil {
		return f, storageErr("file "+fileID, err)
	}
	media, err := ingest.Accept(f.Filename, "assistants")
	if err != nil || ingest.IsImage(f.MediaType) || ingest.IsImage(media) {
		msg := "only documents can be added to a vector store"
		if err != nil {
			msg = err.Error()
		}
		return f, newErr(http.StatusBadRequest, CodeUnsupportedFile, "file %s (%s, %s) cannot be searched: %s", f.ID, truncate(f.Filename, 128), f.MediaType, msg)
	}
	return f, nil
}

func (s *Server) createVectorStore(w http.ResponseWriter, r *http.Request) {
	var req VectorStoreCreateRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	req.Name = strings.TrimSpace(req.Name)
	switch {
	case req.Name == "":
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "name is required (unique among vector stores; knowledge bases and the rag plugin can name it)"))
		return
	case len(req.Name) > 256:
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "name is at most 256 characters"))
		return
	case len(req.FileIDs) > maxFileIDs:
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "file_ids has %d files; at most %d", len(req.FileIDs), maxFileIDs))
		return
	}
	if err := checkMetadata(req.Metadata); err != nil {
		writeError(w, err)
		return
	}
	ch, err := chunking(req.ChunkingStrategy)
	if err == nil {
		err = s.needLibrary("a vector store")
	}
	if err == nil && len(req.FileIDs) > 0 {
		err = s.needIngest()
	}
	if err != nil {
		writeError(w, err)
		return
	}
	// Every file is checked before the store exists, so a bad id leaves
	// nothing behind.
	seen := map[string]bool{}
	for _, id := range req.FileIDs {
		if seen[id] {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "file_ids names %s twice", id))
			return
		}
		seen[id] = true
		if _, err := s.ingestible(r, id); err != nil {
			writeError(w, err)
			return
		}
	}
	model := s.opts.Storage.Library.Model()
	v, err := s.store().CreateVectorStore(r.Context(), storage.NewVectorStore{Name: req.Name, Metadata: req.Metadata,
		EmbeddingModel: model.Name(), Dimensions: model.Dimensions()})
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			writeError(w, newErr(http.StatusConflict, CodeConflict, "a vector store named %q exists already; names are unique", req.Name))
			return
		}
		writeError(w, storageErr("vector store "+req.Name, err))
		return
	}
	for _, id := range req.FileIDs {
		if _, err := s.store().AttachFile(r.Context(), v.ID, id, nil, ch); err != nil {
			s.invalidate(v.ID)
			writeError(w, storageErr(fmt.Sprintf("file %s of the new vector store %s", id, v.ID), err))
			return
		}
		s.opts.Storage.Ingest.Submit(v.ID, id)
	}
	s.invalidate(v.ID)
	if len(req.FileIDs) > 0 {
		if fresh, err := s.store().GetVectorStore(r.Context(), v.ID); err == nil {
			v = fresh
		}
	}
	writeJSON(w, http.StatusOK, vectorStoreObject(v))
}

func (s *Server) listVectorStores(w http.ResponseWriter, r *http.Request) {
	o, err := listOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	p, err := s.store().ListVectorStores(r.Context(), o)
	if err != nil {
		writeError(w, storageErr("vector stores", err))
		return
	}
	writeJSON(w, http.StatusOK, listOf(p, vectorStoreObject, func(v VectorStoreObject) string { return v.ID }))
}

func (s *Server) getVectorStore(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	v, err := s.store().GetVectorStore(r.Context(), id)
	if err != nil {
		writeError(w, storageErr("vector store "+id, err))
		return
	}
	writeJSON(w, http.StatusOK, vectorStoreObject(v))
}

func (s *Server) updateVectorStore(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	var req VectorStoreUpdateRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Name != nil {
		n := strings.TrimSpace(*req.Name)
		if n == "" || len(n) > 256 {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "name must be 1 to 256 characters"))
			return
		}
		req.Name = &n
	}
	if err := checkMetadata(req.Metadata); err != nil {
		writeError(w, err)
		return
	}
	v, err := s.store().UpdateVectorStore(r.Context(), id, storage.VectorStoreUpdate{Name: req.Name, Metadata: req.Metadata})
	if err != nil {
		if errors.Is(err, storage.ErrConflict) && req.Name != nil {
			writeError(w, newErr(http.StatusConflict, CodeConflict, "a vector store named %q exists already; names are unique", *req.Name))
			return
		}
		writeError(w, storageErr("vector store "+id, err))
		return
	}
	s.invalidate(id)
	writeJSON(w, http.StatusOK, vectorStoreObject(v))
}

func (s *Server) deleteVectorStore(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if _, err := s.store().GetVectorStore(r.Context(), id); err != nil {
		writeError(w, storageErr("vector store "+id, err))
		return
	}
	// A knowledge base that searches it would break: say which.
	_, doc, _ := s.cfg.persisted()
	if st := doc.Global.Storage; st != nil {
		for _, kb := range st.KnowledgeBases {
			for _, vs := range kb.VectorStores {
				if vs == id {
					writeError(w, newErr(http.StatusConflict, CodeConflict, "vector store %s is searched by knowledge base %q; remove it from the knowledge base (PUT /api/v1/storage/knowledge-bases/%s) first", id, kb.Name, kb.Name))
					return
				}
			}
		}
	}
	if err := s.store().DeleteVectorStore(r.Context(), id); err != nil {
		writeError(w, storageErr("vector store "+id, err))
		return
	}
	s.invalidate(id)
	writeJSON(w, http.StatusOK, Deleted{ID: id, Object: "vector_store.deleted", Deleted: true})
}

// searchQuery reads query: a string or an array of strings.
func searchQuery(q any) ([]string, error) {
	var parts []string
	switch v := q.(type) {
	case string:
		parts = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "query must be a string or an array of strings")
			}
			parts = append(parts, s)
		}
	default:
		return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "query is required: a string or an array of strings")
	}
	n := 0
	for _, p := range parts {
		n += len(strings.TrimSpace(p))
	}
	if n == 0 {
		return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "query is empty")
	}
	if len(parts) > 32 {
		return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "query has %d strings; at most 32", len(parts))
	}
	return parts, nil
}

// parseFilter reads an attribute filter given as a decoded JSON value.
func parseFilter(field string, v any) (*storage.Filter, error) {
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "%s: %v", field, err)
	}
	f, err := storage.ParseFilter(raw)
	if err != nil {
		return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "%s: %v", field, err)
	}
	return f, nil
}

func (s *Server) searchVectorStore(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	var req VectorStoreSearchRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	parts, err := searchQuery(req.Query)
	if err != nil {
		writeError(w, err)
		return
	}
	k := 10
	if req.MaxNumResults != nil {
		k = *req.MaxNumResults
		if k < 1 || k > 50 {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "max_num_results must be 1 to 50 (got %d)", k))
			return
		}
	}
	if req.RewriteQuery {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "rewrite_query is not supported: the query is embedded as given; send rewrite_query false or leave it out"))
		return
	}
	var minScore *float32
	if ro := req.RankingOptions; ro != nil {
		switch ro.Ranker {
		case "", "auto", "none", "default-2024-11-15":
		default:
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "ranking_options.ranker must be auto, none or default-2024-11-15 (got %q); hits are ranked by cosine similarity", ro.Ranker))
			return
		}
		if t := ro.ScoreThreshold; t != nil {
			if *t < 0 || *t > 1 {
				writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "ranking_options.score_threshold must be 0 to 1 (got %g)", *t))
				return
			}
			v := float32(*t)
			minScore = &v
		}
	}
	filter, err := parseFilter("filters", req.Filters)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.needLibrary("searching a vector store"); err != nil {
		writeError(w, err)
		return
	}
	if _, err := s.store().GetVectorStore(r.Context(), id); err != nil {
		writeError(w, storageErr("vector store "+id, err))
		return
	}
	res, err := s.opts.Storage.Library.Search(r.Context(), retrieval.Query{StoreIDs: []string{id}, Text: strings.Join(parts, "\n"), K: k, MinScore: minScore, Filter: filter})
	if err != nil {
		writeError(w, storageErr("search of vector store "+id, err))
		return
	}
	out := SearchResultsPage{Object: "vector_store.search_results.page", SearchQuery: parts, Data: make([]SearchResult, 0, len(res.Hits))}
	for _, h := range res.Hits {
		attrs := h.Attributes
		if attrs == nil {
			attrs = map[string]any{}
		}
		out.Data = append(out.Data, SearchResult{FileID: h.FileID, Filename: h.Filename, Score: float64(h.Score), Attributes: attrs,
			Content: []SearchContent{{Type: "text", Text: h.Text}}})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) attachFile(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	var req VectorStoreFileRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.FileID == "" {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "file_id is required (POST /api/v1/storage/files uploads one)"))
		return
	}
	if err := checkAttributes(req.Attributes); err != nil {
		writeError(w, err)
		return
	}
	ch, err := chunking(req.ChunkingStrategy)
	if err == nil {
		err = s.needIngest()
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if _, err := s.store().GetVectorStore(r.Context(), id); err != nil {
		writeError(w, storageErr("vector store "+id, err))
		return
	}
	if _, err := s.ingestible(r, req.FileID); err != nil {
		writeError(w, err)
		return
	}
	vf, err := s.store().AttachFile(r.Context(), id, req.FileID, req.Attributes, ch)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			writeError(w, newErr(http.StatusConflict, CodeConflict, "file %s is attached to vector store %s already", req.FileID, id))
			return
		}
		writeError(w, storageErr(fmt.Sprintf("file %s in vector store %s", req.FileID, id), err))
		return
	}
	s.invalidate(id)
	s.opts.Storage.Ingest.Submit(id, req.FileID)
	writeJSON(w, http.StatusOK, vectorStoreFileObject(vf))
}

func (s *Server) listVectorStoreFiles(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	o, err := listOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	status := r.URL.Query().Get("filter")
	switch status {
	case "", storage.StatusInProgress, storage.StatusCompleted, storage.StatusFailed, storage.StatusCancelled:
	default:
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "filter must be in_progress, completed, failed or cancelled (got %q)", truncate(status, 64)))
		return
	}
	if _, err := s.store().GetVectorStore(r.Context(), id); err != nil {
		writeError(w, storageErr("vector store "+id, err))
		return
	}
	p, err := s.store().ListVectorStoreFiles(r.Context(), id, status, o)
	if err != nil {
		writeError(w, storageErr("files of vector store "+id, err))
		return
	}
	writeJSON(w, http.StatusOK, listOf(p, vectorStoreFileObject, func(f VectorStoreFileObject) string { return f.ID }))
}

func (s *Server) getVectorStoreFile(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	f, err := s.store().GetVectorStoreFile(r.Context(), v["id"], v["file_id"])
	if err != nil {
		writeError(w, storageErr(fmt.Sprintf("file %s in vector store %s", v["file_id"], v["id"]), err))
		return
	}
	writeJSON(w, http.StatusOK, vectorStoreFileObject(f))
}

func (s *Server) detachFile(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	if err := s.store().DetachFile(r.Context(), v["id"], v["file_id"]); err != nil {
		writeError(w, storageErr(fmt.Sprintf("file %s in vector store %s", v["file_id"], v["id"]), err))
		return
	}
	s.invalidate(v["id"])
	writeJSON(w, http.StatusOK, Deleted{ID: v["file_id"], Object: "vector_store.file.deleted", Deleted: true})
}
