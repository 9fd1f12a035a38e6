// Package retrieval searches stored data by text: it resolves a source (a
// vector store by id or name, or a knowledge base of the active
// configuration), checks that every store it searches was built with the
// embedding model this router embeds with, embeds the query once (recent
// query embeddings are memoised) and searches the store, keeping recent
// results in a small cache that Invalidate empties for a store whose
// content changed. It also keeps and recalls memories. The plugin host's
// retrieve, memory_recall and memory_remember functions and the management
// API's search use one Library (Retriever and Memory adapt it to hostapi).
//
// What must not happen here: no HTTP, no ingestion (internal/ingest), no
// storage of its own (the storage.Store keeps everything; the caches are
// only caches), and no request text in logs.
package retrieval

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/recipes"
)

// ErrModelMismatch: a vector store was built with another embedding model or
// dimension than the one this router embeds queries with.
var ErrModelMismatch = errors.New("embedding model mismatch")

// Bounds and defaults.
const (
	// DefaultK is how many hits a search returns when neither the query
	// nor the knowledge base says.
	DefaultK = 5
	// MaxK is the most hits one search returns.
	MaxK = 1000
	// MaxStores is the most vector stores one search spans.
	MaxStores = 64
	// MaxQueryBytes bounds the query text that is embedded; a longer text
	// is cut at a character boundary (embedding models read a bounded
	// number of tokens anyway).
	MaxQueryBytes = 16 << 10
	// MaxMemoryBytes bounds one memory's text.
	MaxMemoryBytes = 2 << 10
	// MaxScopeBytes bounds a memory scope.
	MaxScopeBytes = 256
	// MaxRecall is the most memories one recall returns.
	MaxRecall = 100

	defaultCacheEntries = 512
	defaultCacheTTL     = time.Minute
	queryMemoEntries    = 256
)

// Options configure a Library.
type Options struct {
	// Store keeps the vector stores and memories.
	Store storage.Store
	// Model embeds queries and memories; every store searched must have
	// been built with it (same name and dimension).
	Model embedding.Model
	// KnowledgeBase looks up a knowledge base of the active configuration
	// by name; nil knows none.
	KnowledgeBase func(name string) (recipes.KnowledgeBase, bool)
	// CacheEntries bounds the result cache (0: 512; negative: no cache).
	CacheEntries int
	// CacheTTL is how long a cached result is served (0: one minute).
	CacheTTL time.Duration
	// Ranking is how stores rank chunks: RankingHybrid ("" too) passes the
	// query text with its vector (storage.Query.Text: lexical matches fused
	// with the vector search), RankingDense the vector alone.
	Ranking string
}

// Rankings of Options.Ranking.
const (
	RankingHybrid = "hybrid"
	RankingDense  = "dense"
)

// Library searches vector stores and knowledge bases and keeps memories.
// It is safe for concurrent use.
type Library struct {
	store storage.Store
	model embedding.Model
	kb    func(string) (recipes.KnowledgeBase, bool)
	now   func() time.Time
	dense bool // Options.Ranking is RankingDense

	queries *lru.Cache[[sha256.Size]byte, []float32] // query text → embedding
	results *resultCache                             // nil: no result cache
	headers *headerCache                             // nil with results: store headers by id or name
}

// New returns a Library over o.Store embedding with o.Model.
func New(o Options) *Library {
	l := &Library{store: o.Store, model: o.Model, kb: o.KnowledgeBase, now: time.Now, dense: o.Ranking == RankingDense}
	if l.kb == nil {
		l.kb = func(string) (recipes.KnowledgeBase, bool) { return recipes.KnowledgeBase{}, false }
	}
	l.queries, _ = lru.New[[sha256.Size]byte, []float32](queryMemoEntries) // only fails for a size ≤ 0
	if o.CacheEntries >= 0 {
		n, ttl := o.CacheEntries, o.CacheTTL
		if n == 0 {
			n = defaultCacheEntries
		}
		if ttl <= 0 {
			ttl = defaultCacheTTL
		}
		l.results = newResultCache(n, ttl)
		l.headers = newHeaderCache()
	}
	return l
}

// Model is the embedding model of queries, memories and the stores this
// library searches.
func (l *Library) Model() embedding.Model { return l.model }

