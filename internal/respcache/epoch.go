package respcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/junction-router/junction/plugins/responsecache"
	"github.com/junction-router/junction/recipes"
)

// ScopeOf is the scope of the answers a decision of a recipe gets from a
// model under doc. Its epoch hashes (canonical JSON, sha256) what shapes
// those answers besides the request itself:
//
//   - the decision's plugin chain, in order, with each plugin's
//     configuration, error policy and module pin (response_cache plugins
//     by their place only: their own settings change how entries are
//     found, not what an answer says);
//   - the decision's modelRef of the selected model (use_reasoning,
//     reasoning_effort), and the model's configuration: reasoning family
//     (and that family's syntax), API format and backend_refs (base URL,
//     provider, chat path, extra headers, key variable), plus the
//     providers' default reasoning effort;
//   - with the response_cache plugin's scope.model off, where one model's
//     answer serves another's requests, every model of the decision.
//
// Not in it: the decision's name, priority and rules, other decisions,
// signals, listeners, prices, timeouts and personal-data policies. The
// recipe is in the scope unless the plugin's scope.recipe is off.
func ScopeOf(doc *recipes.Document, recipe, decision, model string) Scope {
	in := epochInput{V: 1}
	perModel, perRecipe := true, true
	var d *recipes.Decision
	if r, ok := doc.Recipe(recipe); ok {
		for i := range r.Decisions {
			if r.Decisions[i].Name == decision {
				d = &r.Decisions[i]
				break
			}
		}
	}
	if d != nil {
		for _, p := range d.Plugins {
			if p.Type == responsecache.Type {
				in.Plugins = append(in.Plugins, epochPlugin{Type: p.Type})
				if c, err := responsecache.ParseConfig(p.Configuration); err == nil {
					perModel = *c.Scope.Model
					perRecipe = *c.Scope.Recipe
				}
				continue
			}
			in.Plugins = append(in.Plugins, epochPlugin{Type: p.Type, Configuration: canonical(p.Configuration), OnError: p.OnError, Module: p.Module})
		}
	}
	models := []string{model}
	if d != nil && !perModel {
		models = models[:0]
		for _, ref := range d.ModelRefs {
			models = append(models, ref.Model)
		}
	}
	for _, name := range models {
		if d != nil {
			for _, ref := range d.ModelRefs {
				if ref.Model == name {
					in.Refs = append(in.Refs, ref)
				}
			}
		}
		m := epochModel{Name: name}
		if cfg, ok := doc.Model(name); ok {
			m.ReasoningFamily, m.APIFormat = cfg.ReasoningFamily, cfg.APIFormat
			if fam, ok := doc.Providers.ReasoningFamilies[cfg.ReasoningFamily]; ok {
				m.Family = &fam
			}
			for _, b := range cfg.BackendRefs {
				m.Backends = append(m.Backends, epochBackend{BaseURL: b.BaseURL, Provider: b.Provider, ChatPath: b.ChatPath,
					ExtraHeaders: b.ExtraHeaders, APIKeyEnv: b.APIKeyEnv})
			}
		}
		in.Models = append(in.Models, m)
	}
	in.DefaultEffort = doc.Providers.Defaults.DefaultReasoningEffort
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	s := Scope{Epoch: hex.EncodeToString(sum[:8])}
	if perRecipe {
		s.Recipe = recipe
	}
	s.sfx = s.suffix()
	return s
}

type epochInput struct {
	V             int           `json:"v"`
	Plugins       []epochPlugin `json:"plugins"`
	Refs          []recipes.ModelRef
	Models        []epochModel
	DefaultEffort string
}

type epochPlugin struct {
	Type          string
	Configuration any
	OnError       string
	Module        *recipes.PluginModule
}

type epochModel struct {
	Name            string
	ReasoningFamily string
	Family          *recipes.ReasoningFamily
	APIFormat       string
	Backends        []epochBackend
}

type epochBackend struct {
	BaseURL, Provider, ChatPath string
	ExtraHeaders                map[string]string
	APIKeyEnv                   string
}

// canonical decodes a configuration so that its encoding does not depend
// on member order or spacing.
func canonical(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return v
}

// Epochs memoises ScopeOf for the configuration serving now: a request
// finds its scope with one map read. A request still on an older document
// computes it (a reload is rare).
type Epochs struct {
	cur atomic.Pointer[docEpochs]
}

type docEpochs struct {
	doc *recipes.Document
	mu  sync.RWMutex
	m   map[epochKey]Scope
}

type epochKey struct{ recipe, decision, model string }

// Scope is ScopeOf(doc, recipe, decision, model), memoised (a nil Epochs
// memoises nothing).
func (e *Epochs) Scope(doc *recipes.Document, recipe, decision, model string) Scope {
	if e == nil {
		return ScopeOf(doc, recipe, decision, model)
	}
	cur := e.cur.Load()
	if cur == nil || cur.doc != doc {
		next := &docEpochs{doc: doc, m: map[epochKey]Scope{}}
		if !e.cur.CompareAndSwap(cur, next) {
			if cur = e.cur.Load(); cur == nil || cur.doc != doc {
				return ScopeOf(doc, recipe, decision, model)
			}
		} else {
			cur = next
		}
	}
	k := epochKey{recipe, decision, model}
	cur.mu.RLock()
	s, ok := cur.m[k]
	cur.mu.RUnlock()
	if ok {
		return s
	}
	s = ScopeOf(doc, recipe, decision, model)
	cur.mu.Lock()
	cur.m[k] = s
	cur.mu.Unlock()
	return s
}
