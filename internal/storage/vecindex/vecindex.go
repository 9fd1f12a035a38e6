// Package vecindex is the in-memory exact nearest-neighbour index behind the
// embedded storage backend: per vector store one flat float32 arena of
// L2-normalised vectors (so cosine similarity is a dot product), scanned in
// full for each query with a fixed-size top-k heap, and split across
// goroutines when the scan is large.
//
// The index keeps no text: a search returns each hit's store, file, chunk
// index and row id, and the caller reads the texts of the few hits from its
// database. Vectors are added and removed a whole file at a time (a file's
// chunks are one contiguous run of the arena), which is how the storage
// layer commits them; per-file attributes live with the file so a filter is
// evaluated once per file, not once per chunk.
//
// An Index is safe for concurrent use: searches share a read lock, changes
// take the write lock.
package vecindex

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Errors the index returns.
var (
	// ErrNoStore: the store was never added (or was dropped).
	ErrNoStore = errors.New("vecindex: no such store")
	// ErrDimension: a vector's length is not the store's dimension.
	ErrDimension = errors.New("vecindex: dimension mismatch")
)

// parallelMin is the number of vectors a search must scan before it is split
// across goroutines; below it one goroutine is faster than starting several.
const parallelMin = 20000

// Chunk is one vector of a file as added to the index.
type Chunk struct {
	Index  int   // the chunk's position in its file
	Row    int64 // the caller's row id, handed back in results
	Vector []float32
}

// Result is one search hit.
type Result struct {
	StoreID    string
	FileID     string
	ChunkIndex int
	Row        int64
	Score      float32
	// Attributes are the file's attributes as added (shared; do not modify).
	Attributes map[string]any
}

// Index is the in-memory index of every vector store.
type Index struct {
	mu     sync.RWMutex
	stores map[string]*store
	// workers is how many goroutines a large search uses (GOMAXPROCS at New).
	workers int
}

type store struct {
	id    string
	dim   int
	vecs  []float32 // len(rows)*dim, normalised
	rows  []int64
	chunk []int32
	files []*file // in arena order
	byID  map[string]*file
	byRow map[int64]*file // the file of each row id
}

type file struct {
	id    string
	attrs map[string]any
	start int // first vector
	n     int // vectors
}

// New returns an empty index.
func New() *Index {
	return &Index{stores: map[string]*store{}, workers: runtime.GOMAXPROCS(0)}
}

// AddStore registers a store of dim-long vectors (a no-op when it exists).
func (x *Index) AddStore(id string, dim int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.stores[id]; !ok {
		x.stores[id] = &store{id: id, dim: dim, byID: map[string]*file{}, byRow: map[int64]*file{}}
	}
}

// Reserve makes room for n more vectors in a store (a no-op for an unknown
// store), so a bulk load does not copy the arena as it grows.
func (x *Index) Reserve(id string, n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.stores[id]
	if !ok || n <= 0 {
		return
	}
	s.vecs = slices.Grow(s.vecs, n*s.dim)
	s.rows = slices.Grow(s.rows, n)
	s.chunk = slices.Grow(s.chunk, n)
}

// DropStore forgets a store and its vectors.
func (x *Index) DropStore(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.stores, id)
}

// Dimension says a store's dimension and whether the store is known.
func (x *Index) Dimension(id string) (int, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, ok := x.stores[id]
	if !ok {
		return 0, false
	}
	return s.dim, true
}

// Len is the number of vectors of a store.
func (x *Index) Len(id string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if s, ok := x.stores[id]; ok {
		return len(s.rows)
	}
	return 0
}

// Total is the number of vectors of all stores.
func (x *Index) Total() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	total := 0
	for _, s := range x.stores {
		total += len(s.rows)
	}
	return total
}

// Covers reports whether the given stores hold every vector of the index.
func (x *Index) Covers(storeIDs []string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	named := 0
	seen := map[string]bool{}
	for _, id := range storeIDs {
		if s, ok := x.stores[id]; ok && !seen[id] {
			seen[id] = true
			named += len(s.rows)
		}
	}
	total := 0
	for _, s := range x.stores {
		total += len(s.rows)
	}
	return named == total
}

// AddFile adds (or replaces) a file's vectors in a store. The vectors are
// copied and normalised; a zero vector stays zero (it scores 0).
func (x *Index) AddFile(storeID, fileID string, attrs map[string]any, chunks []Chunk) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.stores[storeID]
	if !ok {
		return fmt.Errorf("%w %q", ErrNoStore, storeID)
	}
	for i := range chunks {
		if len(chunks[i].Vector) != s.dim {
			return fmt.Errorf("%w: chunk %d has %d dimensions, store %q has %d", ErrDimension, chunks[i].Index, len(chunks[i].Vector), storeID, s.dim)
		}
	}
	s.remove(fileID)
	f := &file{id: fileID, attrs: attrs, start: len(s.rows), n: len(chunks)}
	for i := range chunks {
		c := &chunks[i]
		off := len(s.vecs)
		s.vecs = append(s.vecs, c.Vector...)
		Normalize(s.vecs[off:])
		s.rows = append(s.rows, c.Row)
		s.chunk = append(s.chunk, int32(c.Index))
		s.byRow[c.Row] = f
	}
	s.files = append(s.files, f)
	s.byID[fileID] = f
	return nil
}

