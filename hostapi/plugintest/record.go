package plugintest

import (
	"context"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
)

// wrap makes every backend count its calls.
func (r *recorder) wrap(b hostapi.Backends) hostapi.Backends {
	if b.Embedder != nil {
		b.Embedder = recEmbedder{r, b.Embedder}
	}
	if b.Classifier != nil {
		b.Classifier = recClassifier{r, b.Classifier}
	}
	if b.Cache != nil {
		b.Cache = recCache{r, b.Cache}
	}
	if b.Vectors != nil {
		b.Vectors = recVectors{r, b.Vectors}
	}
	if b.Retriever != nil {
		b.Retriever = recRetriever{r, b.Retriever}
	}
	if b.Memory != nil {
		b.Memory = recMemory{r, b.Memory}
	}
	return b
}

type recEmbedder struct {
	r *recorder
	e hostapi.Embedder
}

func (x recEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	x.r.add(abi.ImportEmbed)
	return x.e.Embed(ctx, texts)
}

type recClassifier struct {
	r *recorder
	c hostapi.Classifier
}

func (x recClassifier) Classify(ctx context.Context, binding, text string) ([]abi.Class, error) {
	x.r.add(abi.ImportClassify)
	return x.c.Classify(ctx, binding, text)
}

type recCache struct {
	r *recorder
	c hostapi.Cache
}

func (x recCache) Lookup(ctx context.Context, ns, key string, emb []float32, th float32) (abi.CacheEntry, bool, error) {
	x.r.add(abi.ImportCacheLookup)
	return x.c.Lookup(ctx, ns, key, emb, th)
}

func (x recCache) Store(ctx context.Context, ns, key string, value []byte, ttl time.Duration, emb []float32) error {
	x.r.add(abi.ImportCacheStore)
	return x.c.Store(ctx, ns, key, value, ttl, emb)
}

type recVectors struct {
	r *recorder
	v hostapi.VectorStores
}

func (x recVectors) Search(ctx context.Context, store string, q []float32, k int) ([]abi.VectorHit, error) {
	x.r.add(abi.ImportVectorSearch)
	return x.v.Search(ctx, store, q, k)
}

type recRetriever struct {
	r   *recorder
	ret hostapi.Retriever
}

func (x recRetriever) Retrieve(ctx context.Context, q hostapi.RetrieveQuery) ([]abi.VectorHit, error) {
	x.r.add(abi.ImportRetrieve)
	if q.Fresh {
		x.r.mu.Lock()
		x.r.fresh++
		x.r.mu.Unlock()
	}
	return x.ret.Retrieve(ctx, q)
}

type recMemory struct {
	r *recorder
	m hostapi.Memory
}

func (x recMemory) Recall(ctx context.Context, scope, text string, k int, minScore float32) ([]abi.VectorHit, error) {
	x.r.add(abi.ImportMemoryRecall)
	return x.m.Recall(ctx, scope, text, k, minScore)
}

func (x recMemory) Remember(ctx context.Context, scope, text string) error {
	x.r.add(abi.ImportMemoryRemember)
	return x.m.Remember(ctx, scope, text)
}
