package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// APIVersion is the worker contract version reported on /v1/models, /health
// and /health/live; /openapi.yaml describes it.
const APIVersion = "v1"

// Options are the worker's limits and tunables; zero values take the spec's
// defaults (see Defaults).
type Options struct {
	MaxQueue           int     // queued requests per model before 429 (256)
	MaxQueuedTokens    int     // queued tokens per model before 429 (4194304)
	BatchWindowMs      float64 // batching wait (2.0); negative: no wait
	MaxBatchTokens     int     // tokens per forward pass (65536)
	MaxBatchRequests   int     // requests per forward pass; 0 no limit, 1 turns batching off
	MaxRequestBytes    int64   // request body limit (8388608)
	MaxBundleTasks     int     // tasks per bundle (64)
	LoadAttempts       int     // loads before a model stays failed (5)
	LoadRetry          time.Duration
	LoadRetryMax       time.Duration
	ResultCacheEntries int // recent results per model (16384); negative disables
	// DegradedAfter is how many forward passes in a row must fail before a
	// ready model reports degraded (3).
	DegradedAfter int
	Device        string
	Logger        *slog.Logger
	Registry      *prometheus.Registry // metrics; a private registry when nil
}

// Defaults returns o with every zero field set to the spec's default.
func (o Options) Defaults() Options {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxQueue, 256)
	def(&o.MaxQueuedTokens, 4194304)
	def(&o.MaxBatchTokens, 65536)
	def(&o.MaxBundleTasks, 64)
	def(&o.LoadAttempts, 5)
	def(&o.ResultCacheEntries, 16384)
	def(&o.DegradedAfter, 3)
	if o.BatchWindowMs == 0 {
		o.BatchWindowMs = 2.0
	} else if o.BatchWindowMs < 0 {
		o.BatchWindowMs = 0
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = 8388608
	}
	if o.LoadRetry == 0 {
		o.LoadRetry = 5 * time.Second
	}
	if o.LoadRetryMax == 0 {
		o.LoadRetryMax = 300 * time.Second
	}
	if o.Device == "" {
		o.Device = "auto"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Health states of a model.
const (
	StateStarting = "starting"
	StateLoading  = "loading"
	StateWarming  = "warming"
	StateReady    = "ready"
	StateDegraded = "degraded"
	StateFailed   = "failed"
)

// entry is one served model and its life cycle.
type entry struct {
	spec  Spec
	name  string
	cache *lru.Cache[cacheKey, Result]

	mu        sync.RWMutex
	state     string
	attempts  int
	lastErr   string
	model     Model
	info      Info
	batcher   *batcher
	selfCheck string // passed, failed, none
	failures  int    // forward passes failed in a row
}

func (e *entry) snapshot() (state string, m Model, info Info, b *batcher) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.state, e.model, e.info, e.batcher
}

// Server is the worker: it loads its models in the background and serves
// the HTTP API from Handler.
type Server struct {
	opt     Options
	load    Loader
	log     *slog.Logger
	met     *metrics
	order   []string
	models  map[string]*entry
	started time.Time

	stop   context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup
	mux    *http.ServeMux
	closed sync.Once
	// answers holds *bytes.Buffer for encoding answers between requests.
	answers sync.Pool
}

