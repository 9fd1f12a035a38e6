package mgmt

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/recipes"
)

// Knowledge bases: /api/v1/storage/knowledge-bases. A knowledge base is
// configuration (global.storage.knowledge_bases): a create, replace or
// delete builds a candidate document from the persisted one, which goes
// through the validation, persistence and activation of every configuration
// change. It answers 202 as soon as the candidate is persisted; the
// activation goes on in the background (poll GET /api/v1/config/hash), and a
// second one while it is pending is refused (409 CONFIG_ACTIVATION_PENDING).
// Reads come from the active configuration.

// KnowledgeBaseRequest creates (POST) or replaces (PUT) a knowledge base.
type KnowledgeBaseRequest struct {
	// Name is required on create; on replace it is the path's (or empty).
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// VectorStores are existing vector stores (ids, or names resolved to
	// ids), searched together; at least one.
	VectorStores []string `json:"vector_stores" oas:"required,minItems=1,maxItems=64,uniqueItems,items-minLength=1"`
	// TopK is how many passages a search returns (1–50, default 5).
	TopK int `json:"top_k,omitempty" oas:"min=1,max=50"`
	// MinScore drops passages scoring below it (-1 to 1, default 0).
	MinScore float64 `json:"min_score,omitempty" oas:"min=-1,max=1"`
	// Filters is an attribute filter applied to every search.
	Filters any `json:"filters,omitempty" oas:"filter"`
}

// KnowledgeBaseObject is a knowledge base of the active configuration with
// the state of its vector stores.
type KnowledgeBaseObject struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	VectorStores []string `json:"vector_stores"`
	TopK         int      `json:"top_k"`
	MinScore     float64  `json:"min_score"`
	Filters      any      `json:"filters" oas:"filter"`
	// Stores describe the vector stores (status "missing" for one that no
	// longer exists).
	Stores []KnowledgeBaseStore `json:"stores"`
}

// KnowledgeBaseStore is one vector store of a knowledge base.
type KnowledgeBaseStore struct {
	ID             string           `json:"id"`
	Name           string           `json:"name"`
	Status         string           `json:"status"`
	EmbeddingModel string           `json:"embedding_model"`
	Dimensions     int              `json:"dimensions"`
	FileCounts     FileCountsObject `json:"file_counts"`
	UsageBytes     int64            `json:"usage_bytes"`
}

// KnowledgeBaseList lists the knowledge bases.
type KnowledgeBaseList struct {
	Object string                `json:"object"`
	Data   []KnowledgeBaseObject `json:"data"`
}

// KnowledgeBaseMutation answers a knowledge-base create, replace or delete
// (202): the candidate is persisted and activating.
type KnowledgeBaseMutation struct {
	ActivationStatus     string `json:"activation_status"`
	GeneratedRuntimeHash string `json:"generated_runtime_hash"`
	SourceConfigHash     string `json:"source_config_hash"`
	ETag                 string `json:"etag"`
	// KnowledgeBase is the knowledge base as written (the removed one on
	// delete).
	KnowledgeBase KnowledgeBaseObject `json:"knowledge_base"`
	Deleted       bool                `json:"deleted,omitempty"`
}

// KnowledgeBaseMap is GET …/map/metadata: what a knowledge base holds.
type KnowledgeBaseMap struct {
	Name           string                 `json:"name"`
	Description    string                 `json:"description"`
	VectorStores   []KnowledgeBaseStore   `json:"vector_stores"`
	Chunks         int                    `json:"chunks"`
	EmbeddingModel string                 `json:"embedding_model"`
	Dimensions     int                    `json:"dimensions"`
	Retrieval      KnowledgeBaseRetrieval `json:"retrieval"`
}

// KnowledgeBaseRetrieval are a knowledge base's search settings.
type KnowledgeBaseRetrieval struct {
	TopK     int     `json:"top_k"`
	MinScore float64 `json:"min_score"`
	Filters  any     `json:"filters" oas:"filter"`
}

// KnowledgeBaseChunk is one line of …/map/data.ndjson.
type KnowledgeBaseChunk struct {
	VectorStoreID string         `json:"vector_store_id"`
	FileID        string         `json:"file_id"`
	Filename      string         `json:"filename"`
	ChunkIndex    int            `json:"chunk_index"`
	Text          string         `json:"text"`
	Attributes    map[string]any `json:"attributes"`
	// Vector is present with ?include_vectors=true.
	Vector []float32 `json:"vector,omitempty"`
}

