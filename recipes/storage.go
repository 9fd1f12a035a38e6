package recipes

import "encoding/json"

// Storage configures what Junction keeps (global.storage): the data
// directory of the embedded store, upload limits, ingestion, the embedding
// model of vector stores and memories, and the knowledge bases.
type Storage struct {
	// Dir is the embedded store's data directory (default DefaultStorageDir,
	// relative to the working directory; created 0700 on first use).
	// junction serve --data-dir overrides it. Read at start-up only.
	Dir string `json:"dir,omitempty"`
	// Backend is where files, vector stores, knowledge bases' chunks and
	// memories live: "embedded" (default: SQLite in Dir, one machine) or
	// "postgres" (a PostgreSQL schema every replica shares; Postgres says
	// how to reach it). The embedded store in Dir stays open either way
	// for what is kept per replica (stored responses). Read at start-up
	// only.
	Backend string `json:"backend,omitempty"`
	// Postgres configures the postgres backend (required with it).
	Postgres *StoragePostgres `json:"postgres,omitempty"`
	// MaxFileBytes bounds one uploaded file (default DefaultMaxFileBytes).
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
	// IngestConcurrency is how many files are chunked and embedded at once
	// (default 2).
	IngestConcurrency int `json:"ingest_concurrency,omitempty"`
	// Embedding is the model that embeds chunks, queries and memories; nil
	// means the router's own embedding model (the one the embedding signals
	// use). Read at start-up only.
	Embedding *StorageEmbedding `json:"embedding,omitempty"`
	// KnowledgeBases are named retrieval sources over vector stores; the
	// rag plugin names one in its store field.
	KnowledgeBases []KnowledgeBase `json:"knowledge_bases,omitempty"`
}

// Storage backends (Storage.Backend).
const (
	StorageBackendEmbedded = "embedded"
	StorageBackendPostgres = "postgres"
)

// StoragePostgres reaches the PostgreSQL of the postgres backend. The DSN
// is a secret (it may hold a password), so the configuration names the
// environment variable that holds it, never the DSN itself; a search_path
// in the DSN picks the schema (default: the user's, usually public).
type StoragePostgres struct {
	// DSNEnv is the environment variable holding the DSN
	// (postgres://user@host:5432/db?sslmode=require&search_path=junction).
	DSNEnv string `json:"dsn_env"`
	// MaxConns bounds the connection pool of each replica (default
	// DefaultPostgresMaxConns).
	MaxConns int `json:"max_conns,omitempty"`
}

// DefaultPostgresMaxConns is StoragePostgres.MaxConns's default.
const DefaultPostgresMaxConns = 8

// StorageBackend is the backend s names: embedded when s is nil or names
// none.
func StorageBackend(s *Storage) string {
	if s == nil || s.Backend == "" {
		return StorageBackendEmbedded
	}
	return s.Backend
}

// Storage defaults.
const (
	DefaultStorageDir        = "./junction-data"
	DefaultMaxFileBytes      = 32 << 20
	DefaultIngestConcurrency = 2
)

// StorageEmbedding names the embedding model of stored data: exactly one of
// Deployment (a global.model_catalog.deployments entry that serves
// embeddings) or Endpoint (an OpenAI-compatible /v1/embeddings URL, with
// Model and the environment variable holding its API key).
type StorageEmbedding struct {
	Deployment string `json:"deployment,omitempty"`
	Endpoint   string `json:"endpoint,omitempty"`
	Model      string `json:"model,omitempty"`
	APIKeyEnv  string `json:"api_key_env,omitempty"`
	// Dimensions is asked of endpoints that can shorten their vectors, and
	// checked against every answer; 0 takes what the model gives.
	Dimensions int `json:"dimensions,omitempty"`
	// TimeoutMS bounds one embeddings call (default 30000).
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// KnowledgeBase is a named retrieval source: vector stores searched
// together, with retrieval settings the rag plugin uses unless its own
// configuration says otherwise.
type KnowledgeBase struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// VectorStores are vector store ids (vs_...) searched together.
	VectorStores []string `json:"vector_stores"`
	// TopK is how many passages a search returns (default 5).
	TopK int `json:"top_k,omitempty"`
	// MinScore drops passages scoring below it (default 0: keep all).
	MinScore float64 `json:"min_score,omitempty"`
	// Filters is an OpenAI vector-store search filter over file attributes
	// ({type: eq|ne|gt|gte|lt|lte|in|nin, key, value} or {type: and|or,
	// filters}).
	Filters json.RawMessage `json:"filters,omitempty"`
}

// KnowledgeBase returns the knowledge base with this name.
func (d *Document) KnowledgeBase(name string) (KnowledgeBase, bool) {
	if d == nil || d.Global.Storage == nil {
		return KnowledgeBase{}, false
	}
	for _, kb := range d.Global.Storage.KnowledgeBases {
		if kb.Name == name {
			return kb, true
		}
	}
	return KnowledgeBase{}, false
}
