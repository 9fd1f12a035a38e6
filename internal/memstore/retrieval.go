package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/storage"
)

// DefaultRetrieveK is the number of hits a retrieve asks for when it gives
// no k.
const DefaultRetrieveK = 5

// Retriever searches Vectors by text: it embeds the query with Embedder and
// searches the store named by the query's source (a store's name; there are
// no knowledge bases in memory). A filter is matched against the
// "attributes" object of each item's JSON payload (an item whose payload has
// none has no attributes). It keeps no result cache, so Fresh changes
// nothing. It backs retrieve in tests and in `junction plugin` commands.
type Retriever struct {
	Vectors  *Vectors
	Embedder hostapi.Embedder
}

var _ hostapi.Retriever = (*Retriever)(nil)

// Retrieve implements hostapi.Retriever.
func (r *Retriever) Retrieve(ctx context.Context, q hostapi.RetrieveQuery) ([]abi.VectorHit, error) {
	var filter *storage.Filter
	if len(q.Filter) > 0 {
		f, err := storage.ParseFilter(q.Filter)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", hostapi.ErrInvalidQuery, err)
		}
		filter = f
	}
	size, ok := r.Vectors.size(q.Source)
	if !ok {
		return nil, fmt.Errorf("%w: %s", hostapi.ErrNoSuchStore, q.Source)
	}
	k := q.K
	if k <= 0 {
		k = DefaultRetrieveK
	}
	vecs, err := r.Embedder.Embed(ctx, []string{q.Text})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 1 {
		return nil, errors.New("the embedder gave no vector for the query")
	}
	hits, err := r.Vectors.Search(ctx, q.Source, vecs[0], max(size, 1))
	if err != nil {
		return nil, err
	}
	out := hits[:0]
	for _, h := range hits {
		if q.HasMinScore && h.Score < q.MinScore {
			break // best first: the rest score lower
		}
		if filter != nil && !filter.Match(attributes(h.Payload)) {
			continue
		}
		out = append(out, h)
		if len(out) == k {
			break
		}
	}
	return out, nil
}

func attributes(payload []byte) map[string]any {
	var doc struct {
		Attributes map[string]any `json:"attributes"`
	}
	if len(payload) == 0 || payload[0] != '{' || json.Unmarshal(payload, &doc) != nil {
		return nil
	}
	return doc.Attributes
}

// size is the number of items in a store; ok is false when there is none.
func (v *Vectors) size(store string) (int, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	s, ok := v.stores[store]
	return len(s), ok
}

// Memory keeps memories per scope in memory, embedded with Embedder and
// recalled by cosine similarity. The same text (after trimming and case
// folding) is kept once per scope; past MaxPerScope the oldest is dropped.
// It backs memory_recall and memory_remember in tests and in `junction
// plugin` commands.
type Memory struct {
	Embedder    hostapi.Embedder
	MaxPerScope int // default 1,000
	MaxText     int // bytes per memory; default 4 KiB
	Now         func() time.Time

	mu     sync.Mutex
	seq    int
	scopes map[string][]memory
}

type memory struct {
	id      string
	text    string
	created time.Time
	vec     []float32
}

var _ hostapi.Memory = (*Memory)(nil)

// NewMemory returns an empty Memory embedding with e.
func NewMemory(e hostapi.Embedder) *Memory { return &Memory{Embedder: e} }

// Remember implements hostapi.Memory.
func (m *Memory) Remember(ctx context.Context, scope, text string) error {
	text = strings.TrimSpace(text)
	maxText := m.MaxText
	if maxText <= 0 {
		maxText = 4 << 10
	}
	switch {
	case scope == "" || text == "":
		return errors.New("a memory needs a scope and a text")
	case len(text) > maxText:
		return fmt.Errorf("a memory of %d bytes is over the limit of %d", len(text), maxText)
	}
	vecs, err := m.Embedder.Embed(ctx, []string{text})
	if err != nil {
		return err
	}
	if len(vecs) != 1 {
		return errors.New("the embedder gave no vector for the memory")
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.scopes[scope] {
		if strings.EqualFold(x.text, text) {
			return nil
		}
	}
	if m.scopes == nil {
		m.scopes = make(map[string][]memory)
	}
	m.seq++
	list := append(m.scopes[scope], memory{id: "mem_" + strconv.Itoa(m.seq), text: text, created: now(), vec: vecs[0]})
	maxN := m.MaxPerScope
	if maxN <= 0 {
		maxN = 1000
	}
	if len(list) > maxN {
		list = append(list[:0:0], list[len(list)-maxN:]...)
	}
	m.scopes[scope] = list
	return nil
}

// Recall implements hostapi.Memory. Payloads are JSON {"id", "text",
// "created_at" (Unix seconds)}.
func (m *Memory) Recall(ctx context.Context, scope, text string, k int, minScore float32) ([]abi.VectorHit, error) {
	m.mu.Lock()
	list := append([]memory(nil), m.scopes[scope]...)
	m.mu.Unlock()
	if len(list) == 0 || k <= 0 {
		return nil, nil
	}
	vecs, err := m.Embedder.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 1 {
		return nil, errors.New("the embedder gave no vector for the query")
	}
	var hits []abi.VectorHit
	for _, x := range list {
		if len(x.vec) != len(vecs[0]) {
			continue
		}
		s := cosine(x.vec, vecs[0])
		if s < minScore {
			continue
		}
		payload, _ := json.Marshal(hostapi.Recalled{ID: x.id, Text: x.text, CreatedAt: x.created.Unix()})
		hits = append(hits, abi.VectorHit{ID: x.id, Score: s, Payload: payload})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// Texts lists the memories of scope, oldest first.
func (m *Memory) Texts(scope string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, len(m.scopes[scope]))
	for i, x := range m.scopes[scope] {
		out[i] = x.text
	}
	return out
}

// Chunk is a piece of text Add puts into a store, with what a retrieve hit's
// payload says about it.
type Chunk struct {
	ID         string // the item's id; default "<file_id>:<chunk_index>"
	Text       string
	Source     string // the file's name
	FileID     string
	ChunkIndex int
	Attributes map[string]any
}

// Add embeds c.Text and puts it into store (created when missing) with the
// payload a retrieve hit carries: JSON {"text", "source", "file_id",
// "vector_store_id", "chunk_index", "attributes"}.
func (r *Retriever) Add(ctx context.Context, store string, c Chunk) error {
	if strings.TrimSpace(c.Text) == "" {
		return errors.New("a chunk needs a text")
	}
	vecs, err := r.Embedder.Embed(ctx, []string{c.Text})
	if err != nil {
		return err
	}
	if len(vecs) != 1 {
		return errors.New("the embedder gave no vector for the chunk")
	}
	attrs := c.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	payload, err := json.Marshal(hostapi.Passage{Text: c.Text, Source: c.Source, FileID: c.FileID, VectorStoreID: store,
		ChunkIndex: c.ChunkIndex, Attributes: attrs})
	if err != nil {
		return fmt.Errorf("the chunk's attributes: %w", err)
	}
	id := c.ID
	if id == "" {
		id = c.FileID + ":" + strconv.Itoa(c.ChunkIndex)
	}
	return r.Vectors.Upsert(store, id, vecs[0], payload)
}
