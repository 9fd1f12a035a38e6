package gateway

import (
	"slices"
	"sync"
	"time"

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
		b.downUntil = h.now().Add(h.cooldown)
		// Count again from zero after the cooldown: one more failure of the
		// probe request should not wait for Threshold more.
		b.failures = h.threshold - 1
	}
}
