package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// children caches a vector's children by label values. WithLabelValues
// validates and hashes every label and takes the vector's lock on every call;
// a request records about ten series, always among the same few label sets
// (endpoints, decisions, models and reasons are bounded by the
// configuration), so each label set is resolved once and then found in a
// plain map. A child is created only when first recorded, exactly when
// WithLabelValues would have created it, so the exposition is unchanged.
type children[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

func (c *children[K, V]) get(k K, create func() V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = create() // may panic on invalid label values, as WithLabelValues does
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[K]V)
	}
	c.m[k] = v
	c.mu.Unlock()
	return v
}

type requestKey struct {
	endpoint, category string
	status             int
}

func (m *Metrics) requestCounter(endpoint, category string, status int) prometheus.Counter {
	return m.requestsC.get(requestKey{endpoint, category, status}, func() prometheus.Counter {
		return m.requests.WithLabelValues(endpoint, category, strconv.Itoa(status))
	})
}

func (m *Metrics) durationObserver(endpoint string) prometheus.Observer {
	return m.requestDurationC.get(endpoint, func() prometheus.Observer {
		return m.requestDuration.WithLabelValues(endpoint)
	})
}

func (m *Metrics) reasonCodeCounter(reasonCode, model string) prometheus.Counter {
	return m.reasonCodesC.get([2]string{reasonCode, model}, func() prometheus.Counter {
		return m.reasonCodes.WithLabelValues(reasonCode, model)
	})
}

func (m *Metrics) reasoningCounter(category, model string, enabled bool, effort string) prometheus.Counter {
	return m.reasoningDecisionsC.get(reasoningKey{category, model, effort, enabled}, func() prometheus.Counter {
		return m.reasoningDecisions.WithLabelValues(category, model, strconv.FormatBool(enabled), effort)
	})
}

type reasoningKey struct {
	category, model, effort string
	enabled                 bool
}

func (m *Metrics) errorCounter(model, reason string) prometheus.Counter {
	return m.requestErrorsC.get([2]string{model, reason}, func() prometheus.Counter {
		return m.requestErrors.WithLabelValues(model, reason)
	})
}

// modelCounter and modelObserver resolve the per-model series.
func modelCounter(vec *prometheus.CounterVec, c *children[string, prometheus.Counter], model string) prometheus.Counter {
	return c.get(model, func() prometheus.Counter { return vec.WithLabelValues(model) })
}

func modelObserver(vec *prometheus.HistogramVec, c *children[string, prometheus.Observer], model string) prometheus.Observer {
	return c.get(model, func() prometheus.Observer { return vec.WithLabelValues(model) })
}

func (m *Metrics) costCounter(model, currency string) prometheus.Counter {
	return m.modelCostC.get([2]string{model, currency}, func() prometheus.Counter {
		return m.modelCost.WithLabelValues(model, currency)
	})
}
