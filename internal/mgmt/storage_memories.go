package mgmt

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/junction-router/junction/internal/storage"
)

// Memories: /api/v1/storage/memories, what the memory plugin kept per scope
// (a user). Listed and deleted here; created only by conversations.

// MemoryObject is a kept memory (its vector is not shown).
type MemoryObject struct {
	ID             string `json:"id"`
	Object         string `json:"object"`
	Scope          string `json:"scope"`
	Text           string `json:"text"`
	CreatedAt      int64  `json:"created_at"`
	EmbeddingModel string `json:"embedding_model"`
}

// ScopeDeleted answers the deletion of a scope's memories.
type ScopeDeleted struct {
	Scope   string `json:"scope"`
	Deleted int    `json:"deleted"`
}

func memoryObject(m storage.Memory) MemoryObject {
	return MemoryObject{ID: m.ID, Object: "memory", Scope: m.Scope, Text: m.Text, CreatedAt: unix(m.CreatedAt), EmbeddingModel: m.EmbeddingModel}
}

func scopeParam(r *http.Request) (string, error) {
	sc := r.URL.Query().Get("scope")
	if len(sc) > 256 {
		return "", newErr(http.StatusBadRequest, CodeInvalidInput, "scope is at most 256 characters")
	}
	return sc, nil
}

func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) {
	o, err := listOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	scope, err := scopeParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	p, err := s.store().ListMemories(r.Context(), scope, o)
	if err != nil {
		writeError(w, storageErr("memories", err))
		return
	}
	writeJSON(w, http.StatusOK, listOf(p, memoryObject, func(m MemoryObject) string { return m.ID }))
}

func (s *Server) deleteScope(w http.ResponseWriter, r *http.Request) {
	scope, err := scopeParam(r)
	if err == nil && scope == "" {
		err = newErr(http.StatusBadRequest, CodeInvalidInput, "scope is required: DELETE /api/v1/storage/memories?scope=<scope> deletes that scope's memories (one memory: DELETE /api/v1/storage/memories/{id})")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	n, err := s.store().DeleteScope(r.Context(), scope)
	if err != nil {
		writeError(w, storageErr("memories of scope "+truncate(scope, 64), err))
		return
	}
	writeJSON(w, http.StatusOK, ScopeDeleted{Scope: scope, Deleted: n})
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	m, err := s.store().GetMemory(r.Context(), id)
	if err != nil {
		writeError(w, storageErr("memory "+id, err))
		return
	}
	writeJSON(w, http.StatusOK, memoryObject(m))
}

func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if err := s.store().DeleteMemory(r.Context(), id); err != nil {
		writeError(w, storageErr("memory "+id, err))
		return
	}
	writeJSON(w, http.StatusOK, Deleted{ID: id, Object: "memory.deleted", Deleted: true})
}
