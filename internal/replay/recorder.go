package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/replay/replayconfig"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/recipes"
)

// Defaults of a Recorder.
const (
	DefaultQueue = 4096
	DefaultBatch = 256
	// writeTimeout bounds one batch's write.
	writeTimeout = 10 * time.Second
)

// Options configure a Recorder.
type Options struct {
	// Store keeps the records (required).
	Store storage.Replays
	// Logger receives write failures (never request text); nil discards.
	Logger *slog.Logger
	// Queue bounds the records waiting to be written (0: DefaultQueue);
	// past it a record is dropped and counted, never waited for.
	Queue int
	// Batch is the most records written in one transaction (0:
	// DefaultBatch).
	Batch int
	// Sample decides a request is recorded at rate; nil draws a random
	// number (tests pass their own).
	Sample func(rate float64) bool
	// ShadowClient sends shadow_dispatch's copies; nil is a client of its
	// own (the demo provider answered in process).
	ShadowClient *http.Client
	// Registerer receives junction_replay_records_total{result} and
	// junction_replay_shadows_total{result}; nil registers none.
	Registerer prometheus.Registerer
}

// Stats count what the recorder did since it started.
type Stats struct {
	Recorded   int64 `json:"recorded"`
	SampledOut int64 `json:"sampled_out"`
	Dropped    int64 `json:"dropped"`
	Failed     int64 `json:"failed"`
	// Shadows counts the copies sent; ShadowsSkipped those not sent
	// because MaxShadows were in flight.
	Shadows        int64 `json:"shadows"`
	ShadowsSkipped int64 `json:"shadows_skipped"`
}

// Recorder keeps decision records: Record (dataplane.Replays) builds the
// record on the request's goroutine and queues it; one writer goroutine
// writes the queue in batches, pruning each decision's records to its
// configuration's bounds.
type Recorder struct {
	store  storage.Replays
	log    *slog.Logger
	sample func(float64) bool
	batch  int
	queue  chan item
	done   chan struct{}
	mu     sync.RWMutex // held to send on queue; Close takes it to close queue
	closed bool
	once   sync.Once

	configs sync.Map // configuration bytes → replayconfig.Replay (or error)
	nconfig atomic.Int64

	shadow    *http.Client
	shadowSem chan struct{}
	inflight  atomic.Int64 // shadow calls
	closing   bool         // under mu: no new record or shadow is taken

	recorded, sampledOut, dropped, failed, shadows, shadowsSkipped atomic.Int64
	lastWarn                                                       atomic.Int64 // unix nanos of the last logged failure
}

type item struct {
	rep    storage.Replay
	bounds storage.ReplayBounds
	flush  chan struct{} // a Flush marker: closed once what came before is written
}

var _ dataplane.Replays = (*Recorder)(nil)

// New starts a recorder; Close stops it.
func New(o Options) *Recorder {
	r := &Recorder{store: o.Store, log: o.Logger, sample: o.Sample, batch: o.Batch, done: make(chan struct{}), shadow: o.ShadowClient, shadowSem: make(chan struct{}, MaxShadows)}
	if r.shadow == nil {
		r.shadow = defaultShadowClient()
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.sample == nil {
		r.sample = func(rate float64) bool { return rate >= 1 || rand.Float64() < rate }
	}
	if r.batch <= 0 {
		r.batch = DefaultBatch
	}
	q := o.Queue
	if q <= 0 {
		q = DefaultQueue
	}
	r.queue = make(chan item, q)
	if o.Registerer != nil {
		r.register(o.Registerer)
	}
	go r.write()
	return r
}

// register publishes the counts (read at each scrape).
func (r *Recorder) register(reg prometheus.Registerer) {
	for result, v := range map[string]*atomic.Int64{"recorded": &r.recorded, "sampled_out": &r.sampledOut, "dropped": &r.dropped, "failed": &r.failed} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "junction_replay_records_total",
			Help:        "router_replay decision records by result: recorded (written), sampled_out, dropped (the write queue was full), failed (the store refused the write).",
			ConstLabels: prometheus.Labels{"result": result}}, func() float64 { return float64(v.Load()) }))
	}
	for result, v := range map[string]*atomic.Int64{"sent": &r.shadows, "skipped": &r.shadowsSkipped} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "junction_replay_shadows_total",
			Help:        "shadow_dispatch copies by result: sent, skipped (too many in flight).",
			ConstLabels: prometheus.Labels{"result": result}}, func() float64 { return float64(v.Load()) }))
	}
}

// config is the decision's router_replay configuration; ok is false when
// it has none (or one that does not parse: validation refused it already).
func (r *Recorder) config(refs []recipes.PluginRef) (replayconfig.Replay, bool) {
	for _, ref := range refs {
		if ref.Type != replayconfig.TypeReplay {
			continue
		}
		if v, ok := r.configs.Load(string(ref.Configuration)); ok {
			c, ok := v.(replayconfig.Replay)
			return c, ok
		}
		c, err := replayconfig.ParseReplay(ref.Configuration)
		if r.nconfig.Add(1) > 1024 { // configurations come from documents: only many reloads reach this
			r.configs.Clear()
			r.nconfig.Store(1)
		}
		if err != nil {
			r.configs.Store(string(ref.Configuration), err)
			return replayconfig.Replay{}, false
		}
		r.configs.Store(string(ref.Configuration), c)
		return c, true
	}
	return replayconfig.Replay{}, false
}

