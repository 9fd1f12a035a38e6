package mgmt_test

import (
	"context"
	"io"
	"strings"
	"sync"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/retrieval"
	"github.com/junction-router/junction/internal/storage"
)

// Stand-ins for the ingestion pipeline and the retrieval library until
// internal/ingest and internal/retrieval land on main (then the tests use
// the real ones and this file goes).

type hashedModel struct {
	e    signal.Embedder
	dims int
}

func (m hashedModel) Name() string    { return "router:" + m.e.Method() }
func (m hashedModel) Dimensions() int { return m.dims }
func (m hashedModel) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return m.e.Embed(ctx, texts)
}

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

type standinIngest struct {
	store storage.Store
	model embedding.Model
	wg    sync.WaitGroup
}

func (p *standinIngest) Submit(storeID, fileID string) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx := context.Background()
		rc, _, err := p.store.OpenFile(ctx, fileID)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		var chunks []storage.Chunk
		for i, part := range strings.Split(string(b), "\n\n") {
			v, err := p.model.Embed(ctx, []string{part})
			if err != nil {
				_ = p.store.FailFile(ctx, storeID, fileID, "embedding_error", err.Error())
				return
			}
			chunks = append(chunks, storage.Chunk{Index: i, Text: part, Tokens: len(strings.Fields(part)), Vector: v[0]})
		}
		_ = p.store.CompleteFile(ctx, storeID, fileID, chunks)
	}()
}

func (p *standinIngest) Idle(context.Context) error { p.wg.Wait(); return nil }

func newCollaborators(st storage.Store) (*standinIngest, *standinLibrary) {
	e := signal.HashedEmbedder()
	v, _ := e.Embed(context.Background(), []string{"x"})
	m := hashedModel{e: e, dims: len(v[0])}
	return &standinIngest{store: st, model: m}, &standinLibrary{store: st, model: m}
}
