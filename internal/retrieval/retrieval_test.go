package retrieval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
	"github.com/junction-router/junction/recipes"
)

// countingModel is the router's embedding model, counting the texts it
// embeds.
type countingModel struct {
	embedding.Model
	texts atomic.Int64
}

func (m *countingModel) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	m.texts.Add(int64(len(texts)))
	return m.Model.Embed(ctx, texts)
}

type fixture struct {
	t     testing.TB
	ctx   context.Context
	store storage.Store
	model *countingModel
	kbs   map[string]recipes.KnowledgeBase
	lib   *Library
}

// newFixture opens a real SQLite store in a temporary directory and a
// library embedding with the router's hashed n-gram embedder.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	m, err := embedding.FromConfig(ctx, nil, signal.HashedEmbedder(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, store: st, model: &countingModel{Model: m}, kbs: map[string]recipes.KnowledgeBase{}}
	f.lib = New(Options{Store: st, Model: f.model, KnowledgeBase: func(name string) (recipes.KnowledgeBase, bool) {
		kb, ok := f.kbs[name]
		return kb, ok
	}})
	return f
}

// vectorStore creates a store built with the library's model.
func (f *fixture) vectorStore(name string) storage.VectorStore {
	f.t.Helper()
	vs, err := f.store.CreateVectorStore(f.ctx, storage.NewVectorStore{Name: name, EmbeddingModel: f.model.Name(), Dimensions: f.model.Dimensions()})
	if err != nil {
		f.t.Fatal(err)
	}
	return vs
}

// addFile uploads a file and stores one chunk per passage in vs, embedded
// with the model (as ingestion does), with attrs.
func (f *fixture) addFile(vs storage.VectorStore, filename string, attrs map[string]any, passages ...string) storage.File {
	f.t.Helper()
	file, err := f.store.CreateFile(f.ctx, storage.NewFile{Filename: filename, Purpose: "assistants", MediaType: "text/markdown"},
		strings.NewReader(strings.Join(passages, "\n\n")), 0)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.store.AttachFile(f.ctx, vs.ID, file.ID, attrs, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}); err != nil {
		f.t.Fatal(err)
	}
	vecs, err := f.model.Model.Embed(f.ctx, passages)
	if err != nil {
		f.t.Fatal(err)
	}
	chunks := make([]storage.Chunk, len(passages))
	for i, p := range passages {
		chunks[i] = storage.Chunk{Index: i, Text: p, Tokens: len(strings.Fields(p)), Vector: vecs[i]}
	}
	if err := f.store.CompleteFile(f.ctx, vs.ID, file.ID, chunks); err != nil {
		f.t.Fatal(err)
	}
	return file
}

const (
	tides    = "Tides are caused by the gravitational pull of the moon and the sun on the oceans."
	volcano  = "A volcano erupts when molten rock called magma rises through the crust."
	espresso = "Espresso is brewed by forcing hot water through finely ground coffee beans."
)

func (f *fixture) search(q Query) Result {
	f.t.Helper()
	res, err := f.lib.Search(f.ctx, q)
	if err != nil {
		f.t.Fatalf("search %+v: %v", q, err)
	}
	return res
}

