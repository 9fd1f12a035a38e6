package signal

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/recipes"
)

// sharedEmbedder gives the embedding and complexity Sets of one recipe a
// single Embed call per request text: the first Set to ask starts the call,
// the other waits for it. Finished vectors are kept for the last few texts,
// keyed by a seeded hash so that request texts are not retained.
type sharedEmbedder struct {
	e    Embedder
	seed maphash.Seed

	mu     sync.Mutex
	calls  map[uint64]*embedCall
	recent []uint64 // finished keys, oldest first
	// lex holds the lexical embedder's last vectors (lexicalRecent), so
	// that a request's embedding and complexity sets embed its text once.
	lex     [lexicalRecent]lexicalVector
	lexNext int
}

// lexicalVector is one text's vector from the lexical embedder, keyed as
// calls are (a seeded hash and the text's length), without the text.
type lexicalVector struct {
	key  uint64
	size int
	vec  []float32
}

// lexicalRecent is how many lexical vectors are kept: a request's two sets
// ask within microseconds of each other, and a few concurrent requests must
// not push each other's out meanwhile.
const lexicalRecent = 8

type embedCall struct {
	done chan struct{}
	vec  []float32
	err  error
}

// sharedRecent is how many finished vectors are kept: enough for the Sets of
// concurrent requests to find each other's work, small enough not to matter.
const sharedRecent = 64

// maxEmbedInputBytes bounds the text sent to an embedder: models read a few
// hundred tokens, and the lexical embedder reads 8 KiB.
const maxEmbedInputBytes = 32 << 10

func newSharedEmbedder(e Embedder) *sharedEmbedder {
	return &sharedEmbedder{e: e, seed: maphash.MakeSeed(), calls: map[uint64]*embedCall{}}
}

func (s *sharedEmbedder) method() string { return s.e.Method() }

func (s *sharedEmbedder) lexical() bool {
	_, ok := s.e.(*lexical.HashedEmbedder)
	return ok
}

// embedAll embeds texts in one call (compile time: candidates).
func (s *sharedEmbedder) embedAll(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := s.e.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	for i := range vecs {
		vecs[i] = normalized(vecs[i])
	}
	return vecs, nil
}

// embed returns text's unit vector, sharing the call with concurrent askers.
func (s *sharedEmbedder) embed(ctx context.Context, text string) ([]float32, error) {
	text = truncateUTF8(text, maxEmbedInputBytes)
	key := maphash.String(s.seed, text)
	if s.lexical() {
		return s.lexicalEmbed(ctx, key, text)
	}
	for {
		s.mu.Lock()
		c, ok := s.calls[key]
		if !ok {
			c = &embedCall{done: make(chan struct{})}
			s.calls[key] = c
			s.mu.Unlock()
			if IsDetached(ctx) {
				// The caller abandons this goroutine at the deadline by
				// itself: the call need not run on one of its own.
				s.run(ctx, key, text, c)
			} else {
				go s.run(ctx, key, text, c)
			}
		} else {
			s.mu.Unlock()
		}
		select {
		case <-c.done:
		default:
			select {
			case <-c.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		// A call started by another request may have failed on that
		// request's deadline; this one still has time, so it tries itself.
		if c.err != nil && (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded)) && ctx.Err() == nil {
			continue
		}
		return c.vec, c.err
	}
}

// lexicalEmbed is embed for the lexical embedder: microseconds, no model,
// so a call is not shared while it runs (two sets asking at once both
// compute the vector; waiting on each other would cost more), but a
// finished vector is remembered, and the second set of a request (the
// embedding and complexity signals read the same text) takes it instead of
// hashing the text's n-grams again.
func (s *sharedEmbedder) lexicalEmbed(ctx context.Context, key uint64, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	for i := range s.lex {
		if e := &s.lex[i]; e.vec != nil && e.key == key && e.size == len(text) {
			v := e.vec
			s.mu.Unlock()
			return v, nil
		}
	}
	s.mu.Unlock()
	v, err := s.embedAll(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.lex[s.lexNext] = lexicalVector{key: key, size: len(text), vec: v[0]}
	s.lexNext = (s.lexNext + 1) % lexicalRecent
	s.mu.Unlock()
	return v[0], nil
}

// run makes the call, in its own goroutine unless ctx is Detached, so that a
// caller whose deadline passes stops waiting while the call finishes for the
// others.
func (s *sharedEmbedder) run(ctx context.Context, key uint64, text string, c *embedCall) {
	v, err := s.embedAll(ctx, []string{text})
	s.mu.Lock()
	if err != nil {
		c.err = err
		delete(s.calls, key) // failures are not remembered
	} else {
		c.vec = v[0]
		s.recent = append(s.recent, key)
		if len(s.recent) > sharedRecent {
			delete(s.calls, s.recent[0])
			s.recent = s.recent[1:]
		}
	}
	s.mu.Unlock()
	close(c.done)
}

func normalized(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 || math.Abs(n-1) < 1e-6 {
		return v
	}
	inv := float32(1 / math.Sqrt(n))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}

// dot is the cosine similarity of unit vectors, rounded to six decimals:
// float32 vectors carry about seven significant digits, and without rounding
// a similarity meant to be 0.2 (0.8-0.6) lands at 0.19999999 and misses a
// threshold of "0.2".
func dot(a, b []float32) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("vector sizes differ: %d and %d", len(a), len(b))
	}
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return roundScore(d), nil
}