const defaultKBTopK = 5

func (s *Server) kbObject(ctx context.Context, kb recipes.KnowledgeBase) KnowledgeBaseObject {
	out := KnowledgeBaseObject{Name: kb.Name, Description: kb.Description, VectorStores: kb.VectorStores, TopK: kb.TopK,
		MinScore: kb.MinScore, Stores: s.kbStores(ctx, kb.VectorStores)}
	if out.VectorStores == nil {
		out.VectorStores = []string{}
	}
	if out.TopK == 0 {
		out.TopK = defaultKBTopK
	}
	if len(kb.Filters) > 0 {
		var f any
		if json.Unmarshal(kb.Filters, &f) == nil {
			out.Filters = f
		}
	}
	return out
}

func (s *Server) kbStores(ctx context.Context, ids []string) []KnowledgeBaseStore {
	out := make([]KnowledgeBaseStore, 0, len(ids))
	for _, id := range ids {
		v, err := s.store().GetVectorStore(ctx, id)
		if err != nil {
			status := "missing"
			if !errors.Is(err, storage.ErrNotFound) {
				status = "unknown"
			}
			out = append(out, KnowledgeBaseStore{ID: id, Status: status})
			continue
		}
		o := vectorStoreObject(v)
		out = append(out, KnowledgeBaseStore{ID: v.ID, Name: v.Name, Status: o.Status, EmbeddingModel: v.EmbeddingModel,
			Dimensions: v.Dimensions, FileCounts: o.FileCounts, UsageBytes: v.UsageBytes})
	}
	return out
}

// activeKB finds a knowledge base of the active configuration.
func (s *Server) activeKB(name string) (recipes.KnowledgeBase, error) {
	kb, ok := s.cfg.Runtime().Current().Document().KnowledgeBase(name)
	if !ok {
		return kb, newErr(http.StatusNotFound, CodeNotFound, "no knowledge base %q in the active configuration; GET /api/v1/storage/knowledge-bases lists them", truncate(name, 128))
	}
	return kb, nil
}

func (s *Server) listKnowledgeBases(w http.ResponseWriter, r *http.Request) {
	out := KnowledgeBaseList{Object: "list", Data: []KnowledgeBaseObject{}}
	if st := s.cfg.Runtime().Current().Document().Global.Storage; st != nil {
		for _, kb := range st.KnowledgeBases {
			out.Data = append(out.Data, s.kbObject(r.Context(), kb))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getKnowledgeBase(w http.ResponseWriter, r *http.Request) {
	kb, err := s.activeKB(mux.Vars(r)["name"])
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.kbObject(r.Context(), kb))
}

// checkKB validates a request against the store: the vector stores exist
// (names resolve to ids), share one embedding model, and the filter parses.
func (s *Server) checkKB(ctx context.Context, req *KnowledgeBaseRequest) (recipes.KnowledgeBase, error) {
	kb := recipes.KnowledgeBase{Name: req.Name, Description: req.Description, TopK: req.TopK, MinScore: req.MinScore}
	if req.TopK != 0 && (req.TopK < 1 || req.TopK > 50) {
		return kb, newErr(http.StatusBadRequest, CodeInvalidInput, "top_k must be 1 to 50 (got %d)", req.TopK)
	}
	if req.MinScore < -1 || req.MinScore > 1 {
		return kb, newErr(http.StatusBadRequest, CodeInvalidInput, "min_score must be -1 to 1 (got %g)", req.MinScore)
	}
	if len(req.VectorStores) == 0 {
		return kb, newErr(http.StatusBadRequest, CodeInvalidInput, "vector_stores is required: the ids of the vector stores the knowledge base searches (GET /api/v1/storage/vector-stores lists them)")
	}
	if len(req.VectorStores) > 64 {
		return kb, newErr(http.StatusBadRequest, CodeInvalidInput, "vector_stores names %d stores; at most 64", len(req.VectorStores))
	}
	seen := map[string]bool{}
	var model string
	var dims int
	for i, ref := range req.VectorStores {
		v, err := s.store().FindVectorStore(ctx, ref)
		if errors.Is(err, storage.ErrNotFound) {
			return kb, newErr(http.StatusBadRequest, CodeInvalidInput, "vector_stores[%d]: no vector store %q; create it first (POST /api/v1/storage/vector-stores)", i, truncate(ref, 128))
		}
		if err != nil {
			return kb, storageErr("vector store "+truncate(ref, 128), err)
		}
		if seen[v.ID] {
			return kb, newErr(http.StatusBadRequest, CodeInvalidInput, "vector_stores names %s twice", v.ID)
		}
		seen[v.ID] = true
		if i == 0 {
			model, dims = v.EmbeddingModel, v.Dimensions
		} else if v.EmbeddingModel != model || v.Dimensions != dims {
			return kb, newErr(http.StatusBadRequest, CodeInvalidInput, "vector store %s is embedded with %s (%d dimensions), %s with %s (%d): a knowledge base searches stores of one embedding model",
				v.ID, v.EmbeddingModel, v.Dimensions, kb.VectorStores[0], model, dims)
		}
		kb.VectorStores = append(kb.VectorStores, v.ID)
	}
	if req.Filters != nil {
		if _, err := parseFilter("filters", req.Filters); err != nil {
			return kb, err
		}
		raw, _ := json.Marshal(req.Filters)
		kb.Filters = raw
	}
	return kb, nil
}

func (s *Server) createKnowledgeBase(w http.ResponseWriter, r *http.Request) {
	var req KnowledgeBaseRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Name == "" {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "name is required (letters, digits, _ . -; the rag plugin's store field names it)"))
		return
	}
	s.mutateKB(w, r, "create", req.Name, &req)
}

