package metrics

import "github.com/prometheus/client_golang/prometheus"

// LocalModels holds the metrics of the models serve loads into its own
// process (ONNX Runtime, the default signal models, lingua's language
// detector): which are loaded now and how often each was loaded, so that an
// operator (and a test) sees that a configuration which needs none loads
// none, and that a model is released when no configuration uses it. Every
// method is a no-op on a nil receiver.
type LocalModels struct {
	loaded *prometheus.GaugeVec
	loads  *prometheus.CounterVec
	memo   *prometheus.CounterVec
	// hit and miss are memo's two series, resolved once: counted per request.
	hit, miss prometheus.Counter
}

// NewLocalModels creates the metrics on reg (nil: unregistered).
func NewLocalModels(reg prometheus.Registerer) *LocalModels {
	m := &LocalModels{
		loaded: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "router_local_model_loaded",
			Help: "1 while the in-process model (onnxruntime, a default signal model, lingua) is loaded, else 0."}, []string{"model"}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "router_local_model_loads_total",
			Help: "Times the in-process model was loaded (a configuration that first needed it was compiled)."}, []string{"model"}),
		memo: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "router_local_model_embed_memo_total",
			Help: "Single-text calls of the in-process embedding model, by result: hit (answered from the memo of recent texts) or miss (the model ran)."}, []string{"result"}),
	}
	m.hit, m.miss = m.memo.WithLabelValues("hit"), m.memo.WithLabelValues("miss")
	if reg != nil {
		reg.MustRegister(m.loaded, m.loads, m.memo)
	}
	return m
}

// Loaded records model loaded (true) or released (false).
func (m *LocalModels) Loaded(model string, loaded bool) {
	if m == nil {
		return
	}
	v := 0.0
	if loaded {
		v = 1
		m.loads.WithLabelValues(model).Inc()
	}
	m.loaded.WithLabelValues(model).Set(v)
}

// EmbedMemo counts a single-text embedding call answered from the memo
// (hit) or by the model.
func (m *LocalModels) EmbedMemo(hit bool) {
	if m == nil {
		return
	}
	if hit {
		m.hit.Inc()
	} else {
		m.miss.Inc()
	}
}
