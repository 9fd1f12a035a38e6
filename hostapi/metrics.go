package hostapi

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metrics are the host's own series. The spec names no plugin metric, so the
// names follow the project's junction_ prefix.
type metrics struct {
	faults *prometheus.CounterVec
}

// MetricFaults counts module faults by plugin type and kind (trap, exit,
// deadline, memory, output, malformed, instantiate). A call cut short because
// the client went away discards its instance but is not counted.
const MetricFaults = "junction_plugin_faults_total"

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{faults: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricFaults,
		Help: "Plugin module faults (the instance was discarded), by plugin type and fault kind.",
	}, []string{"type", "kind"})}
	if reg != nil {
		if err := reg.Register(m.faults); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				if c, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
					m.faults = c
					return m, nil
				}
			}
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) fault(typ, kind string) { m.faults.WithLabelValues(typ, kind).Inc() }

// Faults returns how many faults of kind the plugin type has had.
func (h *Host) Faults(typ, kind string) float64 {
	c, err := h.metrics.faults.GetMetricWithLabelValues(typ, kind)
	if err != nil {
		return 0
	}
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}