func TestSearchByIDAndName(t *testing.T) {
	f := newFixture(t)
	vs := f.vectorStore("science")
	file := f.addFile(vs, "science.md", map[string]any{"topic": "earth"}, tides, volcano, espresso)
	for _, src := range []string{vs.ID, "science"} {
		res := f.search(Query{Source: src, Text: "why do ocean tides happen? the moon", K: 2, Fresh: true})
		if len(res.Hits) != 2 || res.Hits[0].Text != tides {
			t.Fatalf("source %s: hits %+v", src, res.Hits)
		}
		h := res.Hits[0]
		if h.VectorStoreID != vs.ID || h.FileID != file.ID || h.Filename != "science.md" || h.ChunkIndex != 0 || h.Attributes["topic"] != "earth" {
			t.Errorf("hit %+v", h)
		}
		if res.Hits[0].Score < res.Hits[1].Score {
			t.Errorf("hits not best first: %v, %v", res.Hits[0].Score, res.Hits[1].Score)
		}
		if len(res.StoreIDs) != 1 || res.StoreIDs[0] != vs.ID || res.KnowledgeBase != "" {
			t.Errorf("resolved %+v", res)
		}
	}
	// StoreIDs instead of a source, by id or name; the default k.
	res := f.search(Query{StoreIDs: []string{"science"}, Text: "magma and the crust"})
	if len(res.Hits) != 3 || res.Hits[0].Text != volcano {
		t.Errorf("store ids: %+v", res.Hits)
	}
	min := float32(0.99)
	if res := f.search(Query{Source: vs.ID, Text: "magma and the crust", MinScore: &min}); len(res.Hits) != 0 {
		t.Errorf("min score 0.99 kept %+v", res.Hits)
	}
	other := f.vectorStore("other")
	f.addFile(other, "other.md", map[string]any{"topic": "kitchen"}, espresso)
	filter, err := storage.ParseFilter([]byte(`{"type":"eq","key":"topic","value":"kitchen"}`))
	if err != nil {
		t.Fatal(err)
	}
	res = f.search(Query{StoreIDs: []string{vs.ID, other.ID}, Text: "coffee", Filter: filter})
	if len(res.Hits) != 1 || res.Hits[0].VectorStoreID != other.ID {
		t.Errorf("filtered across two stores: %+v", res.Hits)
	}
}

func TestKnowledgeBase(t *testing.T) {
	f := newFixture(t)
	a, b := f.vectorStore("a"), f.vectorStore("b")
	f.addFile(a, "a.md", map[string]any{"lang": "en"}, tides, volcano)
	f.addFile(b, "b.md", map[string]any{"lang": "it"}, espresso)
	f.kbs["handbook"] = recipes.KnowledgeBase{Name: "handbook", VectorStores: []string{a.ID, b.ID}, TopK: 1,
		Filters: json.RawMessage(`{"type":"in","key":"lang","value":["en","it"]}`)}
	res := f.search(Query{Source: "handbook", Text: "coffee beans and hot water"})
	if res.KnowledgeBase != "handbook" || len(res.StoreIDs) != 2 || len(res.Hits) != 1 || res.Hits[0].Text != espresso {
		t.Fatalf("knowledge base: %+v", res)
	}
	// The query's own settings win over the base's.
	res = f.search(Query{Source: "handbook", Text: "coffee beans and hot water", K: 3})
	if len(res.Hits) != 3 {
		t.Errorf("k 3 over top_k 1: %d hits", len(res.Hits))
	}
	onlyEN, _ := storage.ParseFilter([]byte(`{"type":"eq","key":"lang","value":"en"}`))
	res = f.search(Query{Source: "handbook", Text: "coffee beans and hot water", K: 3, Filter: onlyEN})
	for _, h := range res.Hits {
		if h.VectorStoreID != a.ID {
			t.Errorf("the query's filter did not replace the base's: %+v", h)
		}
	}
	// The base's min_score applies unless the query sets one.
	f.kbs["strict"] = recipes.KnowledgeBase{Name: "strict", VectorStores: []string{a.ID}, TopK: 5, MinScore: 0.999}
	if res := f.search(Query{Source: "strict", Text: "coffee"}); len(res.Hits) != 0 {
		t.Errorf("min_score 0.999 kept %+v", res.Hits)
	}
	zero := float32(-1)
	if res := f.search(Query{Source: "strict", Text: "coffee", MinScore: &zero}); len(res.Hits) != 2 {
		t.Errorf("query min_score -1: %d hits", len(res.Hits))
	}
	// A vector store named like a knowledge base wins.
	f.kbs["a"] = recipes.KnowledgeBase{Name: "a", VectorStores: []string{b.ID}}
	if res := f.search(Query{Source: "a", Text: "coffee"}); res.KnowledgeBase != "" || res.StoreIDs[0] != a.ID {
		t.Errorf("store name vs base name: %+v", res)
	}
	// A base naming a store that is gone says which.
	f.kbs["broken"] = recipes.KnowledgeBase{Name: "broken", VectorStores: []string{"vs_gone"}}
	_, err := f.lib.Search(f.ctx, Query{Source: "broken", Text: "x"})
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), `"vs_gone"`) || !strings.Contains(err.Error(), `"broken"`) {
		t.Errorf("broken base: %v", err)
	}
}