// Query is one search.
type Query struct {
	// Source is a vector store's id (vs_...) or name, or a knowledge base's
	// name (a vector store of that name wins).
	Source string
	// StoreIDs are vector stores (ids or names) searched together, instead
	// of Source.
	StoreIDs []string
	// Text is what to look for.
	Text string
	// K is the most hits (0: the knowledge base's top_k, else DefaultK).
	K int
	// MinScore drops hits scoring below it (nil: the knowledge base's
	// min_score, else keep all).
	MinScore *float32
	// Filter keeps chunks of files whose attributes match (nil: the
	// knowledge base's filters, else all).
	Filter *storage.Filter
	// Fresh bypasses the result cache: it neither reads nor writes it.
	Fresh bool
}

// Result is what a search found.
type Result struct {
	// Hits are the best chunks, best first.
	Hits []storage.Hit
	// StoreIDs are the vector stores searched.
	StoreIDs []string
	// KnowledgeBase names the knowledge base the source resolved to, or "".
	KnowledgeBase string
	// Cached is set when the hits came from the result cache.
	Cached bool
}

// Search resolves q's source, embeds its text and returns the best chunks.
// An unknown source wraps storage.ErrNotFound, a store built with another
// model ErrModelMismatch, a bad argument storage.ErrInvalid.
func (l *Library) Search(ctx context.Context, q Query) (Result, error) {
	if strings.TrimSpace(q.Text) == "" {
		return Result{}, fmt.Errorf("%w: the query text is empty; give the text to search for", storage.ErrInvalid)
	}
	if q.K < 0 || q.K > MaxK {
		return Result{}, fmt.Errorf("%w: k %d: give 1 to %d (0 for the default)", storage.ErrInvalid, q.K, MaxK)
	}
	if q.MinScore != nil && !(*q.MinScore >= -1 && *q.MinScore <= 1) { // NaN too
		return Result{}, fmt.Errorf("%w: min_score %g: give a cosine similarity between -1 and 1", storage.ErrInvalid, *q.MinScore)
	}
	if q.Filter != nil {
		if err := q.Filter.Validate(); err != nil {
			return Result{}, err
		}
	}
	res, k, minScore, filter, err := l.resolve(ctx, q)
	if err != nil {
		return Result{}, err
	}
	text := bound(q.Text, MaxQueryBytes)
	caching := l.results != nil && !q.Fresh
	var key [sha256.Size]byte
	var gens []uint64
	if caching {
		key = cacheKey(res.StoreIDs, text, k, minScore, filter)
		if hits, ok := l.results.get(key, res.StoreIDs, l.now()); ok {
			res.Hits, res.Cached = hits, true
			return res, nil
		}
		// The generations before the search: an Invalidate while it runs
		// makes what it finds stale at once.
		gens = l.results.generations(res.StoreIDs)
	}
	vec, err := l.embed(ctx, text)
	if err != nil {
		return Result{}, err
	}
	sq := storage.Query{StoreIDs: res.StoreIDs, Vector: vec, K: k, Filter: filter}
	if !l.dense {
		sq.Text = text
	}
	if minScore != nil {
		sq.MinScore, sq.HasMinScore = *minScore, true
	}
	hits, err := l.store.Search(ctx, sq)
	if err != nil {
		return Result{}, err
	}
	if hits == nil {
		hits = []storage.Hit{}
	}
	if caching {
		l.results.put(key, res.StoreIDs, gens, slices.Clone(hits), l.now())
	}
	res.Hits = hits
	return res, nil
}

