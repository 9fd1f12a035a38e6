package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// BackendState is what passive health knows of one upstream backend (the
// standalone gateway's; Envoy keeps its own outlier detection).
type BackendState struct {
	// Backend is the backend's base URL.
	Backend string
	// Ejected: the backend failed too often in a row and is skipped until
	// its cool-down ends.
	Ejected bool
	// ConsecutiveFailures counts connection errors, timeouts and 5xx
	// answers since its last success.
	ConsecutiveFailures int
	// Ejections counts the times it was ejected.
	Ejections uint64
}

// backendCollector emits the passive-health series from the source
// WatchBackends set, read at scrape time (nothing on the request path).
type backendCollector struct {
	ejected, failures, ejections *prometheus.Desc

	mu   sync.Mutex
	read func() []BackendState
}

func newBackendCollector() *backendCollector {
	return &backendCollector{
		ejected:   prometheus.NewDesc("junction_upstream_backend_ejected", "1 while passive health skips the backend (it failed too often in a row and is in its cool-down), else 0.", []string{"backend"}, nil),
		failures:  prometheus.NewDesc("junction_upstream_backend_consecutive_failures", "Connection errors, timeouts and 5xx answers of the backend since its last success.", []string{"backend"}, nil),
		ejections: prometheus.NewDesc("junction_upstream_backend_ejections_total", "Times passive health ejected the backend for a cool-down.", []string{"backend"}, nil),
	}
}

func (c *backendCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.ejected
	ch <- c.failures
	ch <- c.ejections
}

func (c *backendCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	read := c.read
	c.mu.Unlock()
	if read == nil {
		return
	}
	for _, b := range read() {
		ejected := 0.0
		if b.Ejected {
			ejected = 1
		}
		ch <- prometheus.MustNewConstMetric(c.ejected, prometheus.GaugeValue, ejected, b.Backend)
		ch <- prometheus.MustNewConstMetric(c.failures, prometheus.GaugeValue, float64(b.ConsecutiveFailures), b.Backend)
		ch <- prometheus.MustNewConstMetric(c.ejections, prometheus.CounterValue, float64(b.Ejections), b.Backend)
	}
}

// WatchBackends makes the passive-health series read read at every scrape
// (junction_upstream_backend_ejected, _consecutive_failures,
// _ejections_total). read must be cheap and safe for concurrent use.
func (m *Metrics) WatchBackends(read func() []BackendState) {
	if m == nil {
		return
	}
	m.backends.mu.Lock()
	m.backends.read = read
	m.backends.mu.Unlock()
}