func TestSearchRefuses(t *testing.T) {
	f := newFixture(t)
	vs := f.vectorStore("docs")
	for name, q := range map[string]Query{
		"empty text":  {Source: vs.ID, Text: "  "},
		"no source":   {Text: "x"},
		"both":        {Source: vs.ID, StoreIDs: []string{vs.ID}, Text: "x"},
		"k too large": {Source: vs.ID, Text: "x", K: MaxK + 1},
		"negative k":  {Source: vs.ID, Text: "x", K: -1},
		"bad filter":  {Source: vs.ID, Text: "x", Filter: &storage.Filter{Type: "like"}},
		"min score":   {Source: vs.ID, Text: "x", MinScore: ptr(float32(1.5))},
		"NaN score":   {Source: vs.ID, Text: "x", MinScore: ptr(float32(math.NaN()))},
	} {
		if _, err := f.lib.Search(f.ctx, q); !errors.Is(err, storage.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := f.lib.Search(f.ctx, Query{Source: "nowhere", Text: "x"})
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), `"nowhere"`) {
		t.Errorf("unknown source: %v", err)
	}
	_, err = f.lib.Retriever().Retrieve(f.ctx, hostapi.RetrieveQuery{Source: "nowhere", Text: "x"})
	if !errors.Is(err, hostapi.ErrNoSuchStore) {
		t.Errorf("retrieve from an unknown source: %v", err)
	}
	if _, err := f.lib.Retriever().Retrieve(f.ctx, hostapi.RetrieveQuery{Source: vs.ID, Text: "x", K: MaxK + 1}); !errors.Is(err, hostapi.ErrInvalidQuery) {
		t.Errorf("retrieve with k out of range: %v", err)
	}
	if _, err := f.lib.Retriever().Retrieve(f.ctx, hostapi.RetrieveQuery{Source: vs.ID, Text: "x", Filter: []byte(`{"type":`)}); !errors.Is(err, storage.ErrInvalid) || !errors.Is(err, hostapi.ErrInvalidQuery) {
		t.Errorf("retrieve with a malformed filter: %v", err)
	}
}