// resolve finds the stores q searches and the settings it searches them
// with (q's own, else its knowledge base's, else the defaults), and checks
// every store's embedding model.
func (l *Library) resolve(ctx context.Context, q Query) (res Result, k int, minScore *float32, filter *storage.Filter, err error) {
	k, minScore, filter = q.K, q.MinScore, q.Filter
	var stores []storage.VectorStore
	switch {
	case q.Source != "" && len(q.StoreIDs) > 0:
		return res, 0, nil, nil, fmt.Errorf("%w: give a source or vector store ids, not both", storage.ErrInvalid)
	case len(q.StoreIDs) > MaxStores:
		return res, 0, nil, nil, fmt.Errorf("%w: %d vector stores: search at most %d at once", storage.ErrInvalid, len(q.StoreIDs), MaxStores)
	case len(q.StoreIDs) > 0:
		for _, id := range q.StoreIDs {
			vs, err := l.findStore(ctx, id)
			if err != nil {
				return res, 0, nil, nil, fmt.Errorf("vector store %q: %w", id, err)
			}
			stores = append(stores, vs)
		}
	case q.Source == "":
		return res, 0, nil, nil, fmt.Errorf("%w: name the vector store (id or name) or knowledge base to search", storage.ErrInvalid)
	default:
		vs, err := l.findStore(ctx, q.Source)
		switch {
		case err == nil:
			stores = append(stores, vs)
		case !errors.Is(err, storage.ErrNotFound):
			return res, 0, nil, nil, fmt.Errorf("vector store %q: %w", q.Source, err)
		default:
			kb, ok := l.kb(q.Source)
			if !ok {
				return res, 0, nil, nil, fmt.Errorf("no vector store (by id or name) or knowledge base is called %q: %w (list them with GET /api/v1/storage/vector-stores and /api/v1/storage/knowledge-bases)",
					q.Source, storage.ErrNotFound)
			}
			res.KnowledgeBase = kb.Name
			if len(kb.VectorStores) > MaxStores {
				return res, 0, nil, nil, fmt.Errorf("%w: knowledge base %q names %d vector stores: search at most %d at once", storage.ErrInvalid, kb.Name, len(kb.VectorStores), MaxStores)
			}
			for _, id := range kb.VectorStores {
				vs, err := l.getStore(ctx, id)
				if err != nil {
					return res, 0, nil, nil, fmt.Errorf("knowledge base %q names vector store %q: %w (create it, or take it out of global.storage.knowledge_bases)", kb.Name, id, err)
				}
				stores = append(stores, vs)
			}
			if k == 0 {
				k = kb.TopK
			}
			if minScore == nil && kb.MinScore != 0 {
				ms := float32(kb.MinScore)
				minScore = &ms
			}
			if filter == nil && len(kb.Filters) > 0 && string(kb.Filters) != "null" {
				if filter, err = storage.ParseFilter(kb.Filters); err != nil {
					return res, 0, nil, nil, fmt.Errorf("knowledge base %q: %w", kb.Name, err)
				}
			}
		}
	}
	if len(stores) == 0 {
		return res, 0, nil, nil, fmt.Errorf("%w: knowledge base %q has no vector stores to search", storage.ErrInvalid, res.KnowledgeBase)
	}
	if k == 0 {
		k = DefaultK
	}
	if k > MaxK {
		k = MaxK
	}
	name, dims := l.model.Name(), l.model.Dimensions()
	seen := map[string]bool{}
	for _, vs := range stores {
		if vs.EmbeddingModel != name || vs.Dimensions != dims {
			return res, 0, nil, nil, fmt.Errorf("%w: vector store %s was built with %s (%d dims); this router embeds with %s (%d dims): search it on a router whose global.storage.embedding is that model, or build a new store from its files",
				ErrModelMismatch, vs.ID, vs.EmbeddingModel, vs.Dimensions, name, dims)
		}
		if !seen[vs.ID] {
			seen[vs.ID] = true
			res.StoreIDs = append(res.StoreIDs, vs.ID)
		}
	}
	return res, k, minScore, filter, nil
}

// embed embeds one text, memoising recent ones.
func (l *Library) embed(ctx context.Context, text string) ([]float32, error) {
	key := sha256.Sum256([]byte(text))
	if v, ok := l.queries.Get(key); ok {
		return v, nil
	}
	out, err := l.model.Embed(ctx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("embedding with %s: %w", l.model.Name(), err)
	}
	if len(out) != 1 || len(out[0]) == 0 {
		return nil, fmt.Errorf("embedding with %s: the model returned %d vectors for one text", l.model.Name(), len(out))
	}
	if d := l.model.Dimensions(); d > 0 && len(out[0]) != d {
		return nil, fmt.Errorf("%w: embedding with %s gave %d dimensions, not %d", storage.ErrDimension, l.model.Name(), len(out[0]), d)
	}
	l.queries.Add(key, out[0])
	return out[0], nil
}

// Invalidate drops cached results that searched storeID (its files or
// settings changed).
func (l *Library) Invalidate(storeID string) {
	if l.results != nil {
		l.results.invalidate(storeID)
		l.headers.invalidate()
	}
}

// findStore is the store's FindVectorStore (id or name), through the header
// cache when results are cached.
func (l *Library) findStore(ctx context.Context, idOrName string) (storage.VectorStore, error) {
	if l.headers == nil {
		return l.store.FindVectorStore(ctx, idOrName)
	}
	return l.headers.lookup(ctx, headerKey{name: idOrName}, l.store.FindVectorStore)
}

// getStore is the store's GetVectorStore (id only), through the header
// cache when results are cached.
func (l *Library) getStore(ctx context.Context, id string) (storage.VectorStore, error) {
	if l.headers == nil {
		return l.store.GetVectorStore(ctx, id)
	}
	return l.headers.lookup(ctx, headerKey{idOnly: true, name: id}, l.store.GetVectorStore)
}

// bound cuts s to at most n bytes at a character boundary.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
