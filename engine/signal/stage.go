package signal

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The request stage rule: the signal sets of one request that ask the same
// model deployment questions (decisions) are evaluated concurrently, and a
// Stage gathers what they ask so that each deployment gets one decisions
// call: it goes once every participant has asked or finished (none can add
// more); questions asked after that go in later calls, once none can add
// more or LaterRoundWait after the first call, whichever comes first.

// LaterRoundWait bounds how long questions asked after a deployment's first
// call of a stage wait for others to join them.
const LaterRoundWait = 2 * time.Millisecond

// Rounds of a stage's calls to one deployment.
const (
	RoundFirst = "first"
	RoundLater = "later"
)

// StagedModel is implemented by models that ask through a Stage (a
// deployment's decisions binding). The engine makes every Set whose model
// is staged a participant of the request's stage; a Set reports it through
// StagedSet.
type StagedModel interface {
	Staged()
}

// StagedSet is implemented by Sets whose model may be staged.
type StagedSet interface {
	Set
	// Staged reports whether the Set's model asks through a Stage.
	Staged() bool
}

// StageSend sends one call with the items gathered for a key, in the order
// they were asked, and returns one answer per item (or an error for all).
type StageSend func(ctx context.Context, round string, items []any) ([]any, error)

// Stage is one request's question gathering. The engine creates it with
// NewStage, gives each participating Set its own context (Join) and tells
// it when that Set is done (Participant.Finish).
type Stage struct {
	mu      sync.Mutex
	running int // participants that may still ask
	open    map[string]*stageBatch
	first   map[string]time.Time // when each key's first call went
}

type stageBatch struct {
	key    string
	round  string
	opened time.Time // when its first question was asked
	ctx    context.Context
	send   StageSend
	asks   []*stageAsk
	timer  *time.Timer
}

type stageAsk struct {
	item any
	done chan struct{}
	ans  any
	err  error
}

// Participant is one Set's place in a Stage.
type Participant struct {
	s     *Stage
	state int // participantRunning, participantWaiting, participantFinished
}

const (
	participantRunning = iota
	participantWaiting
	participantFinished
)

type stageKey struct{}

// NewStage returns an empty stage.
func NewStage() *Stage {
	return &Stage{open: map[string]*stageBatch{}, first: map[string]time.Time{}}
}

// Join adds a participant and returns the context its Set evaluates under.
// Every participant must Finish, or the stage's calls wait for it.
func (s *Stage) Join(ctx context.Context) (context.Context, *Participant) {
	p := &Participant{s: s}
	s.mu.Lock()
	s.running++
	s.mu.Unlock()
	return context.WithValue(ctx, stageKey{}, p), p
}

// Finish says the participant will ask nothing more.
func (p *Participant) Finish() {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.state == participantRunning {
		s.running--
	}
	p.state = participantFinished
	s.flushIfStillLocked()
}

// Ask adds item to the batch of key and waits for its answer: the batch is
// sent with send (the first asker's) when no participant can add more, or,
// for a later round, LaterRoundWait after key's first call. Without a stage
// in ctx (a caller outside the engine's evaluation) item is sent alone.
func Ask(ctx context.Context, key string, item any, send StageSend) (any, error) {
	p, _ := ctx.Value(stageKey{}).(*Participant)
	if p == nil {
		ans, err := send(ctx, RoundFirst, []any{item})
		if err != nil {
			return nil, err
		}
		return ans[0], nil
	}
	s := p.s
	a := &stageAsk{item: item, done: make(chan struct{})}
	s.mu.Lock()
	b := s.open[key]
	if b == nil {
		b = &stageBatch{key: key, round: RoundFirst, ctx: ctx, send: send, opened: time.Now()}
		if at, sent := s.first[key]; sent {
			b.round = RoundLater
			b.timer = time.AfterFunc(max(time.Until(at.Add(LaterRoundWait)), 0), func() { s.flushKey(key, b) })
		}
		s.open[key] = b
	}
	b.asks = append(b.asks, a)
	if p.state == participantRunning {
		p.state = participantWaiting
		s.running--
	}
	s.flushIfStillLocked()
	s.mu.Unlock()

	var ans any
	var err error
	select {
	case <-a.done:
		ans, err = a.ans, a.err
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	if p.state == participantWaiting {
		p.state = participantRunning
		s.running++
	}
	s.mu.Unlock()
	return ans, err
}

// flushIfStillLocked sends every open batch once no participant can add
// more. s.mu is held.
func (s *Stage) flushIfStillLocked() {
	if s.running > 0 {
		return
	}
	for key, b := range s.open {
		s.startLocked(key, b)
	}
}

// flushKey sends b if it is still key's open batch (its timer fired).
func (s *Stage) flushKey(key string, b *stageBatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[key] == b {
		s.startLocked(key, b)
	}
}

func (s *Stage) startLocked(key string, b *stageBatch) {
	delete(s.open, key)
	if b.timer != nil {
		b.timer.Stop()
	}
	if _, sent := s.first[key]; !sent {
		s.first[key] = time.Now()
	}
	go b.run()
}

func (b *stageBatch) run() {
	items := make([]any, len(b.asks))
	for i, a := range b.asks {
		items[i] = a.item
	}
	ans, err := b.send(context.WithValue(b.ctx, bundleWaitKey{}, time.Since(b.opened)), b.round, items)
	for i, a := range b.asks {
		switch {
		case err != nil:
			a.err = err
		case i < len(ans):
			a.ans = ans[i]
		default:
			a.err = fmt.Errorf("signals: a staged call answered %d items for %d questions", len(ans), len(items))
		}
		close(a.done)
	}
}

type bundleWaitKey struct{}

// BundleWait reports, inside a StageSend, how long the bundled call's first
// question waited before the call went; ok is false outside a stage.
func BundleWait(ctx context.Context) (wait time.Duration, ok bool) {
	wait, ok = ctx.Value(bundleWaitKey{}).(time.Duration)
	return wait, ok
}

// isStaged reports whether c, or a model it wraps (Unwrap), is staged.
func isStaged(c Classifier) bool {
	for c != nil {
		if _, ok := c.(StagedModel); ok {
			return true
		}
		u, ok := c.(interface{ Unwrap() Classifier })
		if !ok {
			return false
		}
		c = u.Unwrap()
	}
	return false
}
