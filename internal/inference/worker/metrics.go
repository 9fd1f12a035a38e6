package worker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the worker's GET /metrics families. Labels never carry request
// content: only endpoint, status, model and outcome names.
type metrics struct {
	requests *prometheus.CounterVec   // endpoint, status
	duration *prometheus.HistogramVec // endpoint
	queue    *prometheus.HistogramVec // model
	forward  *prometheus.HistogramVec // model
	rows     *prometheus.HistogramVec // model
	tokens   *prometheus.HistogramVec // model
	bundle   prometheus.Histogram
	cache    *prometheus.CounterVec // model, outcome
	depth    *prometheus.GaugeVec   // model
	ready    *prometheus.GaugeVec   // model
	info     *prometheus.GaugeVec   // model, task, revision, device, engine
	memory   *prometheus.GaugeVec   // model
	reg      *prometheus.Registry
}

const metricPrefix = "model_runtime_worker_"

func newMetrics(reg *prometheus.Registry) *metrics {
	lat := prometheus.ExponentialBuckets(0.0001, 2, 18) // 100µs .. 13s
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "requests_total",
			Help: "Requests by endpoint and HTTP status."}, []string{"endpoint", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + "request_duration_seconds",
			Help: "Whole request time by endpoint.", Buckets: lat}, []string{"endpoint"}),
		queue: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + "queue_duration_seconds",
			Help: "Time a job waited in its model's queue.", Buckets: lat}, []string{"model"}),
		forward: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + "forward_duration_seconds",
			Help: "Forward pass time.", Buckets: lat}, []string{"model"}),
		rows: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + "batch_rows",
			Help: "Inputs per forward pass.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}, []string{"model"}),
		tokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricPrefix + "batch_tokens",
			Help: "Tokens per forward pass.", Buckets: prometheus.ExponentialBuckets(8, 2, 14)}, []string{"model"}),
		bundle: prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricPrefix + "bundle_tasks",
			Help: "Tasks per bundle request.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPrefix + "result_cache_total",
			Help: "Result cache lookups by model and outcome (hit, miss).", ConstLabels: nil}, []string{"model", "outcome"}),
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricPrefix + "queue_depth",
			Help: "Requests queued per model."}, []string{"model"}),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricPrefix + "ready",
			Help: "1 while the model serves (ready or degraded)."}, []string{"model"}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricPrefix + "model_info",
			Help: "Loaded model description; the value is 1."}, []string{"model", "task", "revision", "device", "engine"}),
		memory: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricPrefix + "model_memory_bytes",
			Help: "Memory the loaded model holds, as its runtime reports it."}, []string{"model"}),
	}
	reg.MustRegister(m.requests, m.duration, m.queue, m.forward, m.rows, m.tokens, m.bundle, m.cache, m.depth, m.ready, m.info, m.memory)
	return m
}

func (m *metrics) hooks(model string, outcome func(error)) batchHooks {
	q, f, r, t, d := m.queue.WithLabelValues(model), m.forward.WithLabelValues(model),
		m.rows.WithLabelValues(model), m.tokens.WithLabelValues(model), m.depth.WithLabelValues(model)
	return batchHooks{
		batch: func(rows, tokens int, fwd time.Duration, err error) {
			f.Observe(fwd.Seconds())
			r.Observe(float64(rows))
			t.Observe(float64(tokens))
			outcome(err)
		},
		queued: func(depth int) { d.Set(float64(depth)) },
		waited: func(w time.Duration) { q.Observe(w.Seconds()) },
	}
}
