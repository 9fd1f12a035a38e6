package worker_test

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/junction-router/junction/internal/inference/worker"
)

// wordModel is a deterministic in-test model: whitespace-separated words are
// tokens (at most maxTok characters each), embeddings are hashed bags of
// words, the classifier scores "jailbreak" by the words "ignore" and
// "instructions", and the token classifier tags capitalised words as NAME.
type wordModel struct {
	info      worker.Info
	calls     atomic.Int64 // forward passes
	rows      atomic.Int64
	tokenized atomic.Int64  // Tokenize calls
	block     chan struct{} // when set, forward passes wait on it
	fail      atomic.Bool   // forward passes fail
	delay     time.Duration // each forward pass takes this long
	mu        sync.Mutex
	maxRows   int
}

const maxTok = 12

func newWordModel(task string) *wordModel {
	m := &wordModel{info: worker.Info{Task: task, MaxInputTokens: 32, MaxTokenChars: maxTok, Engine: "test", Revision: "0123456789abcdef0123456789abcdef01234567", Digest: "sha256:feedface"}}
	switch task {
	case worker.TaskSequence:
		m.info.Labels = []string{"benign", "jailbreak"}
	case worker.TaskTokens:
		m.info.Labels = []string{"NAME"}
	case worker.TaskEmbedding:
		m.info.Dimensions = 256
		m.info.Matryoshka = []int{16, 64, 256}
	}
	return m
}

func (m *wordModel) Info() worker.Info { return m.info }

// words returns [start, end) byte offsets of tokens.
func words(text string) [][2]int {
	var out [][2]int
	start := -1
	n := 0
	for i, r := range text {
		if unicode.IsSpace(r) {
			if start >= 0 {
				out = append(out, [2]int{start, i})
				start = -1
			}
			continue
		}
		if start < 0 {
			start, n = i, 0
		}
		n++
		if n > maxTok {
			out = append(out, [2]int{start, i})
			start, n = i, 1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(text)})
	}
	return out
}

func (m *wordModel) Tokenize(text string, limit int) ([]int, bool, error) {
	m.tokenized.Add(1)
	w := words(text)
	complete := true
	if limit > 0 && len(w) > limit {
		w, complete = w[:limit], false
	}
	ends := make([]int, len(w))
	for i, x := range w {
		ends[i] = x[1]
	}
	return ends, complete, nil
}

func (m *wordModel) pass(n int) error {
	if m.block != nil {
		<-m.block
	}
	time.Sleep(m.delay)
	m.calls.Add(1)
	m.rows.Add(int64(n))
	m.mu.Lock()
	m.maxRows = max(m.maxRows, n)
	m.mu.Unlock()
	if m.fail.Load() {
		return errors.New("device lost")
	}
	return nil
}

// truncatingModel is a wordModel that cuts over-long inputs itself and
// reports what it read (worker.Truncator).
type truncatingModel struct{ *wordModel }

func (truncatingModel) TruncatesInputs() bool { return true }

func (m truncatingModel) cut(text string) (string, int, bool) {
	w := words(text)
	if len(w) > m.info.MaxInputTokens {
		return text[:w[m.info.MaxInputTokens-1][1]], m.info.MaxInputTokens, true
	}
	return text, len(w), false
}

func (m truncatingModel) Classify(ctx context.Context, in []worker.Pair) ([]worker.Result, error) {
	cut := make([]worker.Pair, len(in))
	toks := make([]int, len(in))
	trunc := make([]bool, len(in))
	for i, p := range in {
		cut[i].Text, toks[i], trunc[i] = m.cut(p.Text)
		cut[i].Pair = p.Pair
		toks[i] += len(words(p.Pair))
	}
	res, err := m.wordModel.Classify(ctx, cut)
	for i := range res {
		res[i].Tokens, res[i].Truncated = toks[i], trunc[i]
	}
	return res, err
}

func (m truncatingModel) Embed(ctx context.Context, in []string) ([]worker.Result, error) {
	cut := make([]string, len(in))
	toks := make([]int, len(in))
	trunc := make([]bool, len(in))
	for i, t := range in {
		cut[i], toks[i], trunc[i] = m.cut(t)
	}
	res, err := m.wordModel.Embed(ctx, cut)
	for i := range res {
		res[i].Tokens, res[i].Truncated = toks[i], trunc[i]
	}
	return res, err
}

func (m *wordModel) Classify(_ context.Context, in []worker.Pair) ([]worker.Result, error) {
	if err := m.pass(len(in)); err != nil {
		return nil, err
	}
	out := make([]worker.Result, len(in))
	for i, p := range in {
		if p.Text == "poison" {
			out[i].Err = errors.New("cannot read this input")
			continue
		}
		hits := 0
		for _, w := range strings.Fields(strings.ToLower(p.Text + " " + p.Pair)) {
			if w == "ignore" || w == "instructions" {
				hits++
			}
		}
		j := float32(1 / (1 + math.Exp(-float64(4*hits-2))))
		out[i].Scores = []float32{1 - j, j}
	}
	return out, nil
}

func (m *wordModel) Tokens(_ context.Context, in []string) ([]worker.Result, error) {
	if err := m.pass(len(in)); err != nil {
		return nil, err
	}
	out := make([]worker.Result, len(in))
	for i, t := range in {
		out[i].Spans = []worker.Span{}
		for _, w := range words(t) {
			r, _ := utf8.DecodeRuneInString(t[w[0]:])
			if unicode.IsUpper(r) {
				out[i].Spans = append(out[i].Spans, worker.Span{Label: "NAME", Start: w[0], End: w[1], Probability: 0.9})
			}
		}
	}
	return out, nil
}

func embed(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range strings.Fields(strings.ToLower(text)) {
		w = strings.Trim(w, ".,:;!?")
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		v[x%uint64(dims)] += 1
		v[(x>>20)%uint64(dims)] += 0.5
	}
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	if n > 0 {
		for i := range v {
			v[i] /= float32(math.Sqrt(n))
		}
	}
	return v
}

func (m *wordModel) Embed(_ context.Context, in []string) ([]worker.Result, error) {
	if err := m.pass(len(in)); err != nil {
		return nil, err
	}
	out := make([]worker.Result, len(in))
	for i, t := range in {
		out[i].Vector = embed(t, 256)
	}
	return out, nil
}

func (m *wordModel) Rerank(_ context.Context, in []worker.Pair) ([]worker.Result, error) {
	if err := m.pass(len(in)); err != nil {
		return nil, err
	}
	out := make([]worker.Result, len(in))
	for i, p := range in {
		a, b := embed(p.Text, 64), embed(p.Pair, 64)
		var dot float32
		for k := range a {
			dot += a[k] * b[k]
		}
		out[i].Scores = []float32{10*dot - 3}
	}
	return out, nil
}

func (m *wordModel) Close() error { return nil }
