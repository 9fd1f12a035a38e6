package gateway

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/recipes"
)

// Health is a passive backend health tracker: it learns from the requests the
// gateway forwards, not from probes. A backend that fails Threshold times in a
// row (connection errors, timeouts, 5xx answers) is unhealthy for Cooldown;
// the first success resets it. After the cooldown one request is let through
// again, and its outcome decides.
//
// It implements selection.Health: a model is healthy when any of its backends
// is. Models it knows nothing about are healthy, so a fresh process routes as
// configured until evidence says otherwise.
type Health struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time

	mu       sync.RWMutex
	backends map[string]*backendHealth
	models   map[string][]string // model name -> backend keys
	// ejections counts each backend's ejections (kept after it recovers).
	ejections map[string]uint64
}

type backendHealth struct {
	failures  int
	downUntil time.Time
}

// Health defaults.
const (
	DefaultFailureThreshold = 3
	DefaultCooldown         = 10 * time.Second
)

// NewHealth returns a tracker; zero arguments take the defaults.
func NewHealth(threshold int, cooldown time.Duration) *Health {
	if threshold <= 0 {
		threshold = DefaultFailureThreshold
	}
	if cooldown <= 0 {
		cooldown = DefaultCooldown
	}
	return &Health{
		threshold: threshold,
		cooldown:  cooldown,
		now:       time.Now,
		backends:  map[string]*backendHealth{},
		models:    map[string][]string{},
		ejections: map[string]uint64{},
	}
}

// SetModels replaces the model-to-backend map, for a newly activated
// configuration. Backend states are kept: they are keyed by backend, and a
// backend that was down is still down after a reload.
func (h *Health) SetModels(models []recipes.Model) {
	m := make(map[string][]string, len(models))
	for i := range models {
		m[models[i].Name] = backendKeys(&models[i])
	}
	h.mu.Lock()
	h.models = m
	h.mu.Unlock()
}

// learn records model's backends when the map does not have them yet, so that
// Healthy works even when nobody called SetModels.
func (h *Health) learn(m *recipes.Model) {
	keys := backendKeys(m)
	h.mu.RLock()
	known := slices.Equal(h.models[m.Name], keys)
	h.mu.RUnlock()
	if known {
		return
	}
	h.mu.Lock()
	h.models[m.Name] = keys
	h.mu.Unlock()
}

// Healthy implements selection.Health.
func (h *Health) Healthy(model string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	keys, ok := h.models[model]
	if !ok || len(keys) == 0 {
		return true
	}
	now := h.now()
	for _, k := range keys {
		if h.backendHealthyLocked(k, now) {
			return true
		}
	}
	return false
}

// BackendHealthy reports whether the backend with key (see backendKey) may be
// tried.
func (h *Health) BackendHealthy(key string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.backendHealthyLocked(key, h.now())
}

func (h *Health) backendHealthyLocked(key string, now time.Time) bool {
	b, ok := h.backends[key]
	return !ok || !now.Before(b.downUntil)
}

// Success records a backend answer that was not a server failure.
func (h *Health) Success(key string) {
	h.mu.RLock()
	b, ok := h.backends[key]
	clean := !ok || (b.failures == 0 && b.downUntil.IsZero())
	h.mu.RUnlock()
	if clean {
		return // the common case takes no write lock
	}
	h.mu.Lock()
	delete(h.backends, key)
	h.mu.Unlock()
}

// Failure records a connection error, timeout or 5xx answer.
func (h *Health) Failure(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.backends[key]
	if !ok {
		b = &backendHealth{}
		h.backends[key] = b
	}
	b.failures++
	if b.failures >= h.threshold {
		if now := h.now(); !now.Before(b.downUntil) {
			h.ejections[key]++ // a new ejection, not a failed probe of one
		}
		b.downUntil = h.now().Add(h.cooldown)
		// Count again from zero after the cooldown: one more failure of the
		// probe request should not wait for Threshold more.
		b.failures = h.threshold - 1
	}
}

// Snapshot is every backend of the configured models (and any other that
// failed), sorted, with what passive health knows of it: for the metrics
// (metrics.WatchBackends) and the management status document.
func (h *Health) Snapshot() []metrics.BackendState {
	h.mu.RLock()
	defer h.mu.RUnlock()
	now := h.now()
	seen := map[string]bool{}
	var out []metrics.BackendState
	add := func(k string) {
		if seen[k] {
			return
		}
		seen[k] = true
		st := metrics.BackendState{Backend: k, Ejections: h.ejections[k]}
		if b, ok := h.backends[k]; ok {
			st.ConsecutiveFailures = b.failures
			st.Ejected = now.Before(b.downUntil)
			if st.Ejected {
				// Failure keeps one below the threshold so that a failed
				// probe after the cool-down ejects again at once; report
				// what happened.
				st.ConsecutiveFailures = h.threshold
			}
		}
		out = append(out, st)
	}
	for _, keys := range h.models {
		for _, k := range keys {
			add(k)
		}
	}
	for k := range h.backends {
		add(k)
	}
	slices.SortFunc(out, func(a, b metrics.BackendState) int { return strings.Compare(a.Backend, b.Backend) })
	return out
}
