package mgmt_test

import (
	"context"
	"sync"

	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/retrieval"
	"github.com/junction-router/junction/internal/storage"
)

// A stand-in for the retrieval library until internal/retrieval lands on
// main (then the tests use the real one and this file goes).

type standinLibrary struct {
	store storage.Store
	model embedding.Model
	mu    sync.Mutex
	inval map[string]int
}

func (l *standinLibrary) Search(ctx context.Context, q retrieval.Query) (retrieval.Result, error) {
	v, err := l.model.Embed(ctx, []string{q.Text})
	if err != nil {
		return retrieval.Result{}, err
	}
	sq := storage.Query{StoreIDs: q.StoreIDs, Vector: v[0], K: q.K, Filter: q.Filter}
	if q.MinScore != nil {
		sq.MinScore, sq.HasMinScore = *q.MinScore, true
	}
	hits, err := l.store.Search(ctx, sq)
	return retrieval.Result{Hits: hits, StoreIDs: q.StoreIDs}, err
}

func (l *standinLibrary) Invalidate(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inval == nil {
		l.inval = map[string]int{}
	}
	l.inval[id]++
}

func (l *standinLibrary) invalidations(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inval[id]
}

func (l *standinLibrary) Model() embedding.Model { return l.model }

