package hostapi

import (
	"context"
	"errors"
	"time"

	"github.com/junction-router/junction/hostapi/abi"
)

// Backends serve the host functions. Each is optional: a nil one makes its
// host function answer StatusUnavailable. They are called with the handler
// call's context, so they run under its deadline.
type Backends struct {
	Embedder   Embedder
	Vectors    VectorStores
	Cache      Cache
	Classifier Classifier
	Tokens     TokenCounter
	// Retriever serves retrieve: text search over stored vector stores and
	// knowledge bases.
	Retriever Retriever
	// Memory serves memory_recall and memory_remember.
	Memory Memory
	// Clock gives the time for junction.now; nil gives none (modules have no
	// clock of their own).
	Clock func() time.Time
}

// Embedder embeds texts (engine/signal's embedders satisfy it).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// VectorStores searches named vector stores.
type VectorStores interface {
	// Search returns the k items of store most similar to query, best first.
	// An unknown store is ErrNoSuchStore.
	Search(ctx context.Context, store string, query []float32, k int) ([]abi.VectorHit, error)
}

// Retriever searches stored vector stores and knowledge bases by text: it
// embeds the query with the model the stores were built with.
type Retriever interface {
	// Retrieve returns up to q.K chunks of q.Source most similar to q.Text,
	// best first. Each hit's Payload is a Passage as JSON. An
	// unknown source wraps ErrNoSuchStore, a refused filter ErrInvalidQuery.
	Retrieve(ctx context.Context, q RetrieveQuery) ([]abi.VectorHit, error)
}

// Passage is a retrieve hit's payload, encoded as JSON: every Retriever
// writes it with this type, so the guests' view of it has one definition.
type Passage struct {
	Text          string         `json:"text"`
	Source        string         `json:"source"` // the file's name
	FileID        string         `json:"file_id"`
	VectorStoreID string         `json:"vector_store_id"`
	ChunkIndex    int            `json:"chunk_index"`
	Attributes    map[string]any `json:"attributes"` // never null
}

// Recalled is a memory_recall hit's payload, encoded as JSON.
type Recalled struct {
	ID        string `json:"id"`
	Text      string `json:"text"`
	CreatedAt int64  `json:"created_at"` // Unix seconds
}

// RetrieveQuery is one retrieve call.
type RetrieveQuery struct {
	// Source is a vector store's id or name, or a knowledge base's name.
	Source string
	// Text is the query text.
	Text string
	// K is the most hits wanted (0: the source's default).
	K int
	// MinScore drops hits scoring below it when HasMinScore is set; unset,
	// a knowledge base's own min_score applies.
	MinScore    float32
	HasMinScore bool
	// Filter is an OpenAI-style attribute filter as JSON (nil: none).
	Filter []byte
	// Fresh bypasses any result cache (probe calls set it).
	Fresh bool
}

// Memory keeps and recalls short texts per scope (a user, a tenant).
type Memory interface {
	// Recall returns up to k memories of scope most similar to text, scoring
	// at least minScore, best first. Each hit's Payload is a Recalled as
	// JSON.
	Recall(ctx context.Context, scope, text string, k int, minScore float32) ([]abi.VectorHit, error)
	// Remember keeps text under scope.
	Remember(ctx context.Context, scope, text string) error
}

// Cache is the response cache behind cache_lookup and cache_store.
type Cache interface {
	// Lookup finds key in namespace, or with an embedding the most similar
	// entry at or above threshold; ok is false on a miss.
	Lookup(ctx context.Context, namespace, key string, embedding []float32, threshold float32) (e abi.CacheEntry, ok bool, err error)
	// Store keeps value under key for ttl (0: the cache's default).
	Store(ctx context.Context, namespace, key string, value []byte, ttl time.Duration, embedding []float32) error
}

// Classifier runs a named classifier binding.
type Classifier interface {
	// Classify returns labels with scores, best first. An unknown binding is
	// ErrNoSuchBinding.
	Classify(ctx context.Context, binding, text string) ([]abi.Class, error)
}

// RemoteClassifier is a Classifier some of whose bindings ask a model
// behind an endpoint with a timeout of its own (serve's guardrail and nli
// bindings: global.external_models' llm_timeout_seconds). RemoteTimeout is
// that timeout for binding, 0 for a binding that is not remote.
//
// A trusted or native plugin's classify call on a remote binding runs under
// the request's context bounded by RemoteTimeout (plus a little slack for
// the backend to report its own timeout), not under the handler call's
// deadline, and the time it waits is not counted against that deadline: the
// plugin's own work keeps Limits.CallTimeout, the wait gets the endpoint's
// timeout, and the request's own deadline bounds both. An interruptible
// module's deadline is enforced by closing its instance, so its remote
// calls keep the call's deadline.
type RemoteClassifier interface {
	Classifier
	RemoteTimeout(binding string) time.Duration
}

// remoteSlack is how much longer than its RemoteTimeout a remote call may
// run, so the backend's own timeout (and its error) comes first.
const remoteSlack = 250 * time.Millisecond

// TokenCounter counts tokens the way the router does.
type TokenCounter interface {
	CountTokens(text string) int
}

// Errors backends return for names they do not know; the host function
// answers StatusUnavailable.
var (
	ErrNoSuchStore   = errors.New("no such vector store")
	ErrNoSuchBinding = errors.New("no such classifier binding")
)

// ErrInvalidQuery is what a backend wraps when it refuses a query's
// arguments (a filter of the wrong shape, a k out of range); the host
// function answers StatusInvalidArgument instead of StatusBackendError.
var ErrInvalidQuery = errors.New("invalid query")