// New prepares a worker for specs; Start loads them. Served names must be
// unique.
func New(specs []Spec, load Loader, opt Options) (*Server, error) {
	if len(specs) == 0 {
		return nil, errors.New("worker: no models to serve")
	}
	if load == nil {
		return nil, errors.New("worker: no model loader")
	}
	opt = opt.Defaults()
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{opt: opt, load: load, log: opt.Logger, models: map[string]*entry{}, ctx: ctx, stop: stop, started: time.Now()}
	reg := opt.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s.met = newMetrics(reg)
	for _, sp := range specs {
		if sp.Model == "" {
			stop()
			return nil, errors.New("worker: a model entry has no model (name a hub repository, built-in model or directory)")
		}
		name := sp.ServedName()
		if _, dup := s.models[name]; dup {
			stop()
			return nil, fmt.Errorf("worker: model %q is listed twice; give one a different name", name)
		}
		e := &entry{spec: sp, name: name, state: StateStarting, selfCheck: "pending"}
		if opt.ResultCacheEntries > 0 {
			e.cache, _ = lru.New[cacheKey, Result](opt.ResultCacheEntries)
		}
		s.models[name] = e
		s.order = append(s.order, name)
		s.met.ready.WithLabelValues(name).Set(0)
	}
	s.routes()
	return s, nil
}

// Start loads every model concurrently in the background; /health reports
// their progress. It returns at once.
func (s *Server) Start() {
	for _, name := range s.order {
		e := s.models[name]
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.bringUp(e)
		}()
	}
}

// WaitSettled blocks until no model is starting, loading or warming, or ctx
// ends; it returns the process status.
func (s *Server) WaitSettled(ctx context.Context) string {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		st, _ := s.status()
		switch st {
		case StateReady, StateDegraded, StateFailed:
			return st
		}
		select {
		case <-ctx.Done():
			return st
		case <-t.C:
		}
	}
}

// Close stops loading, drains each model's batcher and closes the models.
func (s *Server) Close() error {
	var errs []error
	s.closed.Do(func() {
		s.stop()
		s.wg.Wait()
		for _, name := range s.order {
			e := s.models[name]
			e.mu.Lock()
			b, m := e.batcher, e.model
			e.batcher, e.model, e.state = nil, nil, StateFailed
			e.lastErr = "worker is shutting down"
			e.mu.Unlock()
			if b != nil {
				b.close()
			}
			if m != nil {
				errs = append(errs, m.Close())
			}
		}
	})
	return errors.Join(errs...)
}

func (s *Server) setState(e *entry, state, msg string) {
	e.mu.Lock()
	e.state = state
	if msg != "" || state == StateReady {
		e.lastErr = msg
	}
	e.mu.Unlock()
	v := 0.0
	if state == StateReady || state == StateDegraded {
		v = 1
	}
	s.met.ready.WithLabelValues(e.name).Set(v)
	s.log.Info("model state", "model", e.name, "state", state, "detail", msg)
}

// bringUp loads a model with retries (waits doubling from LoadRetry up to
// LoadRetryMax, at most LoadAttempts loads; a Permanent error is not
// retried), then warms it up: one forward pass and the model's self-check.
func (s *Server) bringUp(e *entry) {
	wait := s.opt.LoadRetry
	var m Model
	for attempt := 1; ; attempt++ {
		e.mu.Lock()
		e.attempts = attempt
		e.mu.Unlock()
		s.setState(e, StateLoading, "")
		var err error
		m, err = s.load(s.ctx, e.spec)
		if err == nil {
			break
		}
		if s.ctx.Err() != nil {
			return
		}
		if IsPermanent(err) || attempt >= s.opt.LoadAttempts {
			why := err.Error()
			if !IsPermanent(err) {
				why = fmt.Sprintf("%s (gave up after %d attempts)", why, attempt)
			}
			s.setState(e, StateFailed, why)
			return
		}
		s.setState(e, StateLoading, fmt.Sprintf("attempt %d failed: %v; retrying in %s", attempt, err, wait))
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, s.opt.LoadRetryMax)
	}
	info := m.Info()
	if info.Device == "" {
		info.Device = s.opt.Device
	}
	s.setState(e, StateWarming, "")
	if err := warmUp(s.ctx, m, info); err != nil {
		_ = m.Close()
		e.mu.Lock()
		e.selfCheck = "failed"
		e.mu.Unlock()
		s.setState(e, StateFailed, "self-check failed: "+err.Error())
		return
	}
	b := newBatcher(m, s.opt, s.met.hooks(e.name, func(err error) { s.passed(e, err) }))
	e.mu.Lock()
	e.model, e.info, e.batcher, e.selfCheck = m, info, b, "passed"
	e.mu.Unlock()
	s.met.info.WithLabelValues(e.name, info.Task, info.Revision, info.Device, info.Engine).Set(1)
	s.met.memory.WithLabelValues(e.name).Set(float64(info.MemoryBytes))
	s.setState(e, StateReady, "")
}

