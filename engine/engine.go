// Package engine is Junction's request pipeline: it compiles a configuration
// into an immutable Generation and, for each request, computes the recipe's
// signals, evaluates its decisions, selects a model and resolves the reasoning
// mode. It never talks to a backend: the data-plane adapters (internal/gateway for
// HTTP, internal/extproc for Envoy) do that with the Result it returns, so both
// front ends route through the same code and a preview explains exactly what the
// live path would do.
package engine

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/engine/selection"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// Routing model names: they ask Junction to choose.
const (
	ModelMoM  = "MoM"
	ModelAuto = "auto"
)

// Reason codes, as llm_routing_reason_codes_total labels them.
const (
	ReasonAutoRouting         = "auto_routing"
	ReasonDefaultModel        = "default_model"
	ReasonModelSpecified      = "model_specified"
	ReasonPIIAlternative      = "pii_policy_alternative_selected"
	ReasonSecurityBlocked     = "security_blocked"
	defaultServedSignalBudget = 45 * time.Second
)

// ErrUnknownModel is returned for a request naming a model that is neither a
// routing name nor configured.
var ErrUnknownModel = errors.New("unknown model")

// ErrUnknownRecipe is returned when a listener or preview names a missing recipe.
var ErrUnknownRecipe = errors.New("unknown recipe")

// IsRoutingName reports whether model asks Junction to choose.
func IsRoutingName(model string) bool {
	return model == ModelMoM || strings.EqualFold(model, ModelAuto)
}

// Options are what a Generation needs beyond the document.
type Options struct {
	// Models supplies model-backed signals; nil fields use lexical fallbacks.
	Models signal.Models
	// Health tells the selector which models have a usable backend; nil means all.
	Health selection.Health
	// Plugins checks each decision plugin's configuration; nil skips the check.
	Plugins PluginValidator
	// Language is a language detector to share across generations (lingua's
	// models take a while to load); it must know every language the
	// document's language signals name. Nil builds one per recipe.
	Language *signal.LanguageDetector
}

// PluginValidator checks one decision plugin's configuration. An error that
// implements FieldError names the offending field inside the plugin reference.
type PluginValidator interface {
	Validate(ref recipes.PluginRef) error
}

// FieldError is an error that knows which field of a plugin reference it is
// about, as a dotted path with [i] indexes ("configuration.add[1].name").
type FieldError interface {
	error
	FieldPath() string
}

// Generation is everything compiled from one configuration version. It is
// immutable once built and safe for concurrent use; a request keeps the
// generation it started on even when a newer one is activated.
type Generation struct {
	doc           *recipes.Document
	hash          string
	recipes       map[string]*compiledRecipe
	defaultRecipe string
	models        map[string]*recipes.Model
	health        selection.Health
	signalTimeout time.Duration
	bindings      signal.Models
	language      *signal.LanguageDetector
}

// Document returns the configuration this generation was compiled from.
func (g *Generation) Document() *recipes.Document { return g.doc }

// Hash returns the configuration hash this generation was compiled from.
func (g *Generation) Hash() string { return g.hash }

// Model returns a configured model.
func (g *Generation) Model(name string) (*recipes.Model, bool) {
	m, ok := g.models[name]
	return m, ok
}

// Models returns the model bindings the generation was compiled with (nil
// fields: the lexical fallbacks, built per recipe). Diagnostics use them so a
// call runs on the same models as the routing it explains.
func (g *Generation) Models() signal.Models { return g.bindings }

// Language returns the shared language detector the generation was compiled
// with, or nil when each recipe built its own.
func (g *Generation) Language() *signal.LanguageDetector { return g.language }

// DefaultRecipe is the recipe used when a listener or request names none.
func (g *Generation) DefaultRecipe() string { return g.defaultRecipe }

// Runtime holds the serving generation and swaps it atomically.
type Runtime struct {
	cur atomic.Pointer[Generation]
	mu  sync.Mutex // serialises activations
}

// NewRuntime returns a runtime serving g.
func NewRuntime(g *Generation) *Runtime {
	r := &Runtime{}
	r.cur.Store(g)
	return r
}

// Current returns the serving generation; hold on to it for the whole request.
func (r *Runtime) Current() *Generation { return r.cur.Load() }

// Activate makes g the serving generation and returns the one it replaced.
func (r *Runtime) Activate(g *Generation) *Generation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Swap(g)
}
