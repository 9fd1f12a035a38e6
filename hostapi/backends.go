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
