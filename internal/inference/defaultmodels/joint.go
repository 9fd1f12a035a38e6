package defaultmodels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference"
)

// joint is a loaded joint model (JointNames) behind the signals of the
// default models it answers for: the first of them to ask about a text runs
// the graph once for every head, and the others, asking about the same text
// meanwhile or soon after, read the answers it left (a memo of the last
// jointMemo texts, keyed by a seeded hash and the text's length, holding
// answers and never the text). Each head's answer is what the model's own
// adapter would give: the same long-input rules (the jailbreak head reads
// every window, the others the first 512 tokens, which are the first
// window), the same activation and aggregation arithmetic.
type joint struct {
	m       *inference.Model
	cols    map[string][2]int   // head → its columns of the output: offset, width
	width   int                 // the output's width
	labels  map[string][]string // classifier head → labels
	classes map[string][]int    // classifier head → the label each class adds to
	windows bool                // a jailbreak head: plan windows
	facts   map[string]signal.ModelFacts

	seed   maphash.Seed
	mu     sync.Mutex
	recent [jointMemo]*jointEntry
	next   int
}

// jointMemo is how many texts the memo keeps answers for: a request's
// signals ask within microseconds of each other, and concurrent requests
// must not push each other's answers out before they are read.
const jointMemo = 16

type jointEntry struct {
	key  uint64
	size int
	done chan struct{}
	ans  jointAnswer
}

// jointAnswer is one text's answer per head (nil where the head is absent).
type jointAnswer struct {
	domain, jailbreak []signal.LabelScore
	embedding         []float32
	// err fails every head (the run failed); jbErr only the jailbreak head
	// (a text over its scan budget, which the truncating heads still read).
	err, jbErr error
}