func TestModelMismatch(t *testing.T) {
	f := newFixture(t)
	vs, err := f.store.CreateVectorStore(f.ctx, storage.NewVectorStore{Name: "foreign", EmbeddingModel: "openai:https://api.openai.com/v1/text-embedding-3-small", Dimensions: 1536})
	if err != nil {
		t.Fatal(err)
	}
	mine := f.vectorStore("mine")
	f.kbs["mixed"] = recipes.KnowledgeBase{Name: "mixed", VectorStores: []string{mine.ID, vs.ID}}
	for _, src := range []string{vs.ID, "foreign", "mixed"} {
		_, err = f.lib.Search(f.ctx, Query{Source: src, Text: "anything"})
		want := fmt.Sprintf("vector store %s was built with openai:https://api.openai.com/v1/text-embedding-3-small (1536 dims); this router embeds with %s (%d dims)",
			vs.ID, f.model.Name(), f.model.Dimensions())
		if !errors.Is(err, ErrModelMismatch) || !strings.Contains(err.Error(), want) {
			t.Errorf("source %s: %v\nwant it to say %q", src, err, want)
		}
	}
	// Same name, another dimension.
	dim, err := f.store.CreateVectorStore(f.ctx, storage.NewVectorStore{Name: "dim", EmbeddingModel: f.model.Name(), Dimensions: f.model.Dimensions() + 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.lib.Search(f.ctx, Query{Source: dim.ID, Text: "anything"}); !errors.Is(err, ErrModelMismatch) {
		t.Errorf("another dimension: %v", err)
	}
	if f.model.texts.Load() != 0 {
		t.Errorf("a refused search embedded %d texts", f.model.texts.Load())
	}
}

func TestResultCache(t *testing.T) {
	f := newFixture(t)
	clock := time.Unix(1_700_000_000, 0)
	f.lib.now = func() time.Time { return clock }
	vs := f.vectorStore("docs")
	f.addFile(vs, "one.md", nil, tides, volcano)
	q := Query{Source: "docs", Text: "coffee beans", K: 3}

	// Fresh neither reads nor writes the cache.
	if res := f.search(Query{Source: "docs", Text: "coffee beans", K: 3, Fresh: true}); res.Cached || len(res.Hits) != 2 {
		t.Fatalf("fresh: %+v", res)
	}
	first := f.search(q)
	if first.Cached {
		t.Fatal("a fresh search left a cached result")
	}
	again := f.search(q)
	if !again.Cached || len(again.Hits) != 2 || !reflect.DeepEqual(again.Hits, first.Hits) {
		t.Fatalf("second search not served from the cache: %+v", again)
	}
	// The query was embedded once for three searches.
	if n := f.model.texts.Load(); n != 1 {
		t.Errorf("embedded the query %d times", n)
	}
	// Another k, min score or filter is another entry.
	if f.search(Query{Source: "docs", Text: "coffee beans", K: 2}).Cached {
		t.Error("k 2 served k 3's result")
	}
	// New content is not seen until the store is invalidated...
	f.addFile(vs, "two.md", nil, espresso)
	if res := f.search(q); !res.Cached || len(res.Hits) != 2 {
		t.Fatalf("before Invalidate: %+v", res)
	}
	f.lib.Invalidate("vs_someother")
	if res := f.search(q); !res.Cached {
		t.Fatal("invalidating another store dropped this entry")
	}
	f.lib.Invalidate(vs.ID)
	res := f.search(q)
	if res.Cached || len(res.Hits) != 3 || res.Hits[0].Text != espresso {
		t.Fatalf("after Invalidate: %+v", res)
	}
	// ...and entries expire.
	if !f.search(q).Cached {
		t.Fatal("not cached again")
	}
	clock = clock.Add(defaultCacheTTL + time.Second)
	if f.search(q).Cached {
		t.Fatal("served after its TTL")
	}
	// A cached result is the caller's to change.
	res = f.search(q)
	res.Hits[0].Text = "changed"
	if f.search(q).Hits[0].Text != espresso {
		t.Error("a caller's change reached the cache")
	}
}

// An invalidation while a search runs is never undone by that search's
// result: it is cached as stale.
func TestInvalidateDuringSearch(t *testing.T) {
	f := newFixture(t)
	vs := f.vectorStore("docs")
	f.addFile(vs, "one.md", nil, tides)
	c := f.lib.results
	stores := []string{vs.ID}
	key := cacheKey(stores, "q", 5, nil, nil)
	gens := c.generations(stores)
	f.lib.Invalidate(vs.ID) // lands while the search runs
	c.put(key, stores, gens, []storage.Hit{{Text: "old"}}, time.Now())
	if _, ok := c.get(key, stores, time.Now()); ok {
		t.Fatal("a result begun before Invalidate was served after it")
	}
}

func TestNoCache(t *testing.T) {
	f := newFixture(t)
	lib := New(Options{Store: f.store, Model: f.model, CacheEntries: -1})
	vs := f.vectorStore("docs")
	f.addFile(vs, "one.md", nil, tides)
	for range 2 {
		if res, err := lib.Search(f.ctx, Query{Source: vs.ID, Text: "tides"}); err != nil || res.Cached {
			t.Fatalf("%+v %v", res, err)
		}
	}
	lib.Invalidate(vs.ID) // no cache: nothing to do
}

func TestRetrieverPayload(t *testing.T) {
	f := newFixture(t)
	vs := f.vectorStore("docs")
	file := f.addFile(vs, "guide.md", map[string]any{"year": 2024.0, "public": true}, tides, volcano)
	hits, err := f.lib.Retriever().Retrieve(f.ctx, hostapi.RetrieveQuery{Source: "docs", Text: "the moon pulls the ocean", K: 1, Fresh: true,
		Filter: []byte(`{"type":"gte","key":"year","value":2020}`)})
	if err != nil || len(hits) != 1 {
		t.Fatalf("%+v %v", hits, err)
	}
	var p map[string]any
	if err := json.Unmarshal(hits[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"text": tides, "source": "guide.md", "file_id": file.ID, "vector_store_id": vs.ID, "chunk_index": 0.0,
		"attributes": map[string]any{"year": 2024.0, "public": true}}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("payload %v\nwant    %v", p, want)
	}
	if hits[0].ID != vs.ID+"/"+file.ID+"#0" || hits[0].Score <= 0 {
		t.Errorf("hit %s %v", hits[0].ID, hits[0].Score)
	}
	// min_score through the adapter.
	hits, err = f.lib.Retriever().Retrieve(f.ctx, hostapi.RetrieveQuery{Source: "docs", Text: "the moon pulls the ocean", MinScore: 0.999, HasMinScore: true})
	if err != nil || len(hits) != 0 {
		t.Errorf("min score: %+v %v", hits, err)
	}
}

func TestMemories(t *testing.T) {
	f := newFixture(t)
	m, created, err := f.lib.Remember(f.ctx, "user:ada", "  Ada prefers answers in French.  ")
	if err != nil || !created || m.Text != "Ada prefers answers in French." || m.Scope != "user:ada" || m.EmbeddingModel != f.model.Name() {
		t.Fatalf("%+v %v %v", m, created, err)
	}
	again, created, err := f.lib.Remember(f.ctx, "user:ada", "ada prefers answers in french.")
	if err != nil || created || again.ID != m.ID {
		t.Errorf("the same memory twice: %+v %v %v", again, created, err)
	}
	if _, _, err := f.lib.Remember(f.ctx, "user:ada", "Ada's cat is called Turing."); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.lib.Remember(f.ctx, "user:bob", "Bob prefers answers in French."); err != nil {
		t.Fatal(err)
	}
	hits, err := f.lib.Recall(f.ctx, "user:ada", "which language should answers be in? French", 1, 0)
	if err != nil || len(hits) != 1 || hits[0].ID != m.ID {
		t.Fatalf("recall: %+v %v", hits, err)
	}
	hits, err = f.lib.Recall(f.ctx, "user:ada", "anything", 0, -1)
	if err != nil || len(hits) != 2 {
		t.Errorf("recall every memory of a scope: %+v %v", hits, err)
	}
	for _, h := range hits {
		if h.Scope != "user:ada" {
			t.Errorf("recalled another scope's memory: %+v", h)
		}
	}
	for name, err := range map[string]error{
		"empty text":  second(f.lib.Remember(f.ctx, "user:ada", " \n\t")),
		"long text":   second(f.lib.Remember(f.ctx, "user:ada", strings.Repeat("x", MaxMemoryBytes+1))),
		"empty scope": second(f.lib.Remember(f.ctx, "", "x")),
		"long scope":  second(f.lib.Remember(f.ctx, strings.Repeat("s", MaxScopeBytes+1), "x")),
		"recall k":    err2(f.lib.Recall(f.ctx, "user:ada", "x", MaxRecall+1, 0)),
		"recall text": err2(f.lib.Recall(f.ctx, "user:ada", "", 1, 0)),
		"recall min":  err2(f.lib.Recall(f.ctx, "user:ada", "x", 1, float32(math.NaN()))),
	} {
		if !errors.Is(err, storage.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}

	// The adapter: payload {"id","text","created_at"}.
	mem := f.lib.Memory()
	if err := mem.Remember(f.ctx, "user:eve", "Eve works night shifts."); err != nil {
		t.Fatal(err)
	}
	vh, err := mem.Recall(f.ctx, "user:eve", "when does Eve work?", 3, 0)
	if err != nil || len(vh) != 1 {
		t.Fatalf("%+v %v", vh, err)
	}
	var p struct {
		ID        string `json:"id"`
		Text      string `json:"text"`
		CreatedAt int64  `json:"created_at"`
	}
	if err := json.Unmarshal(vh[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.ID != vh[0].ID || !strings.HasPrefix(p.ID, "mem_") || p.Text != "Eve works night shifts." || time.Since(time.Unix(p.CreatedAt, 0)) > time.Minute {
		t.Errorf("payload %s", vh[0].Payload)
	}
	if err := mem.Remember(f.ctx, "user:eve", ""); !errors.Is(err, hostapi.ErrInvalidQuery) {
		t.Errorf("adapter remembered an empty text: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func second[T any](_ T, _ bool, err error) error { return err }
func err2[T any](_ T, err error) error           { return err }

// Searches, invalidations and memories at once (run with -race).
func TestConcurrentUse(t *testing.T) {
	f := newFixture(t)
	vs := f.vectorStore("docs")
	f.addFile(vs, "one.md", nil, tides, volcano, espresso)
	texts := []string{"tides", "magma", "coffee", "moon"}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 40 {
				switch {
				case j%10 == 0:
					f.lib.Invalidate(vs.ID)
				case j%7 == 0:
					if _, _, err := f.lib.Remember(f.ctx, fmt.Sprintf("u%d", i), fmt.Sprintf("fact %d", j)); err != nil {
						t.Error(err)
					}
				default:
					res, err := f.lib.Search(f.ctx, Query{Source: "docs", Text: texts[(i+j)%len(texts)], K: 2})
					if err != nil || len(res.Hits) != 2 {
						t.Errorf("%+v %v", res, err)
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestBound(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"abc", 5, "abc"}, {"abcdef", 3, "abc"}, {"aé", 2, "a"}, {"aé", 3, "aé"}, {"日本", 4, "日"}} {
		if got := bound(c.in, c.n); got != c.want {
			t.Errorf("bound(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// TestHeadersFollowInvalidate: a search resolves its source from the header
// cache, and a rename, a delete or a new store (each followed by Invalidate,
// as the management API and ingestion do) is seen by the next search.
func TestHeadersFollowInvalidate(t *testing.T) {
	f := newFixture(t)
	q := func(src string) error {
		_, err := f.lib.Search(f.ctx, Query{Source: src, Text: "tides and the moon", K: 1})
		return err
	}
	if err := q("ocean"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("before the store exists: %v, want not found", err)
	}
	vs := f.vectorStore("ocean")
	f.addFile(vs, "tides.md", nil, tides)
	if err := q("ocean"); !errors.Is(err, storage.ErrNotFound) {
		// Not yet invalidated: the cached "not found" still answers, which is
		// what makes the next step's check meaningful.
		t.Fatalf("cached not-found before Invalidate: %v", err)
	}
	f.lib.Invalidate(vs.ID)
	if err := q("ocean"); err != nil {
		t.Fatalf("after create + Invalidate: %v", err)
	}
	if _, err := f.store.UpdateVectorStore(f.ctx, vs.ID, storage.VectorStoreUpdate{Name: ptr("sea")}); err != nil {
		t.Fatal(err)
	}
	f.lib.Invalidate(vs.ID)
	if err := q("ocean"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("old name after rename: %v, want not found", err)
	}
	if err := q("sea"); err != nil {
		t.Fatalf("new name after rename: %v", err)
	}
	f.kbs["kb"] = recipes.KnowledgeBase{Name: "kb", VectorStores: []string{vs.ID}}
	if err := q("kb"); err != nil {
		t.Fatalf("knowledge base: %v", err)
	}
	if err := f.store.DeleteVectorStore(f.ctx, vs.ID); err != nil {
		t.Fatal(err)
	}
	f.lib.Invalidate(vs.ID)
	if err := q("sea"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after delete: %v, want not found", err)
	}
	if err := q("kb"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("knowledge base naming a deleted store: %v, want not found", err)
	}
}
