package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// op is the model method a job calls.
type op uint8

const (
	opClassify op = iota
	opTokens
	opEmbed
	opRerank
)

func (o op) String() string {
	return [...]string{"classify", "tokens", "embed", "rerank"}[o]
}

// errOverloaded is returned when a model's queue is full (429 overloaded).
var errOverloaded = errors.New("overloaded")

// job is one request's items for one model method. Items of several jobs share
// forward passes; each job gets its own results back in order.
type job struct {
	ctx     context.Context
	op      op
	layer   int      // embed: the hidden layer (0: the default); jobs of other layers never share a pass
	pairs   []Pair   // classify, rerank
	texts   []string // tokens, embed
	tokens  []int    // tokens per item, for the batch budget
	total   int
	enq     time.Time
	done    chan struct{}
	results []Result
	err     error
	queue   time.Duration // enqueue until its first forward pass started
	forward time.Duration // its forward passes
}

func (j *job) len() int {
	if j.op == opClassify || j.op == opRerank {
		return len(j.pairs)
	}
	return len(j.texts)
}

// batchHooks report what the batcher does (metrics, health).
type batchHooks struct {
	batch  func(rows, tokens int, forward time.Duration, err error)
	queued func(depth int)
	waited func(d time.Duration)
}

// batcher runs one model's jobs: it groups queued jobs of the same method into
// forward passes of at most maxBatchTokens tokens. One batch runs at a time,
// so jobs that arrive during a pass join the next one (continuous batching).
// When the model is idle, the oldest job waits up to window for more to join,
// but only while another request for the model is still being parsed or
// tokenized (arriving > 0): a lone request never pays the window.
type batcher struct {
	model           Model
	window          time.Duration
	maxBatchTokens  int
	maxBatchJobs    int // 0: no limit; 1: no batching (for comparisons)
	maxQueue        int
	maxQueuedTokens int
	hooks           batchHooks

	arriving atomic.Int64 // requests for this model not yet submitted

	mu           sync.Mutex
	running      bool // a forward pass is in progress (loop or a caller)
	q            []*job
	queuedTokens int
	closed       bool
	wake         chan struct{}
	stopped      chan struct{}
}

func newBatcher(m Model, o Options, hooks batchHooks) *batcher {
	b := &batcher{
		model:           m,
		window:          time.Duration(o.BatchWindowMs * float64(time.Millisecond)),
		maxBatchTokens:  o.MaxBatchTokens,
		maxBatchJobs:    o.MaxBatchRequests,
		maxQueue:        o.MaxQueue,
		maxQueuedTokens: o.MaxQueuedTokens,
		hooks:           hooks,
		wake:            make(chan struct{}, 1),
		stopped:         make(chan struct{}),
	}
	go b.loop()
	return b
}

// submit queues j, or fails with errOverloaded when the model's queue holds
// maxQueue jobs or would pass maxQueuedTokens.
func (b *batcher) submit(j *job) error {
	for _, t := range j.tokens {
		j.total += t
	}
	j.enq = time.Now()
	j.done = make(chan struct{})
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errors.New("model is shutting down")
	}
	if len(b.q) >= b.maxQueue || (len(b.q) > 0 && b.queuedTokens+j.total > b.maxQueuedTokens) {
		b.mu.Unlock()
		return errOverloaded
	}
	if _, bounded := j.ctx.Deadline(); !bounded && len(b.q) == 0 && !b.running && b.arriving.Load() <= 1 {
		// Nothing to batch with and nobody on the way: run the pass on the
		// caller's goroutine, saving two goroutine hand-offs. (Not for a
		// caller with a deadline: its wait must end at the deadline.)
		b.running = true
		b.mu.Unlock()
		b.run([]*job{j})
		b.mu.Lock()
		b.running = false
		pending := len(b.q) > 0
		b.mu.Unlock()
		if pending {
			b.notify()
		}
		return nil
	}
	b.q = append(b.q, j)
	b.queuedTokens += j.total
	depth := len(b.q)
	b.mu.Unlock()
	if b.hooks.queued != nil {
		b.hooks.queued(depth)
	}
	b.notify()
	return nil
}

// notify wakes the loop without blocking (and never after close).
func (b *batcher) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// arrive announces a request that will submit a job soon; depart withdraws
// the announcement (call it once, after submit or on failure).
func (b *batcher) arrive() { b.arriving.Add(1) }

// depart withdraws an announcement. The last one leaving wakes the loop only
// when jobs wait in the queue for the window (a lone request that ran its own
// pass leaves nothing to wake for, and a needless wake-up costs a thread).
func (b *batcher) depart() {
	if b.arriving.Add(-1) != 0 {
		return
	}
	b.mu.Lock()
	waiting := len(b.q) > 0
	b.mu.Unlock()
	if waiting {
		b.notify()
	}
}

// wait blocks until j is answered or ctx ends. A forward pass already running
// is never interrupted; its results for an abandoned job are dropped.
func (b *batcher) wait(ctx context.Context, j *job) error {
	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *batcher) close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.wake)
	}
	b.mu.Unlock()
	<-b.stopped
}