// Record implements dataplane.Replays: it never blocks.
func (r *Recorder) Record(ev *dataplane.ReplayEvent) {
	if ev == nil || ev.Result == nil {
		return
	}
	c, ok := r.config(ev.Result.Plugins)
	if !ok || !c.Enabled {
		return
	}
	if !r.sample(c.SampleRate) {
		r.sampledOut.Add(1)
		return
	}
	now := time.Now().UTC()
	rec := build(ev, c, storage.NewReplayID(), now)
	bounds := storage.ReplayBounds{MaxRecords: c.MaxRecords, MaxBytes: c.MaxBytes, MaxAge: c.MaxAge()}
	if sc, ok := r.shadowConfig(ev.Result.Plugins); ok && sc.Enabled && ev.Shadow != nil && r.sample(sc.SampleRate) {
		// Taken under mu, so that Close (which sets closing under it) waits
		// for every shadow it did not refuse.
		r.mu.RLock()
		if r.closing {
			r.mu.RUnlock()
			return
		}
		select {
		case r.shadowSem <- struct{}{}:
			r.shadows.Add(1)
			r.inflight.Add(1)
			r.mu.RUnlock()
			go func() {
				defer r.inflight.Add(-1)
				defer func() { <-r.shadowSem }()
				rec.Shadow = r.dispatch(ev.Shadow, sc)
				r.enqueue(&rec, bounds, now)
			}()
			return
		default:
			r.mu.RUnlock()
			r.shadowsSkipped.Add(1)
			rec.Shadow = &Shadow{Model: sc.Model, Error: fmt.Sprintf("not sent: %d shadow calls were in flight", MaxShadows)}
		}
	}
	r.enqueue(&rec, bounds, now)
}

// enqueue queues rec for the writer; never blocks.
func (r *Recorder) enqueue(rec *Record, bounds storage.ReplayBounds, now time.Time) {
	raw, err := json.Marshal(rec)
	if err != nil || len(raw) > storage.MaxReplayRecord {
		r.failed.Add(1)
		return
	}
	it := item{rep: storage.Replay{ID: rec.ID, RequestID: rec.RequestID, CreatedAt: now, Recipe: rec.Recipe, Decision: rec.Decision, Model: rec.Model,
		Status: rec.Status, Record: raw}, bounds: bounds}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return
	}
	select {
	case r.queue <- it:
	default:
		r.dropped.Add(1)
	}
}

// Flush waits until the shadow calls in flight answered and every record
// queued before it is written (or ctx ends).
func (r *Recorder) Flush(ctx context.Context) error {
	if err := r.waitShadows(ctx); err != nil {
		return err
	}
	done := make(chan struct{})
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return nil
	}
	select {
	case r.queue <- item{flush: done}:
		r.mu.RUnlock()
	case <-ctx.Done():
		r.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitShadows waits until no shadow call is in flight (polled: shadows
// are few and Flush and Close rare).
func (r *Recorder) waitShadows(ctx context.Context) error {
	for r.inflight.Load() > 0 {
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Stats reports the counts.
func (r *Recorder) Stats() Stats {
	return Stats{Recorded: r.recorded.Load(), SampledOut: r.sampledOut.Load(), Dropped: r.dropped.Load(), Failed: r.failed.Load(),
		Shadows: r.shadows.Load(), ShadowsSkipped: r.shadowsSkipped.Load()}
}

// Close waits for the shadow calls in flight (each bounded by its
// timeout_ms), writes what is queued and stops the writer.
func (r *Recorder) Close() {
	r.once.Do(func() {
		r.mu.Lock()
		r.closing = true
		r.mu.Unlock()
		_ = r.waitShadows(context.Background())
		r.mu.Lock()
		r.closed = true
		close(r.queue)
		r.mu.Unlock()
		<-r.done
	})
}

func (r *Recorder) write() {
	defer close(r.done)
	var batch []storage.Replay
	var flushes []chan struct{}
	bounds := map[string]storage.ReplayBounds{}
	for it := range r.queue {
		batch, flushes = batch[:0], flushes[:0]
		clear(bounds)
		add := func(it item) {
			if it.flush != nil {
				flushes = append(flushes, it.flush)
				return
			}
			batch = append(batch, it.rep)
			bounds[storage.BoundsKey(it.rep.Recipe, it.rep.Decision)] = it.bounds
		}
		add(it)
	more:
		for len(batch) < r.batch {
			select {
			case next, ok := <-r.queue:
				if !ok {
					break more
				}
				add(next)
			default:
				break more
			}
		}
		if len(batch) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			err := r.store.PutReplays(ctx, batch, bounds)
			cancel()
			if err != nil {
				r.failed.Add(int64(len(batch)))
				if now := time.Now().UnixNano(); now-r.lastWarn.Load() > int64(time.Minute) {
					r.lastWarn.Store(now)
					r.log.Warn("keeping replay records failed (router_replay)", "records", len(batch), "error", err)
				}
			} else {
				r.recorded.Add(int64(len(batch)))
			}
		}
		for _, f := range flushes {
			close(f)
		}
	}
}