// RemoveFile removes a file's vectors from a store (a no-op when absent).
func (x *Index) RemoveFile(storeID, fileID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.stores[storeID]; ok {
		s.remove(fileID)
	}
}

// RemoveFileEverywhere removes a file's vectors from every store.
func (x *Index) RemoveFileEverywhere(fileID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, s := range x.stores {
		s.remove(fileID)
	}
}

// remove cuts a file's run out of the arena and shifts the runs after it.
func (s *store) remove(fileID string) {
	f, ok := s.byID[fileID]
	if !ok {
		return
	}
	delete(s.byID, fileID)
	at := -1
	for i, g := range s.files {
		if g == f {
			at = i
			break
		}
	}
	end := f.start + f.n
	for _, row := range s.rows[f.start:end] {
		delete(s.byRow, row)
	}
	s.vecs = append(s.vecs[:f.start*s.dim], s.vecs[end*s.dim:]...)
	s.rows = append(s.rows[:f.start], s.rows[end:]...)
	s.chunk = append(s.chunk[:f.start], s.chunk[end:]...)
	s.files = append(s.files[:at], s.files[at+1:]...)
	for _, g := range s.files[at:] {
		g.start -= f.n
	}
	// Give memory back when a store shrinks a lot.
	if cap(s.rows) > 1024 && len(s.rows) < cap(s.rows)/4 {
		s.vecs = append([]float32(nil), s.vecs...)
		s.rows = append([]int64(nil), s.rows...)
		s.chunk = append([]int32(nil), s.chunk...)
	}
}

// Normalize scales v to unit length in place (a zero vector stays zero).
func Normalize(v []float32) {
	var sum float64
	for _, e := range v {
		sum += float64(e) * float64(e)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}

// span is a run of one store's vectors a search scans.
type span struct {
	s        *store
	f        *file
	from, to int // vector positions
}

// Search returns the k vectors most similar (cosine) to query among the
// given stores, best first; ties go to the smaller file id, then chunk
// index, then store id. allow, when not nil, is asked once per file whether
// its chunks may be returned. Every store must exist and have the query's
// dimension.
func (x *Index) Search(query []float32, k int, storeIDs []string, allow func(storeID, fileID string, attrs map[string]any) bool) ([]Result, error) {
	if k <= 0 {
		return nil, nil
	}
	q := append([]float32(nil), query...)
	Normalize(q)

	x.mu.RLock()
	defer x.mu.RUnlock()
	var spans []span
	total := 0
	seen := map[string]bool{}
	for _, id := range storeIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		s, ok := x.stores[id]
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrNoStore, id)
		}
		if s.dim != len(q) {
			return nil, fmt.Errorf("%w: the query has %d dimensions, store %q has %d", ErrDimension, len(q), id, s.dim)
		}
		for _, f := range s.files {
			if f.n == 0 || (allow != nil && !allow(s.id, f.id, f.attrs)) {
				continue
			}
			spans = append(spans, span{s: s, f: f, from: f.start, to: f.start + f.n})
			total += f.n
		}
	}
	if total == 0 {
		return nil, nil
	}

	workers := x.workers
	if total < parallelMin || workers < 2 {
		h := newTopK(k)
		for _, sp := range spans {
			h.scan(q, sp)
		}
		return h.results(), nil
	}
	if workers > total/(parallelMin/4) {
		workers = max(2, total/(parallelMin/4))
	}
	parts := splitSpans(spans, total, workers)
	heaps := make([]*topK, len(parts))
	var wg sync.WaitGroup
	for i := range parts {
		heaps[i] = newTopK(k)
		wg.Add(1)
		go func(h *topK, part []span) {
			defer wg.Done()
			for _, sp := range part {
				h.scan(q, sp)
			}
		}(heaps[i], parts[i])
	}
	wg.Wait()
	h := heaps[0]
	for _, o := range heaps[1:] {
		for _, e := range o.items {
			h.push(e)
		}
	}
	return h.results(), nil
}