func (s *Server) replaceKnowledgeBase(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	var req KnowledgeBaseRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Name != "" && req.Name != name {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "the body's name %q differs from the path's %q; a knowledge base is renamed by creating the new one and deleting the old", truncate(req.Name, 128), truncate(name, 128)))
		return
	}
	req.Name = name
	s.mutateKB(w, r, "replace", name, &req)
}

func (s *Server) deleteKnowledgeBase(w http.ResponseWriter, r *http.Request) {
	s.mutateKB(w, r, "delete", mux.Vars(r)["name"], nil)
}

// mutateKB persists the candidate with the knowledge base created,
// replaced or removed, and starts its activation.
func (s *Server) mutateKB(w http.ResponseWriter, r *http.Request, op, name string, req *KnowledgeBaseRequest) {
	var kb recipes.KnowledgeBase
	if req != nil {
		var err error
		if kb, err = s.checkKB(r.Context(), req); err != nil {
			writeError(w, err)
			return
		}
	}
	var removed recipes.KnowledgeBase
	m := &mutation{source: "api", exclusive: true, async: true, who: s.whoOf(r)}
	// If-Match is optional here (the spec asks it of document mutations
	// only); when given, it must be the current ETag.
	m.ifMatch, m.hasIfMatch = ifMatch(r)
	m.noPrecondition = !m.hasIfMatch
	m.build = func(cur []byte, curDoc *recipes.Document) ([]byte, error) {
		old, exists := curDoc.KnowledgeBase(name)
		switch {
		case op == "create" && exists:
			return nil, newErr(http.StatusConflict, CodeConflict, "a knowledge base named %q exists already; PUT /api/v1/storage/knowledge-bases/%s replaces it", name, name)
		case op != "create" && !exists:
			return nil, newErr(http.StatusNotFound, CodeNotFound, "no knowledge base %q in the configuration; POST /api/v1/storage/knowledge-bases creates one", truncate(name, 128))
		}
		removed = old
		return withKnowledgeBase(cur, name, kb, op == "delete")
	}
	res, err := s.cfg.apply(r.Context(), m)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.body.Error.CurrentETag != "" {
			w.Header().Set("ETag", ae.body.Error.CurrentETag)
		}
		writeError(w, err)
		return
	}
	out := KnowledgeBaseMutation{ActivationStatus: res.ActivationStatus, GeneratedRuntimeHash: res.GeneratedRuntimeHash,
		SourceConfigHash: res.SourceConfigHash, ETag: res.ETag}
	if op == "delete" {
		out.KnowledgeBase, out.Deleted = s.kbObject(r.Context(), removed), true
	} else {
		out.KnowledgeBase = s.kbObject(r.Context(), kb)
	}
	s.setConfigHeaders(w, res.ETag)
	writeJSON(w, http.StatusAccepted, out)
}

