package retrieval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/storage"
)

// Retriever adapts the library to the plugin host's retrieve function.
func (l *Library) Retriever() hostapi.Retriever { return retriever{l} }

// Memory adapts the library to the plugin host's memory_recall and
// memory_remember functions.
func (l *Library) Memory() hostapi.Memory { return memory{l} }

type retriever struct{ l *Library }

// Retrieve implements hostapi.Retriever. A hit's ID is
// "<vector store id>/<file id>#<chunk index>".
func (r retriever) Retrieve(ctx context.Context, q hostapi.RetrieveQuery) ([]abi.VectorHit, error) {
	sq := Query{Source: q.Source, Text: q.Text, K: q.K, Fresh: q.Fresh}
	if q.HasMinScore {
		ms := q.MinScore
		sq.MinScore = &ms
	}
	if len(q.Filter) > 0 {
		f, err := storage.ParseFilter(q.Filter)
		if err != nil {
			return nil, hostError(err)
		}
		sq.Filter = f
	}
	res, err := r.l.Search(ctx, sq)
	if err != nil {
		return nil, hostError(err)
	}
	out := make([]abi.VectorHit, len(res.Hits))
	for i, h := range res.Hits {
		attrs := h.Attributes
		if attrs == nil {
			attrs = map[string]any{}
		}
		p, err := json.Marshal(hostapi.Passage{Text: h.Text, Source: h.Filename, FileID: h.FileID, VectorStoreID: h.VectorStoreID,
			ChunkIndex: h.ChunkIndex, Attributes: attrs})
		if err != nil {
			return nil, fmt.Errorf("vector store %s, file %s: attributes: %w", h.VectorStoreID, h.FileID, err)
		}
		out[i] = abi.VectorHit{ID: h.VectorStoreID + "/" + h.FileID + "#" + strconv.Itoa(h.ChunkIndex), Score: h.Score, Payload: p}
	}
	return out, nil
}

type memory struct{ l *Library }

// Recall implements hostapi.Memory.
func (m memory) Recall(ctx context.Context, scope, text string, k int, minScore float32) ([]abi.VectorHit, error) {
	hits, err := m.l.Recall(ctx, scope, text, k, minScore)
	if err != nil {
		return nil, hostError(err)
	}
	out := make([]abi.VectorHit, len(hits))
	for i, h := range hits {
		p, _ := json.Marshal(hostapi.Recalled{ID: h.ID, Text: h.Text, CreatedAt: h.CreatedAt.Unix()}) // strings and a number
		out[i] = abi.VectorHit{ID: h.ID, Score: h.Score, Payload: p}
	}
	return out, nil
}

// Remember implements hostapi.Memory.
func (m memory) Remember(ctx context.Context, scope, text string) error {
	_, _, err := m.l.Remember(ctx, scope, text)
	return hostError(err)
}

// hostError wraps the host's errors around the library's: an unknown source
// is hostapi.ErrNoSuchStore, a refused argument hostapi.ErrInvalidQuery.
func hostError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return fmt.Errorf("%w: %w", hostapi.ErrNoSuchStore, err)
	case errors.Is(err, storage.ErrInvalid):
		return fmt.Errorf("%w: %w", hostapi.ErrInvalidQuery, err)
	}
	return err
}