// Lookup scores the chunk of row id row against query (cosine similarity,
// with the same kernel as Search) when it is in one of the given stores and
// allow (nil: all) accepts its file. ok is false otherwise: the row is in
// no such store (its file is not completed or was removed), its file is
// refused, or the query is not the store's dimension.
func (x *Index) Lookup(query []float32, row int64, storeIDs []string, allow func(storeID, fileID string, attrs map[string]any) bool) (r Result, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for _, id := range storeIDs {
		s, found := x.stores[id]
		if !found || s.dim != len(query) {
			continue
		}
		f, found := s.byRow[row]
		if !found {
			continue
		}
		if allow != nil && !allow(s.id, f.id, f.attrs) {
			return Result{}, false
		}
		for pos := f.start; pos < f.start+f.n; pos++ {
			if s.rows[pos] != row {
				continue
			}
			q := append([]float32(nil), query...)
			Normalize(q)
			var out [1]float32
			dots(q, s.vecs[pos*s.dim:(pos+1)*s.dim], out[:])
			return Result{StoreID: s.id, FileID: f.id, ChunkIndex: int(s.chunk[pos]), Row: row, Score: out[0], Attributes: f.attrs}, true
		}
	}
	return Result{}, false
}

// splitSpans cuts spans into n parts of about total/n vectors each.
func splitSpans(spans []span, total, n int) [][]span {
	per := (total + n - 1) / n
	parts := make([][]span, 0, n)
	var cur []span
	room := per
	for _, sp := range spans {
		for sp.from < sp.to {
			take := min(sp.to-sp.from, room)
			cur = append(cur, span{s: sp.s, f: sp.f, from: sp.from, to: sp.from + take})
			sp.from += take
			room -= take
			if room == 0 {
				parts = append(parts, cur)
				cur, room = nil, per
			}
		}
	}
	if len(cur) > 0 {
		parts = append(parts, cur)
	}
	return parts
}

// item is a heap entry.
type item struct {
	score float32
	s     *store
	f     *file
	pos   int32
}

// worse reports whether a ranks below b.
func worse(a, b *item) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	if a.f.id != b.f.id {
		return a.f.id > b.f.id
	}
	ca, cb := a.s.chunk[a.pos], b.s.chunk[b.pos]
	if ca != cb {
		return ca > cb
	}
	return a.s.id > b.s.id
}

// topK is a min-heap of at most k items: the root is the worst kept.
type topK struct {
	k      int
	items  []item
	scores [scoreBatch]float32
}

func newTopK(k int) *topK { return &topK{k: k, items: make([]item, 0, min(k, 1024))} }

// scoreBatch is how many scores scan computes per kernel call.
const scoreBatch = 256

func (h *topK) scan(q []float32, sp span) {
	dim := len(q)
	vecs := sp.s.vecs
	out := h.scores[:]
	for from := sp.from; from < sp.to; from += scoreBatch {
		n := min(scoreBatch, sp.to-from)
		dots(q, vecs[from*dim:(from+n)*dim], out[:n])
		for j, score := range out[:n] {
			if len(h.items) == h.k && score < h.items[0].score {
				continue
			}
			h.push(item{score: score, s: sp.s, f: sp.f, pos: int32(from + j)})
		}
	}
}

func (h *topK) push(e item) {
	if len(h.items) < h.k {
		h.items = append(h.items, e)
		h.up(len(h.items) - 1)
		return
	}
	if !worse(&h.items[0], &e) {
		return
	}
	h.items[0] = e
	h.down(0)
}

func (h *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(&h.items[i], &h.items[p]) {
			return
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *topK) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && worse(&h.items[r], &h.items[l]) {
			m = r
		}
		if !worse(&h.items[m], &h.items[i]) {
			return
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
}

func (h *topK) results() []Result {
	items := h.items
	sort.Slice(items, func(i, j int) bool { return worse(&items[j], &items[i]) })
	out := make([]Result, len(items))
	for i, e := range items {
		out[i] = Result{
			StoreID:    e.s.id,
			FileID:     e.f.id,
			ChunkIndex: int(e.s.chunk[e.pos]),
			Row:        e.s.rows[e.pos],
			Score:      e.score,
			Attributes: e.f.attrs,
		}
	}
	return out
}

// Dot is the dot product of two vectors of the same length (the kernel
// the index scans with, so scores agree exactly with Search's).
func Dot(a, b []float32) float32 {
	var out [1]float32
	dots(a, b[:len(a)], out[:])
	return out[0]
}

// dotsGo is the portable kernel: eight independent accumulators so the
// additions overlap.
func dotsGo(q, vecs []float32, out []float32) {
	dim := len(q)
	for j := range out {
		out[j] = dotGo(q, vecs[j*dim:(j+1)*dim])
	}
}

func dotGo(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		x := a[i : i+8 : i+8]
		y := b[i : i+8 : i+8]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// String describes the index (stores and sizes), for logs.
func (x *Index) String() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var b strings.Builder
	ids := make([]string, 0, len(x.stores))
	for id := range x.stores {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		s := x.stores[id]
		fmt.Fprintf(&b, "%s: %d vectors of %d in %d files\n", id, len(s.rows), s.dim, len(s.files))
	}
	return b.String()
}