// openJoint loads the joint model name from dir.
func openJoint(ctx context.Context, rt *inference.Runtime, dir, name string, threads int) (*Model, error) {
	heads := jointHeads(name)
	raw, err := os.ReadFile(filepath.Join(dir, name, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("defaultmodels: loading %s: %w", name, err)
	}
	var cfg struct {
		Version int                 `json:"joint_version"`
		Heads   map[string][]string `json:"heads"`
		Classes map[string][]int    `json:"classes"`
		Columns map[string][2]int   `json:"columns"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("defaultmodels: loading %s: config.json: %w", name, err)
	}
	// A joint graph of another format answers in other units (before
	// version 2, each model's own outputs): it is refused, not misread.
	if cfg.Version != JointVersion {
		return nil, fmt.Errorf("defaultmodels: loading %s: joint format %d, this build reads %d (a model directory written by another Junction; remove it to have it rebuilt)", name, cfg.Version, JointVersion)
	}
	for _, h := range heads {
		if h == HeadEmbedding {
			continue
		}
		bad := len(cfg.Classes[h]) == 0
		for _, o := range cfg.Classes[h] {
			bad = bad || o < 0 || o >= len(cfg.Heads[h])
		}
		if bad {
			return nil, fmt.Errorf("defaultmodels: loading %s: config.json: head %s does not map its classes onto its %d labels", name, h, len(cfg.Heads[h]))
		}
	}
	man, err := ReadManifest()
	if err != nil {
		return nil, err
	}
	// As many passes at once as the separate models it replaces could run
	// (a session each): one session must not become one queue for every
	// request of a busy router.
	md, err := rt.Load(ctx, filepath.Join(dir, name), inference.ModelOptions{Name: name, Threads: threads, Device: "cpu", Task: inference.TaskHeads, Concurrency: len(heads)})
	if err != nil {
		return nil, fmt.Errorf("defaultmodels: loading %s: %w", name, err)
	}
	if out := md.Info().Output; out != JointOutput {
		_ = md.Close()
		return nil, fmt.Errorf("defaultmodels: %s has outputs %q, not the one output %q", name, out, JointOutput)
	}
	j := &joint{m: md, cols: map[string][2]int{}, labels: cfg.Heads, classes: cfg.Classes, seed: maphash.MakeSeed(), facts: map[string]signal.ModelFacts{}}
	m := &Model{md: md}
	for _, h := range heads {
		c, ok := cfg.Columns[h]
		if !ok || c[0] < 0 || c[1] <= 0 || (h != HeadEmbedding && c[1] != len(cfg.Classes[h])) {
			_ = md.Close()
			return nil, fmt.Errorf("defaultmodels: loading %s: config.json: head %s has columns %v", name, h, c)
		}
		j.cols[h] = c
		j.width = max(j.width, c[0]+c[1])
		// Each head reports the identity of the model it stands for: the
		// same weights give the same answers (the embedder's names its
		// vector space, which stored embeddings are checked against).
		own := map[string]string{HeadDomain: DomainName, HeadJailbreak: JailbreakName, HeadEmbedding: EmbedderName}[h]
		// Its source is that model's checkpoint, at the revision the joint
		// package declares (both are built from the one bundle).
		j.facts[h] = signal.ModelFacts{ForwardMaxTokens: md.Info().MaxTokens, ResourceID: "onnx:" + own + "@" + man.Artifacts[own+"/model.onnx"],
			SourceRepoID: own, SourceRevision: md.Info().SourceRevision}
		switch h {
		case HeadDomain:
			m.Domain = jointClassifier{j: j, head: h, method: MethodDomain}
		case HeadJailbreak:
			j.windows = true
			m.Jailbreak = phraseFloor{jointClassifier{j: j, head: h, method: MethodJailbreak}}
		case HeadEmbedding:
			m.Embedder = jointEmbedder{j: j}
		}
	}
	return m, nil
}

// answers returns each text's answer, running the graph for those not in
// the memo (in one call) and waiting for those another caller is running.
func (j *joint) answers(ctx context.Context, texts []string) ([]*jointAnswer, error) {
	out := make([]*jointAnswer, len(texts))
	var mine []*jointEntry
	var mineTexts []string
	var wait []int
	waitOn := make([]*jointEntry, len(texts))
	j.mu.Lock()
	for i, s := range texts {
		key := maphash.String(j.seed, s)
		var e *jointEntry
		for _, r := range j.recent {
			if r != nil && r.key == key && r.size == len(s) {
				e = r
				break
			}
		}
		if e == nil {
			e = &jointEntry{key: key, size: len(s), done: make(chan struct{})}
			j.recent[j.next] = e
			j.next = (j.next + 1) % jointMemo
			mine = append(mine, e)
			mineTexts = append(mineTexts, s)
		}
		waitOn[i] = e
		wait = append(wait, i)
	}
	j.mu.Unlock()
	if len(mine) > 0 {
		j.run(ctx, mineTexts, mine)
	}
	var again []int
	for _, i := range wait {
		e := waitOn[i]
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		// Another caller's run that ended with its own context (its
		// request's deadline) is not this caller's answer: it runs the text
		// itself.
		if err := e.ans.err; err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil && !slices.Contains(mine, e) {
			again = append(again, i)
			continue
		}
		out[i] = &e.ans
	}
	if len(again) > 0 {
		sub := make([]string, len(again))
		entries := make([]*jointEntry, len(again))
		for k, i := range again {
			sub[k] = texts[i]
			entries[k] = &jointEntry{done: make(chan struct{})}
		}
		j.run(ctx, sub, entries)
		for k, i := range again {
			out[i] = &entries[k].ans
		}
	}
	return out, nil
}

// run computes the answers of texts into entries and marks them done; a
// failed run is forgotten, so that the next caller tries again.
func (j *joint) run(ctx context.Context, texts []string, entries []*jointEntry) {
	defer func() {
		for _, e := range entries {
			close(e.done)
		}
	}()
	fail := func(err error) {
		j.mu.Lock()
		for _, e := range entries {
			e.ans.err = err
			for k, r := range j.recent {
				if r == e {
					j.recent[k] = nil
				}
			}
		}
		j.mu.Unlock()
	}
	var o inference.InputOptions
	if j.windows {
		o.Overflow = inference.OverflowWindow
	}
	resp, err := j.m.Heads(ctx, texts, o)
	if err == nil {
		err = j.check(resp)
	}
	if err != nil {
		fail(err)
		return
	}
	var again []int // texts over the jailbreak head's scan budget: the others still read them, truncated
	for i, r := range resp.Results {
		if r.Err != nil {
			if !j.windows {
				entries[i].ans.err = r.Err
				continue
			}
			entries[i].ans.jbErr = r.Err
			again = append(again, i)
			continue
		}
		j.fill(&entries[i].ans, r, true)
	}
	if len(again) > 0 {
		sub := make([]string, len(again))
		for k, i := range again {
			sub[k] = texts[i]
		}
		resp, err := j.m.Heads(ctx, sub, inference.InputOptions{})
		if err == nil {
			err = j.check(resp)
		}
		if err != nil {
			fail(err)
			return
		}
		for k, r := range resp.Results {
			a := &entries[again[k]].ans
			if r.Err != nil {
				a.err = r.Err
				continue
			}
			j.fill(a, r, false)
		}
	}
}

// check fails a response whose rows are not as wide as the heads' columns
// say (a graph and a config.json that do not belong together).
func (j *joint) check(resp inference.HeadsResponse) error {
	for _, r := range resp.Results {
		for _, row := range r.Rows {
			if len(row) != 1 || len(row[0]) != j.width {
				return fmt.Errorf("defaultmodels: a joint model's row is not one output of %d values", j.width)
			}
		}
	}
	return nil
}

// fill sets a's answers from one text's rows (windowed: every window,
// jailbreak head included; else the first 512 tokens only).
func (j *joint) fill(a *jointAnswer, r inference.HeadsResult, windowed bool) {
	head := func(w int, h string) []float32 {
		c := j.cols[h]
		return r.Rows[w][0][c[0] : c[0]+c[1]]
	}
	if _, ok := j.cols[HeadDomain]; ok {
		a.domain = meanScores(j.labels[HeadDomain], j.probs(HeadDomain, head(0, HeadDomain)), r.Content[0])
	}
	if _, ok := j.cols[HeadJailbreak]; ok && windowed {
		ps := make([][]float64, len(r.Rows))
		for w := range r.Rows {
			ps[w] = j.probs(HeadJailbreak, head(w, HeadJailbreak))
		}
		a.jailbreak = maxScores(j.labels[HeadJailbreak], ps)
	}
	if _, ok := j.cols[HeadEmbedding]; ok {
		a.embedding = unit(head(0, HeadEmbedding))
	}
}

// probs turns a classifier head's class logits into its labels'
// probabilities: the softmax over the classes in float64, each label the
// sum of its classes' (what the separate model's graph computes in float32
// before its logarithm, which the separate adapter's softmax undoes).
func (j *joint) probs(head string, logits []float32) []float64 {
	cls := j.classes[head]
	out := make([]float64, len(j.labels[head]))
	for k, p := range softmax(logits) {
		if k < len(cls) {
			out[cls[k]] += p
		}
	}
	return out
}

// meanScores is inference's sequence scores of one window under the mean
// aggregate, weighted by the window's tokens.
func meanScores(labels []string, p []float64, content int) []signal.LabelScore {
	wt := float64(content)
	if wt == 0 {
		wt = 1
	}
	out := make([]signal.LabelScore, len(labels))
	for k := range out {
		out[k] = signal.LabelScore{Label: labels[k], Score: float64(float32(wt * p[k] / wt))}
	}
	return out
}

// maxScores is inference's sequence scores under the max aggregate: each
// label's highest probability over the windows.
func maxScores(labels []string, windows [][]float64) []signal.LabelScore {
	acc := make([]float64, len(labels))
	for w, ps := range windows {
		for i, p := range ps {
			if w == 0 || p > acc[i] {
				acc[i] = p
			}
		}
	}
	out := make([]signal.LabelScore, len(labels))
	for i := range out {
		out[i] = signal.LabelScore{Label: labels[i], Score: float64(float32(acc[i]))}
	}
	return out
}

func softmax(logits []float32) []float64 {
	out := make([]float64, len(logits))
	maxV := math.Inf(-1)
	for _, x := range logits {
		maxV = math.Max(maxV, float64(x))
	}
	var sum float64
	for i, x := range logits {
		out[i] = math.Exp(float64(x) - maxV)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// unit is inference's normalising of an embedding (in float64), on a copy.
func unit(row []float32) []float32 {
	v := append([]float32(nil), row...)
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

type jointClassifier struct {
	j      *joint
	head   string
	method string
}

func (c jointClassifier) Method() string                { return c.method }
func (c jointClassifier) ModelFacts() signal.ModelFacts { return c.j.facts[c.head] }

// LocalRun is the joint model: every head answers a text from one run
// (signal.LocalRunner).
func (c jointClassifier) LocalRun() any { return c.j }

func (c jointClassifier) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	ans, err := c.j.answers(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]signal.LabelScore, len(texts))
	for i, a := range ans {
		if a.err != nil {
			return nil, a.err
		}
		s := a.domain
		if c.head == HeadJailbreak {
			if a.jbErr != nil {
				return nil, a.jbErr
			}
			s = a.jailbreak
		}
		// A copy: the phrase floor and the signals may change scores.
		out[i] = append([]signal.LabelScore(nil), s...)
	}
	return out, nil
}

type jointEmbedder struct{ j *joint }

func (e jointEmbedder) Method() string                { return MethodEmbedder }
func (e jointEmbedder) ModelFacts() signal.ModelFacts { return e.j.facts[HeadEmbedding] }

// LocalRun is the joint model, as its classifiers' (signal.LocalRunner).
func (e jointEmbedder) LocalRun() any { return e.j }

func (e jointEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	ans, err := e.j.answers(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, a := range ans {
		if a.err != nil {
			return nil, a.err
		}
		out[i] = append([]float32(nil), a.embedding...)
	}
	return out, nil
}