// withKnowledgeBase returns the document cur (canonical JSON) with the
// knowledge base name put (kb) or removed (del).
func withKnowledgeBase(cur []byte, name string, kb recipes.KnowledgeBase, del bool) ([]byte, error) {
	v, err := decodeGeneric(cur)
	if err != nil {
		return nil, err
	}
	doc, _ := v.(map[string]any)
	if doc == nil {
		return nil, newErr(http.StatusInternalServerError, CodeInternal, "the persisted configuration is not an object")
	}
	child := func(m map[string]any, key string) map[string]any {
		c, _ := m[key].(map[string]any)
		if c == nil {
			c = map[string]any{}
			m[key] = c
		}
		return c
	}
	st := child(child(doc, "global"), "storage")
	list, _ := st["knowledge_bases"].([]any)
	at := -1
	for i, e := range list {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			at = i
		}
	}
	if del {
		if at >= 0 {
			list = append(list[:at:at], list[at+1:]...)
		}
	} else {
		raw, err := json.Marshal(kb)
		if err != nil {
			return nil, err
		}
		entry, err := decodeGeneric(raw)
		if err != nil {
			return nil, err
		}
		if at >= 0 {
			list[at] = entry
		} else {
			list = append(list, entry)
		}
	}
	if len(list) == 0 {
		delete(st, "knowledge_bases")
	} else {
		st["knowledge_bases"] = list
	}
	return json.Marshal(doc)
}

func (s *Server) kbMetadata(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	kb, err := s.activeKB(mux.Vars(r)["name"])
	if err != nil {
		writeError(w, err)
		return
	}
	obj := s.kbObject(ctx, kb)
	out := KnowledgeBaseMap{Name: kb.Name, Description: kb.Description, VectorStores: obj.Stores,
		Retrieval: KnowledgeBaseRetrieval{TopK: obj.TopK, MinScore: obj.MinScore, Filters: obj.Filters}}
	for _, st := range obj.Stores {
		if st.Status == "missing" || st.Status == "unknown" {
			continue
		}
		if out.EmbeddingModel == "" {
			out.EmbeddingModel, out.Dimensions = st.EmbeddingModel, st.Dimensions
		}
		n, err := s.countChunks(ctx, st.ID)
		if err != nil {
			writeError(w, storageErr("files of vector store "+st.ID, err))
			return
		}
		out.Chunks += n
	}
	writeJSON(w, http.StatusOK, out)
}

// countChunks adds up the chunks of a store's completed files.
func (s *Server) countChunks(ctx context.Context, storeID string) (int, error) {
	n := 0
	o := storage.ListOptions{Limit: 100, Order: "asc"}
	for {
		p, err := s.store().ListVectorStoreFiles(ctx, storeID, storage.StatusCompleted, o)
		if err != nil {
			return n, err
		}
		for _, f := range p.Data {
			n += f.Chunks
		}
		if !p.HasMore || len(p.Data) == 0 {
			return n, nil
		}
		o.After = p.Data[len(p.Data)-1].FileID
	}
}

// kbData streams every chunk of a knowledge base's stores as NDJSON, one
// line per chunk, flushed as it goes: memory stays bounded whatever the
// size, and a client that goes away stops the scan.
func (s *Server) kbData(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	kb, err := s.activeKB(mux.Vars(r)["name"])
	if err != nil {
		writeError(w, err)
		return
	}
	vectors := false
	if v := r.URL.Query().Get("include_vectors"); v != "" {
		if vectors, err = strconv.ParseBool(v); err != nil {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "include_vectors must be true or false (got %q)", truncate(v, 32)))
			return
		}
	}
	for _, id := range kb.VectorStores {
		if _, err := s.store().GetVectorStore(ctx, id); err != nil {
			writeError(w, storageErr("vector store "+id+" of knowledge base "+kb.Name, err))
			return
		}
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	lines := 0
	err = s.store().ScanChunks(ctx, kb.VectorStores, func(h storage.Hit, vec []float32) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		line := KnowledgeBaseChunk{VectorStoreID: h.VectorStoreID, FileID: h.FileID, Filename: h.Filename, ChunkIndex: h.ChunkIndex,
			Text: h.Text, Attributes: h.Attributes}
		if line.Attributes == nil {
			line.Attributes = map[string]any{}
		}
		if vectors {
			line.Vector = vec
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
		lines++
		if lines%64 == 0 {
			return rc.Flush()
		}
		return nil
	})
	if err == nil {
		_ = rc.Flush()
		return
	}
	if ctx.Err() != nil {
		return // the client went away
	}
	// The status is sent: end the stream abnormally so that the client
	// sees a truncated transfer, not a complete one.
	s.log.Warn("knowledge base export failed", "knowledge_base", kb.Name, "lines", lines, "error", strings.TrimSpace(err.Error()))
	panic(http.ErrAbortHandler)
}
