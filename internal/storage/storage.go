// Package storage is the one storage layer for the data Junction keeps:
// uploaded files, vector stores with their files and chunks, and memories
// (the response store of the Responses API joins it later). Callers — the
// management API, ingestion, retrieval behind the plugin host — see the Store
// interface only; backends implement it: internal/storage/sqlite is the
// embedded default, and a shared backend (PostgreSQL, Redis) implements the
// same interface and passes the same conformance suite
// (internal/storage/storagetest) without touching callers.
//
// A backend stores and searches; it does not extract text, chunk or embed
// (internal/ingest does), and it does not know about plugins, modes or
// configuration. Every method that returns nil error has made its write
// durable: a 2xx built on it survives kill -9 and a restart.
package storage

import (
	"context"
	"errors"
	"io"
	"time"
)

// Store is everything a backend keeps.
type Store interface {
	Files
	VectorStores
	Memories
	// Replays are router_replay's decision records and the outcomes
	// attached to them (replays.go).
	Replays
	// Close releases the backend; calls after it fail.
	Close() error
}

// Errors a backend returns (wrapped with what was asked); callers map them
// to 4xx answers with errors.Is.
var (
	// ErrNotFound: no file, vector store, vector-store file or memory has
	// that id (or name).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a name already taken, or a file attached twice.
	ErrConflict = errors.New("conflict")
	// ErrTooLarge: an upload passed its byte limit (nothing is kept).
	ErrTooLarge = errors.New("too large")
	// ErrDimension: a vector whose length is not the store's dimension.
	ErrDimension = errors.New("embedding dimension mismatch")
	// ErrInvalid: an argument the backend cannot take (an empty vector, a
	// malformed filter, a bad page cursor).
	ErrInvalid = errors.New("invalid argument")
)

// Page is one page of a list, in OpenAI's list shape (first_id and last_id
// come from Data).
type Page[T any] struct {
	Data    []T
	HasMore bool
}

// ListOptions page through a list ordered by creation time (then id).
type ListOptions struct {
	// Limit is the page size (1–100; 0 means 20).
	Limit int
	// Order is "desc" (default, newest first) or "asc".
	Order string
	// After and Before are ids (exclusive cursors), as in OpenAI's lists.
	After, Before string
}

// ---- Files

// File is an uploaded file's record.
type File struct {
	ID        string // "file-" + random
	Filename  string // the name it was uploaded with (base name only)
	Purpose   string // "assistants", "vision", ...
	Bytes     int64
	SHA256    string // hex of the content
	MediaType string // detected from the extension ("text/markdown", "image/png", ...)
	CreatedAt time.Time
}

// NewFile describes a file about to be uploaded.
type NewFile struct {
	Filename  string
	Purpose   string
	MediaType string
}

// Files keeps uploaded files: a record and the bytes.
type Files interface {
	// CreateFile reads r to its end into a new file. It reads at most limit
	// bytes (limit > 0) and returns ErrTooLarge, keeping nothing, when r has
	// more. The bytes are never held whole in memory.
	CreateFile(ctx context.Context, f NewFile, r io.Reader, limit int64) (File, error)
	GetFile(ctx context.Context, id string) (File, error)
	// ListFiles lists files; purpose "" lists every purpose.
	ListFiles(ctx context.Context, purpose string, o ListOptions) (Page[File], error)
	// OpenFile opens a file's bytes; the caller closes the reader.
	OpenFile(ctx context.Context, id string) (io.ReadCloser, File, error)
	// DeleteFile deletes a file and detaches it (and its chunks) from every
	// vector store.
	DeleteFile(ctx context.Context, id string) error
}

// ---- Vector stores

// VectorStore is a searchable set of files' chunks, all embedded with one
// model.
type VectorStore struct {
	ID       string // "vs_" + random
	Name     string // unique among vector stores
	Metadata map[string]string
	// EmbeddingModel and Dimensions are the model every chunk and query of
	// the store is embedded with; a query embedded otherwise is refused.
	EmbeddingModel string
	Dimensions     int
	FileCounts     FileCounts
	// UsageBytes is the text bytes of its chunks.
	UsageBytes   int64
	CreatedAt    time.Time
	LastActiveAt time.Time
}

// FileCounts counts a vector store's files by status.
type FileCounts struct {
	InProgress, Completed, Failed, Cancelled, Total int
}

// NewVectorStore describes a vector store to create.
type NewVectorStore struct {
	Name           string
	Metadata       map[string]string
	EmbeddingModel string
	Dimensions     int
}

// VectorStoreUpdate changes a vector store; nil fields stay.
type VectorStoreUpdate struct {
	Name     *string
	Metadata map[string]string // replaces the metadata when not nil
}

// File statuses in a vector store.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// Chunking is how a file is cut into chunks, in tokens.
type Chunking struct {
	MaxTokens     int // 100–4096, default 800
	OverlapTokens int // at most MaxTokens/2, default 400
}

// VectorStoreFile is a file attached to a vector store.
type VectorStoreFile struct {
	FileID        string
	VectorStoreID string
	Status        string // StatusInProgress, StatusCompleted, StatusFailed, StatusCancelled
	// LastError is set when Status is failed: a code ("unsupported_file",
	// "invalid_file", "server_error", "embedding_error") and a message.
	LastErrorCode, LastErrorMessage string
	Attributes                      map[string]any // string, number or bool values
	Chunking                        Chunking
	UsageBytes                      int64
	Chunks                          int
	CreatedAt                       time.Time
}

