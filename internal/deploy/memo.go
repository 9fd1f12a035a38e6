package deploy

import (
	"context"
	"strings"
	"sync"

	"github.com/junction-router/junction/engine/signal"
)

// Bounds of an embedMemo: a request's texts are found again within
// milliseconds (its routing signal, then the response cache's request and
// response phases), so a few hundred recent texts cover the requests in
// flight; the byte bound keeps long texts from making it large.
const (
	memoEntries  = 256
	memoBytes    = 1 << 20
	memoOverhead = 96 // map slot, list links and headers an entry costs besides its text and vector
)

// embedMemo is one loaded embedding model's answers to its recent
// single-text calls, keyed by the exact text. Every user of the loaded model
// shares it (the routing embedding and complexity signals of every
// generation, the plugin host's embed function, stored data), because they
// embed the same text with the same model: the last user message, embedded
// by the request's embedding signal and again by the response cache in each
// of its two phases (tens of microseconds a call with embed-glove, under one
// for a memo hit). It belongs to the loaded model (heldModel), so a model
// released and loaded again starts with an empty one, and no vector of one
// model answers for another.
//
// Calls of several texts (compile-time candidates, ingested chunks) go to
// the model as they are and are not remembered: they would push the
// requests' texts out. Errors are not remembered. Vectors are copied in
// and out, so a caller may keep or change what it gets. Texts are kept in
// memory only (a copy, not the caller's possibly larger buffer), never
// logged. Safe for concurrent use.
type embedMemo struct {
	e   signal.Embedder
	met memoCounter

	mu    sync.Mutex
	items map[string]*memoEntry
	head  memoEntry // sentinel of the recency list: head.next is the newest
	bytes int
}

// memoCounter counts the memo's hits and misses (metrics.LocalModels).
type memoCounter interface{ EmbedMemo(hit bool) }

type memoEntry struct {
	text       string
	vec        []float32
	prev, next *memoEntry
}

func (e *memoEntry) size() int { return len(e.text) + 4*len(e.vec) + memoOverhead }

func newEmbedMemo(e signal.Embedder, met memoCounter) *embedMemo {
	m := &embedMemo{e: e, met: met, items: make(map[string]*memoEntry)}
	m.head.prev, m.head.next = &m.head, &m.head
	return m
}

func (m *embedMemo) Method() string { return m.e.Method() }

// Unwrap is the embedder the memo answers for.
func (m *embedMemo) Unwrap() signal.Embedder { return m.e }

// Embed answers a single text from the memo when it can, else from the
// model (remembering the answer); several texts go to the model.
func (m *embedMemo) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) != 1 {
		return m.e.Embed(ctx, texts)
	}
	if v := m.get(texts[0]); v != nil {
		m.met.EmbedMemo(true)
		return [][]float32{v}, nil
	}
	m.met.EmbedMemo(false)
	vs, err := m.e.Embed(ctx, texts)
	if err != nil || len(vs) != 1 || len(vs[0]) == 0 {
		return vs, err
	}
	m.put(texts[0], vs[0])
	return vs, nil
}

// get returns a copy of text's vector, nil when it is not remembered.
func (m *embedMemo) get(text string) []float32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.items[text]
	if e == nil {
		return nil
	}
	m.unlink(e)
	m.pushFront(e)
	return append([]float32(nil), e.vec...)
}

func (m *embedMemo) put(text string, vec []float32) {
	e := &memoEntry{text: strings.Clone(text), vec: append([]float32(nil), vec...)}
	if e.size() > memoBytes/8 {
		return // one long text would push out many requests'
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.items[text]; old != nil {
		// Two callers missed at once: keep the first answer.
		return
	}
	m.items[e.text] = e
	m.pushFront(e)
	m.bytes += e.size()
	for len(m.items) > memoEntries || m.bytes > memoBytes {
		last := m.head.prev
		m.unlink(last)
		delete(m.items, last.text)
		m.bytes -= last.size()
	}
}

func (m *embedMemo) unlink(e *memoEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (m *embedMemo) pushFront(e *memoEntry) {
	e.prev, e.next = &m.head, m.head.next
	m.head.next.prev = e
	m.head.next = e
}

// len is how many texts the memo holds and their bytes (tests).
func (m *embedMemo) len() (entries, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items), m.bytes
}