// sparseDot is dot over the components nz of a that are not zero (in
// order), for vectors whose components are all finite: a zero component
// adds ±0 to the running sum, which leaves it unchanged, so the answer is
// dot's to the bit.
func sparseDot(a []float32, nz []int32, b []float32) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("vector sizes differ: %d and %d", len(a), len(b))
	}
	var d float64
	for _, i := range nz {
		d += float64(a[i]) * float64(b[i])
	}
	return roundScore(d), nil
}

// lexicalNonzero returns, for a vector of the lexical embedder (every
// component finite, most of them zero: a short text's hashed n-grams fill
// a few hundred of its 1,024 dimensions), the indices of its nonzero
// components, appended to buf (never nil: an empty list is a zero vector);
// nil for other embedders' vectors or when v is not sparse enough to gain,
// which bestMatch then compares in full.
func (s *sharedEmbedder) lexicalNonzero(v []float32, buf []int32) []int32 {
	if !s.lexical() {
		return nil
	}
	nz := buf[:0]
	if nz == nil {
		nz = []int32{}
	}
	for i, x := range v {
		if x != 0 {
			nz = append(nz, int32(i))
		}
	}
	if 2*len(nz) > len(v) {
		return nil
	}
	return nz
}

func roundScore(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// bestMatch returns the highest similarity of v to any of cands, with its
// index, and the mean similarity.
//
// nz, when not nil, lists v's nonzero components (lexicalNonzero: v and
// cands are the lexical embedder's, all finite), and only those are
// multiplied; the answer is the same.
func bestMatch(v []float32, nz []int32, cands [][]float32) (best float64, at int, mean float64, err error) {
	best, at = math.Inf(-1), -1
	for i, c := range cands {
		var d float64
		if nz != nil {
			d, err = sparseDot(v, nz, c)
		} else {
			d, err = dot(v, c)
		}
		if err != nil {
			return 0, -1, 0, err
		}
		mean += d
		if d > best {
			best, at = d, i
		}
	}
	if len(cands) > 0 {
		mean /= float64(len(cands))
	} else {
		best = 0
	}
	return best, at, mean, nil
}

type embeddingSet struct {
	signals []embeddingSignal
	emb     *sharedEmbedder
}

type embeddingSignal struct {
	name       string
	candidates []string
	vecs       [][]float32
	threshold  float64
	mean       bool
}

func newEmbeddingSet(ctx context.Context, cfg []recipes.EmbeddingSignal, emb *sharedEmbedder) (Set, error) {
	set := &embeddingSet{emb: emb}
	var all []string
	for _, c := range cfg {
		es := embeddingSignal{name: c.Name, candidates: c.Candidates, threshold: c.Threshold}
		switch strings.ToLower(strings.TrimSpace(c.Aggregation)) {
		case "", "max":
		case "mean":
			es.mean = true
		default:
			return nil, fmt.Errorf("signals: embedding signal %q: aggregation %q is neither max nor mean", c.Name, c.Aggregation)
		}
		if len(c.Candidates) == 0 {
			return nil, fmt.Errorf("signals: embedding signal %q has no candidates", c.Name)
		}
		if c.Threshold < 0 || c.Threshold > 1 {
			return nil, fmt.Errorf("signals: embedding signal %q: threshold %v is outside [0,1]", c.Name, c.Threshold)
		}
		all = append(all, c.Candidates...)
		set.signals = append(set.signals, es)
	}
	// Every candidate of the recipe in one call, once per generation.
	vecs, err := emb.embedAll(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("signals: embedding candidates: %w", err)
	}
	for i := range set.signals {
		n := len(set.signals[i].candidates)
		set.signals[i].vecs, vecs = vecs[:n], vecs[n:]
	}
	return set, nil
}

func (s *embeddingSet) Kind() string { return recipes.KindEmbedding }
func (s *embeddingSet) Cheap() bool  { return false }

// CallsModel is true unless the set embeds with the lexical embedder.
func (s *embeddingSet) CallsModel() bool { return !s.emb.lexical() }

func (s *embeddingSet) Missing(code string) []Result {
	out := make([]Result, len(s.signals))
	for i, es := range s.signals {
		out[i] = Result{Kind: recipes.KindEmbedding, Name: es.name, Method: s.emb.method(), Error: code}
	}
	return out
}

func (s *embeddingSet) Evaluate(ctx context.Context, in *Input) []Result {
	start := time.Now()
	text := inputOrEmpty(in).Text
	out := make([]Result, len(s.signals))
	for i, es := range s.signals {
		out[i] = Result{Kind: recipes.KindEmbedding, Name: es.name, Method: s.emb.method()}
	}
	if strings.TrimSpace(text) == "" {
		return stamp(out, start)
	}
	v, err := s.emb.embed(ctx, text)
	if err != nil {
		return stamp(s.Missing(errorCode(ctx, err)), start)
	}
	var buf [512]int32
	nz := s.emb.lexicalNonzero(v, buf[:0])
	for i, es := range s.signals {
		best, at, mean, err := bestMatch(v, nz, es.vecs)
		if err != nil {
			return stamp(s.Missing(CodeModelError), start)
		}
		score := best
		if es.mean {
			score = mean
		}
		out[i].Score = max(0, score)
		out[i].Value = es.candidates[at]
		out[i].Matched = score >= es.threshold
	}
	return stamp(out, start)
}