func (b *batcher) loop() {
	defer close(b.stopped)
	for {
		b.mu.Lock()
		for len(b.q) == 0 || b.running {
			if b.closed && len(b.q) == 0 && !b.running {
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			if _, ok := <-b.wake; !ok {
				time.Sleep(time.Millisecond) // closing while a caller runs a pass
			}
			b.mu.Lock()
		}
		head := b.q[0]
		deadline := head.enq.Add(b.window)
		if b.window > 0 && !b.closed && b.arriving.Load() > 0 && time.Now().Before(deadline) && b.sameOpTokens(head) < b.maxBatchTokens &&
			(b.maxBatchJobs == 0 || b.sameOpJobs(head) < b.maxBatchJobs) {
			b.mu.Unlock()
			t := time.NewTimer(time.Until(deadline))
			select {
			case <-t.C:
			case <-b.wake: // a new job, or closing: look again
				t.Stop()
			}
			continue
		}
		batch := b.take(head)
		depth := len(b.q)
		b.running = len(batch) > 0
		b.mu.Unlock()
		if b.hooks.queued != nil {
			b.hooks.queued(depth)
		}
		if len(batch) > 0 {
			b.run(batch)
			b.mu.Lock()
			b.running = false
			b.mu.Unlock()
		}
	}
}

// sameKind: j's items may share a forward pass with head's.
func sameKind(j, head *job) bool { return j.op == head.op && j.layer == head.layer }

func (b *batcher) sameOpTokens(head *job) int {
	n := 0
	for _, j := range b.q {
		if sameKind(j, head) {
			n += j.total
		}
	}
	return n
}

func (b *batcher) sameOpJobs(head *job) int {
	n := 0
	for _, j := range b.q {
		if sameKind(j, head) {
			n++
		}
	}
	return n
}

// take removes from the queue, in arrival order, the jobs of head's method
// (and layer) that fit one batch (always at least the oldest), and jobs whose
// caller gave up.
func (b *batcher) take(head *job) []*job {
	var batch []*job
	tokens := 0
	keep := b.q[:0]
	for _, j := range b.q {
		switch {
		case j.ctx.Err() != nil:
			b.queuedTokens -= j.total
			j.err = j.ctx.Err()
			close(j.done)
		case sameKind(j, head) && (len(batch) == 0 || (tokens+j.total <= b.maxBatchTokens && (b.maxBatchJobs == 0 || len(batch) < b.maxBatchJobs))):
			batch = append(batch, j)
			tokens += j.total
			b.queuedTokens -= j.total
		default:
			keep = append(keep, j)
		}
	}
	for i := len(keep); i < len(b.q); i++ {
		b.q[i] = nil
	}
	b.q = keep
	return batch
}

// run answers a batch: its items are cut into forward passes of at most
// maxBatchTokens tokens each (a job larger than that spans several passes).
func (b *batcher) run(batch []*job) {
	start := time.Now()
	for _, j := range batch {
		j.queue = start.Sub(j.enq)
		j.results = make([]Result, j.len())
		if b.hooks.waited != nil {
			b.hooks.waited(j.queue)
		}
	}
	type ref struct {
		j *job
		i int
	}
	var refs []ref
	var pairs []Pair
	var texts []string
	tokens := 0
	flush := func() {
		if len(refs) == 0 {
			return
		}
		t0 := time.Now()
		res, err := b.call(batch[0].op, batch[0].layer, pairs, texts)
		fwd := time.Since(t0)
		if err == nil && len(res) != len(refs) {
			err = errors.New("model returned a different number of results than inputs")
		}
		if b.hooks.batch != nil {
			b.hooks.batch(len(refs), tokens, fwd, err)
		}
		var prev *job
		for k, r := range refs {
			if r.j != prev { // a job's items are contiguous in refs
				prev = r.j
				r.j.forward += fwd
			}
			if err != nil {
				if r.j.err == nil {
					r.j.err = err
				}
				continue
			}
			r.j.results[r.i] = res[k]
		}
		refs, pairs, texts, tokens = refs[:0], nil, nil, 0
	}
	for _, j := range batch {
		for i := 0; i < j.len(); i++ {
			if len(refs) > 0 && tokens+j.tokens[i] > b.maxBatchTokens {
				flush()
			}
			refs = append(refs, ref{j, i})
			tokens += j.tokens[i]
			if j.op == opClassify || j.op == opRerank {
				pairs = append(pairs, j.pairs[i])
			} else {
				texts = append(texts, j.texts[i])
			}
		}
	}
	flush()
	for _, j := range batch {
		close(j.done)
	}
}

// call runs one forward pass. It deliberately does not take the callers'
// contexts: a deadline bounds a caller's wait, not a running pass.
func (b *batcher) call(o op, layer int, pairs []Pair, texts []string) (res []Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New("model panicked during a forward pass")
		}
	}()
	ctx := context.Background()
	switch o {
	case opClassify:
		return b.model.Classify(ctx, pairs)
	case opRerank:
		return b.model.Rerank(ctx, pairs)
	case opTokens:
		return b.model.Tokens(ctx, texts)
	default:
		if le, ok := b.model.(LayerEmbedder); ok && layer != 0 {
			return le.EmbedLayer(ctx, texts, layer)
		}
		if layer != 0 {
			return nil, fmt.Errorf("the model selects no hidden layers (layer %d asked)", layer)
		}
		return b.model.Embed(ctx, texts)
	}
}
