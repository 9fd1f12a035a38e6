package respcache

import (
	"context"
	"hash/maphash"
	"sync"
)

// Embedder is what the routing signals and the plugin host embed with
// (engine/signal.Embedder and hostapi.Embedder both).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Method() string
}

// memoSize is how many single-text answers Memo keeps: enough for the
// requests in flight at once to find their routing signal's vector.
const memoSize = 64

// Memo is e keeping its last memoSize single-text answers, keyed by a
// seeded hash of the text (no text is retained): a request's embedding
// signal embeds the last user message, and the response cache's semantic
// lookup embeds the same text with the same model moments later (tens of
// microseconds a call with the default GloVe model); under Memo the second
// call is a map probe. Calls of several texts (a recipe's candidates, a
// file's chunks) go to e as they are. Errors are not kept.
func Memo(e Embedder) Embedder { return &memo{e: e, seed: maphash.MakeSeed()} }

type memo struct {
	e    Embedder
	seed maphash.Seed

	mu   sync.Mutex
	ring [memoSize]memoEntry
	next int
}

type memoEntry struct {
	key uint64
	n   int // the text's length, besides its hash
	vec []float32
}

func (m *memo) Method() string { return m.e.Method() }

// Unwrap is the memoised embedder.
func (m *memo) Unwrap() Embedder { return m.e }

func (m *memo) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) != 1 {
		return m.e.Embed(ctx, texts)
	}
	key, n := maphash.String(m.seed, texts[0]), len(texts[0])
	m.mu.Lock()
	for i := range m.ring {
		if e := &m.ring[i]; e.vec != nil && e.key == key && e.n == n {
			v := append([]float32(nil), e.vec...) // callers may keep or change theirs
			m.mu.Unlock()
			return [][]float32{v}, nil
		}
	}
	m.mu.Unlock()
	vs, err := m.e.Embed(ctx, texts)
	if err != nil || len(vs) != 1 {
		return vs, err
	}
	m.mu.Lock()
	m.ring[m.next] = memoEntry{key: key, n: n, vec: append([]float32(nil), vs[0]...)}
	m.next = (m.next + 1) % memoSize
	m.mu.Unlock()
	return vs, nil
}