// Chunk is one piece of a file's text and its embedding.
type Chunk struct {
	Index  int // position in the file, from 0
	Text   string
	Tokens int
	Vector []float32
}

// Query searches vector stores.
type Query struct {
	// StoreIDs are searched together (one or more); every one must exist
	// and have the query's dimension.
	StoreIDs []string
	Vector   []float32
	// K is how many hits at most (1–1000).
	K int
	// MinScore drops hits scoring below it (cosine similarity; 0 with
	// HasMinScore false keeps all).
	MinScore    float32
	HasMinScore bool
	// Filter, when not nil, keeps chunks of files whose attributes match.
	Filter *Filter
	// Text, when not empty, is the query's text, and the search is hybrid:
	// the backend ranks by fusing the chunks that match Text's words
	// lexically (BM25 over the chunk texts) with the vector search's, by
	// reciprocal rank fusion of the two candidate lists. Hit.Score stays the
	// cosine similarity of the chunk to Vector (so MinScore and a score
	// shown to users keep their meaning), but the order is the fused rank.
	// Empty Text searches by Vector alone.
	Text string
}

// Hit is one search result.
type Hit struct {
	VectorStoreID string
	FileID        string
	Filename      string
	ChunkIndex    int
	Score         float32 // cosine similarity
	Text          string
	Attributes    map[string]any
}

// VectorStores keeps vector stores, their files' status and their chunks,
// and searches them.
type VectorStores interface {
	CreateVectorStore(ctx context.Context, v NewVectorStore) (VectorStore, error) // a taken name: ErrConflict
	GetVectorStore(ctx context.Context, id string) (VectorStore, error)
	// FindVectorStore resolves an id or a name.
	FindVectorStore(ctx context.Context, idOrName string) (VectorStore, error)
	ListVectorStores(ctx context.Context, o ListOptions) (Page[VectorStore], error)
	UpdateVectorStore(ctx context.Context, id string, u VectorStoreUpdate) (VectorStore, error)
	// DeleteVectorStore deletes the store, its file attachments and chunks
	// (not the files).
	DeleteVectorStore(ctx context.Context, id string) error

	// AttachFile attaches a file in status in_progress (ErrConflict when it
	// is attached already; ErrNotFound for an unknown store or file).
	AttachFile(ctx context.Context, storeID, fileID string, attrs map[string]any, c Chunking) (VectorStoreFile, error)
	GetVectorStoreFile(ctx context.Context, storeID, fileID string) (VectorStoreFile, error)
	// ListVectorStoreFiles lists a store's files; status "" lists all.
	ListVectorStoreFiles(ctx context.Context, storeID, status string, o ListOptions) (Page[VectorStoreFile], error)
	// DetachFile removes a file and its chunks from a store (not the file).
	DetachFile(ctx context.Context, storeID, fileID string) error
	// CompleteFile stores all of a file's chunks and marks it completed, in
	// one transaction: no chunk is searchable before it commits. It fails
	// with ErrNotFound when the file was detached meanwhile, ErrDimension
	// when a vector is not the store's dimension.
	CompleteFile(ctx context.Context, storeID, fileID string, chunks []Chunk) error
	// FailFile marks an in-progress file failed with a reason; it keeps no
	// chunk of it.
	FailFile(ctx context.Context, storeID, fileID, code, message string) error
	// PendingFiles lists the files still in progress in every store (what a
	// restart must ingest again).
	PendingFiles(ctx context.Context) ([]VectorStoreFile, error)

	// Search returns the K best chunks, best first (ties by file id, then
	// chunk index): by cosine similarity, or by fused rank when q.Text is
	// set.
	Search(ctx context.Context, q Query) ([]Hit, error)
	// ScanChunks calls fn with each chunk of the given stores (vectors
	// included), in store, file and index order, without holding them all
	// in memory; fn's error stops the scan and is returned.
	ScanChunks(ctx context.Context, storeIDs []string, fn func(Hit, []float32) error) error
}

// ---- Memories

// Memory is one thing a conversation established, kept per scope (a user).
type Memory struct {
	ID        string // "mem_" + random
	Scope     string
	Text      string
	CreatedAt time.Time
	// EmbeddingModel is the model Vector was made with; recall with another
	// model's vector skips it.
	EmbeddingModel string
	Vector         []float32
}

// MemoryHit is a recalled memory and its similarity.
type MemoryHit struct {
	Memory
	Score float32
}

// Memories keeps memories per scope.
type Memories interface {
	// Remember keeps text in scope; the same text (after trimming and case
	// folding) in the same scope is kept once: created is false and the
	// existing memory is returned.
	Remember(ctx context.Context, m Memory) (kept Memory, created bool, err error)
	// Recall returns the k memories of scope most similar to vector (made
	// with model), best first, at or above minScore.
	Recall(ctx context.Context, scope, model string, vector []float32, k int, minScore float32) ([]MemoryHit, error)
	// ListMemories lists memories; scope "" lists every scope.
	ListMemories(ctx context.Context, scope string, o ListOptions) (Page[Memory], error)
	GetMemory(ctx context.Context, id string) (Memory, error)
	DeleteMemory(ctx context.Context, id string) error
	// DeleteScope deletes every memory of scope and says how many.
	DeleteScope(ctx context.Context, scope string) (int, error)
}