// passed records a forward pass outcome: DegradedAfter failures in a row turn
// a ready model degraded; a success turns it ready again.
func (s *Server) passed(e *entry, err error) {
	e.mu.Lock()
	state := e.state
	if err != nil {
		e.failures++
	} else {
		e.failures = 0
	}
	f := e.failures
	e.mu.Unlock()
	switch {
	case err != nil && f >= s.opt.DegradedAfter && state == StateReady:
		s.setState(e, StateDegraded, "forward passes are failing: "+err.Error())
	case err == nil && state == StateDegraded:
		s.setState(e, StateReady, "")
	}
}

// warmUp runs one small forward pass of the model's task and its self-check.
func warmUp(ctx context.Context, m Model, info Info) error {
	var res []Result
	var err error
	switch info.Task {
	case TaskSequence:
		res, err = m.Classify(ctx, []Pair{{Text: "warm up"}})
		if err == nil && len(res) == 1 && res[0].Err == nil && len(res[0].Scores) != len(info.Labels) {
			return fmt.Errorf("classifier returned %d scores for %d labels", len(res[0].Scores), len(info.Labels))
		}
	case TaskTokens:
		res, err = m.Tokens(ctx, []string{"warm up"})
	case TaskEmbedding:
		res, err = m.Embed(ctx, []string{"warm up"})
		if err == nil && len(res) == 1 && res[0].Err == nil && info.Dimensions > 0 && len(res[0].Vector) != info.Dimensions {
			return fmt.Errorf("embedding has %d dimensions, model declares %d", len(res[0].Vector), info.Dimensions)
		}
	case TaskRerank:
		res, err = m.Rerank(ctx, []Pair{{Text: "warm", Pair: "up"}})
	default:
		return fmt.Errorf("unknown task %q", info.Task)
	}
	if err != nil {
		return err
	}
	if len(res) != 1 {
		return fmt.Errorf("warm-up pass returned %d results for 1 input", len(res))
	}
	if res[0].Err != nil {
		return res[0].Err
	}
	if sc, ok := m.(SelfChecker); ok {
		return sc.SelfCheck(ctx)
	}
	return nil
}

// status is the process status and each model's state: ready when all are
// ready; failed when all failed; degraded when some serve and others do not
// (or serve degraded); otherwise the earliest state any model is in.
func (s *Server) status() (string, map[string]modelHealth) {
	out := map[string]modelHealth{}
	counts := map[string]int{}
	for _, name := range s.order {
		e := s.models[name]
		e.mu.RLock()
		h := modelHealth{Status: e.state, Attempts: e.attempts, Error: e.lastErr}
		e.mu.RUnlock()
		out[name] = h
		counts[h.Status]++
	}
	n := len(s.order)
	switch {
	case counts[StateReady] == n:
		return StateReady, out
	case counts[StateFailed] == n:
		return StateFailed, out
	case counts[StateStarting] > 0:
		return StateStarting, out
	case counts[StateLoading] > 0:
		return StateLoading, out
	case counts[StateWarming] > 0:
		return StateWarming, out
	default:
		return StateDegraded, out
	}
}

type modelHealth struct {
	Status   string `json:"status"`
	Attempts int    `json:"attempts,omitempty"`
	Error    string `json:"error,omitempty"`
}

// names returns the served model names in a stable order.
func (s *Server) names() []string {
	n := append([]string(nil), s.order...)
	sort.Strings(n)
	return n
}
