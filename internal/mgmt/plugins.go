package mgmt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/gorilla/mux"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/recipes"
)

// PluginType describes one plugin type a runtime knows.
type PluginType struct {
	Type string
	// Runtime is "native" or "wasm", or "host" for the types the router
	// carries out itself after the answer (router_replay, shadow_dispatch).
	Runtime string
	// Available is false when the type needs a runtime that is not built in;
	// Reason says why.
	Available bool
	Reason    string
}

// PluginRuntime is what the plugin endpoints need of the plugin system: the
// types it knows, configuration checks and a preview run. serve's plugin
// system implements it over the WebAssembly host; NewNativePlugins is the
// default.
type PluginRuntime interface {
	Types() []PluginType
	Validate(ref recipes.PluginRef) error
	// Preview runs refs on req in plugin.ModePreview or plugin.ModeProbe. It
	// must not call a generation backend or persist anything.
	Preview(ctx context.Context, refs []recipes.PluginRef, req *plugin.Request) (plugin.Outcome, error)
}

type nativePlugins struct{ n *plugin.Stage }

// NewNativePlugins is the runtime used when none is given: the built-in
// plugins that call no host function, run natively from their guests' code
// (internal/plugin/native); the other types are unavailable.
func NewNativePlugins() PluginRuntime { return nativePlugins{native.Stage()} }

func (p nativePlugins) Types() []PluginType {
	var out []PluginType
	nat := native.Types()
	slices.Sort(nat)
	for _, t := range nat {
		out = append(out, PluginType{Type: t, Runtime: "native", Available: true})
	}
	for _, t := range plugin.HostSideTypes() {
		out = append(out, PluginType{Type: t, Runtime: "host", Available: true})
	}
	for _, t := range plugin.Types {
		if !slices.Contains(nat, t) && !plugin.IsHostSide(t) {
			out = append(out, PluginType{Type: t, Runtime: "wasm", Reason: "the " + t + " plugin needs the WebAssembly plugin runtime, which is not built into this binary yet"})
		}
	}
	slices.SortFunc(out, func(a, b PluginType) int { return strings.Compare(a.Type, b.Type) })
	return out
}

func (p nativePlugins) Validate(ref recipes.PluginRef) error { return p.n.Validate(ref) }

func (p nativePlugins) Preview(ctx context.Context, refs []recipes.PluginRef, req *plugin.Request) (plugin.Outcome, error) {
	return p.n.Request(ctx, refs, req)
}

// PluginOperation is one operation of a descriptor.
type PluginOperation struct {
	Name   string `json:"name"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Kind is read, preview, probe or mutation.
	Kind string `json:"kind"`
}

// PluginDescriptor describes a plugin type.
type PluginDescriptor struct {
	Type        string            `json:"type"`
	Runtime     string            `json:"runtime"`
	Available   bool              `json:"available"`
	Reason      string            `json:"reason,omitempty"`
	SchemaURL   string            `json:"schema_url"`
	BindingsURL string            `json:"bindings_url"`
	Operations  []PluginOperation `json:"operations"`
}

// PluginList answers GET /api/v1/plugins.
type PluginList struct {
	Plugins []PluginDescriptor `json:"plugins"`
}

func descriptor(t PluginType) PluginDescriptor {
	base := "/api/v1/plugins/" + t.Type
	return PluginDescriptor{Type: t.Type, Runtime: t.Runtime, Available: t.Available, Reason: t.Reason,
		SchemaURL: "/openapi.json?path=" + base + "/preview&method=POST", BindingsURL: base + "/bindings",
		Operations: []PluginOperation{
			{Name: "describe", Method: "GET", Path: base, Kind: "read"},
			{Name: "bindings", Method: "GET", Path: base + "/bindings", Kind: "read"},
			{Name: "preview", Method: "POST", Path: base + "/preview", Kind: "preview"},
			{Name: "probe", Method: "POST", Path: base + "/preview", Kind: "probe"},
			{Name: "configure", Method: "PUT", Path: "/api/v1/config/recipes/{name}", Kind: "mutation"},
		}}
}

func (s *Server) pluginType(name string) (PluginType, error) {
	var known []string
	for _, t := range s.plugins.Types() {
		if t.Type == name {
			return t, nil
		}
		known = append(known, t.Type)
	}
	return PluginType{}, newErr(http.StatusNotFound, CodeNotFound, "no plugin type %q; known: %s", name, strings.Join(known, ", "))
}

func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request) {
	out := PluginList{Plugins: []PluginDescriptor{}}
	for _, t := range s.plugins.Types() {
		out.Plugins = append(out.Plugins, descriptor(t))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getPlugin(w http.ResponseWriter, r *http.Request) {
	t, err := s.pluginType(mux.Vars(r)["type"])
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, descriptor(t))
}

// PluginBinding is one decision's use of a plugin type.
type PluginBinding struct {
	Recipe   string `json:"recipe" oas:"required,minLength=1"`
	Decision string `json:"decision" oas:"required,minLength=1"`
	Index    int    `json:"index"`
	Path     string `json:"path"`
	OnError  string `json:"on_error"`
	// Enabled is the declared enablement: configuration.enabled when present, else true.
	Enabled bool `json:"enabled"`
	// Valid reports the runtime's configuration check; Problem says why not.
	Valid   bool   `json:"valid"`
	Problem string `json:"problem,omitempty"`
	// Reachability is not_applicable for plugins that reach nothing outside
	// the request, unavailable when their runtime is missing.
	Reachability        string `json:"reachability"`
	DependencyAvailable bool   `json:"dependency_available"`
	RuntimeInspected    bool   `json:"runtime_inspected"`
}

// PluginBindings answers GET /api/v1/plugins/{type}/bindings.
type PluginBindings struct {
	Type     string          `json:"type"`
	Bindings []PluginBinding `json:"bindings"`
}

func (s *Server) pluginBindings(w http.ResponseWriter, r *http.Request) {
	t, err := s.pluginType(mux.Vars(r)["type"])
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	gen := s.cfg.Runtime().Current()
	doc := gen.Document()
	if rn := q.Get("recipe"); rn != "" {
		if _, err := recipeIn(gen, rn); err != nil {
			writeError(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, PluginBindings{Type: t.Type, Bindings: s.pluginBindingsOf(t, doc, q.Get("recipe"), q.Get("decision"))})
}

// pluginBindingsOf lists the decisions of doc that use plugin type t (narrowed
// to a recipe and a decision when they are not empty), each checked by the
// runtime.
func (s *Server) pluginBindingsOf(t PluginType, doc *recipes.Document, recipe, decision string) []PluginBinding {
	out := []PluginBinding{}
	for ri, rc := range doc.Recipes {
		if recipe != "" && recipe != rc.Name {
			continue
		}
		for di, d := range rc.Decisions {
			if decision != "" && decision != d.Name {
				continue
			}
			for pi, p := range d.Plugins {
				if p.Type != t.Type {
					continue
				}
				b := PluginBinding{Recipe: rc.Name, Decision: d.Name, Index: pi, Path: fmt.Sprintf("/recipes/%d/decisions/%d/plugins/%d", ri, di, pi),
					OnError: p.OnError, Enabled: declaredEnabled(p.Configuration), DependencyAvailable: t.Available, RuntimeInspected: t.Available}
				if b.OnError == "" {
					b.OnError = recipes.OnErrorSkip
				}
				b.Reachability = "not_applicable"
				if !t.Available {
					b.Reachability = "unavailable"
					b.Problem = t.Reason
				} else if err := s.plugins.Validate(p); err != nil {
					b.Problem = err.Error()
				} else {
					b.Valid = true
				}
				out = append(out, b)
			}
		}
	}
	return out
}

func declaredEnabled(raw json.RawMessage) bool {
	var v struct {
		Enabled *bool `json:"enabled"`
	}
	if json.Unmarshal(raw, &v) == nil && v.Enabled != nil {
		return *v.Enabled
	}
	return true
}

// PluginPreviewRequest is POST /api/v1/plugins/{type}/preview.
type PluginPreviewRequest struct {
	// Mode is preview (default) or probe; a preview never escalates.
	Mode string `json:"mode,omitempty" oas:"enum=preview|probe"`
	// Configuration is a typed candidate configuration of this plugin type, checked against the type's own
	// JSON Schema (GET /api/v1/plugins/{type}, config_schema). Guard, RAG and tool types (rag, tools,
	// tool_selection, hallucination, response_jailbreak) refuse it and need binding.
	Configuration json.RawMessage `json:"configuration,omitempty" oas:"oneof=plugin,object"`
	// Binding names an active binding instead.
	Binding *PreviewBinding `json:"binding,omitempty" oas:"oneof=plugin"`
	// Request is the chat completion request to run the plugin on.
	Request json.RawMessage `json:"request" oas:"required,object"`
	// SuppliedContext is what a rag preview injects instead of retrieving
	// (an array of strings or {text, source, score}); it wins over a
	// supplied_context inside request.
	SuppliedContext json.RawMessage `json:"supplied_context,omitempty"`
	// SuppliedMemories is what a memory preview injects instead of
	// recalling (an array of strings); it wins over one inside request.
	SuppliedMemories json.RawMessage `json:"supplied_memories,omitempty"`
}

// previewInputs are the top-level fields of a preview body the plugins read
// from the request (a plugin removes its own from the body in every mode, so
// they never reach a backend).
var previewInputs = []string{"supplied_context", "supplied_memories"}

// previewNeedsBinding reports whether a plugin type previews only an active
// binding (the spec: guard, RAG and tool previews need binding).
func previewNeedsBinding(pluginType string) bool {
	switch pluginType {
	case "rag", "tools", "tool_selection", "hallucination", "response_jailbreak":
		return true
	}
	return false
}

// PreviewBinding names an active binding.
type PreviewBinding struct {
	Recipe   string `json:"recipe"`
	Decision string `json:"decision"`
}

// PluginPreviewResponse describes what the plugin would do.
type PluginPreviewResponse struct {
	Type         string          `json:"type"`
	Mode         string          `json:"mode"`
	Persisted    bool            `json:"persisted"`
	BackendCalls int             `json:"backend_calls"`
	Reports      []PluginReport  `json:"reports"`
	Request      json.RawMessage `json:"request,omitempty"`
	Headers      map[string]any  `json:"headers"`
	Immediate    *ImmediateView  `json:"immediate,omitempty"`
	// Signals are the signals the request matched ("kind:name"), which the
	// plugin saw, as in live traffic.
	Signals []string `json:"signals"`
	// PIISpans counts the personal-data spans the router detected and handed
	// to the plugin (the pii_spans host function).
	PIISpans int `json:"pii_spans"`
}

// PluginReport is what one plugin did.
type PluginReport struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// ImmediateView is an answer a plugin gave without a backend.
type ImmediateView struct {
	Status  int    `json:"status"`
	Content string `json:"content"`
}

func (s *Server) pluginPreview(w http.ResponseWriter, r *http.Request) {
	t, err := s.pluginType(mux.Vars(r)["type"])
	if err != nil {
		writeError(w, err)
		return
	}
	var req PluginPreviewRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	mode := req.Mode
	switch mode {
	case "", plugin.ModePreview:
		mode = plugin.ModePreview
	case plugin.ModeProbe:
		if !principalOf(r.Context()).Has(PermClassifyInvoke) {
			writeError(w, newErr(http.StatusForbidden, CodeForbidden, "mode probe needs permission %s", PermClassifyInvoke))
			return
		}
	default:
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "mode must be preview or probe (got %q)", req.Mode))
		return
	}
	// RAG and memory previews read stored data.
	if (t.Type == "rag" || t.Type == "memory") && !principalOf(r.Context()).Has(PermDataRead) {
		writeError(w, newErr(http.StatusForbidden, CodeForbidden, "previewing %s needs permission %s", t.Type, PermDataRead))
		return
	}
	if !t.Available {
		e := newErr(http.StatusServiceUnavailable, CodeServiceUnavailable, "%s", t.Reason)
		e.body.Status = "unavailable"
		writeError(w, e)
		return
	}
	if req.Binding == nil && previewNeedsBinding(t.Type) {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput,
			"a %s preview needs binding {recipe, decision}: guard, RAG and tool previews run an active binding's policy, not a candidate configuration (GET /api/v1/plugins/%s/bindings lists them)", t.Type, t.Type))
		return
	}
	if (req.Configuration == nil) == (req.Binding == nil) {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "give either configuration (a candidate) or binding {recipe, decision}"))
		return
	}
	if len(req.Request) == 0 {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "request (a chat completion request) is required"))
		return
	}
	var refs []recipes.PluginRef
	decision := "preview"
	gen := s.cfg.Runtime().Current()
	recipeName := "" // a candidate is previewed in the default recipe's context
	if req.Binding != nil {
		rc, err := recipeIn(gen, req.Binding.Recipe)
		if err != nil {
			writeError(w, err)
			return
		}
		idx := slices.IndexFunc(rc.Decisions, func(d recipes.Decision) bool { return d.Name == req.Binding.Decision })
		if idx < 0 {
			writeError(w, newErr(http.StatusNotFound, CodeNotFound, "recipe %q has no decision %q", rc.Name, req.Binding.Decision))
			return
		}
		for _, p := range rc.Decisions[idx].Plugins {
			if p.Type == t.Type {
				refs = append(refs, p)
			}
		}
		if len(refs) == 0 {
			writeError(w, newErr(http.StatusNotFound, CodeNotFound, "decision %q of recipe %q has no %s plugin", req.Binding.Decision, rc.Name, t.Type))
			return
		}
		decision = req.Binding.Decision
		recipeName = rc.Name
	} else {
		ref := recipes.PluginRef{Type: t.Type, Configuration: req.Configuration, OnError: recipes.OnErrorFail}
		if err := s.plugins.Validate(ref); err != nil {
			var fe interface{ FieldPath() string }
			path := "/configuration"
			if errors.As(err, &fe) && fe.FieldPath() != "" {
				path = "/" + strings.ReplaceAll(strings.NewReplacer("[", ".", "]", "").Replace(fe.FieldPath()), ".", "/")
			}
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "the candidate configuration is invalid").withReasons([]Reason{{Stage: "validate", Code: recipes.CodeInvalidValue, Path: path, Message: err.Error()}}))
			return
		}
		refs = []recipes.PluginRef{ref}
	}
	cr, err := chat.Parse(req.Request)
	if err != nil {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "request: %v", err))
		return
	}
	for name, v := range map[string]json.RawMessage{"supplied_context": req.SuppliedContext, "supplied_memories": req.SuppliedMemories} {
		if len(v) == 0 || string(v) == "null" {
			continue
		}
		if err := cr.Set(name, v); err != nil {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "%s: %v", name, err))
			return
		}
	}
	preq := &plugin.Request{Chat: cr, Header: http.Header{}, Decision: decision, Mode: mode}
	// The plugin sees what live traffic would give it: the signals this
	// request matches and the personal data the router detects in it, from
	// routing it (signals only; no backend, no plugins).
	in := dataplane.Input(cr)
	if err := checkText(r, "the request", strings.Join(in.AllTexts, "\n")); err != nil {
		writeError(w, err)
		return
	}
	routed, err := gen.Route(r.Context(), recipeName, &engine.Request{Model: engine.ModelMoM, Input: in})
	if err != nil {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "routing the request for its signals: %v", err))
		return
	}
	preq.Signals = dataplane.MatchedSignals(routed)
	if routed.PII.Scanned {
		if preq.PII, err = dataplane.LocatePII(cr, &routed.PII); err != nil {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "placing the detected personal data in the request: %v", err))
			return
		}
	}
	resp := PluginPreviewResponse{Type: t.Type, Mode: mode, Persisted: false, BackendCalls: 0, Reports: []PluginReport{}, Headers: map[string]any{},
		Signals: []string{}}
	for _, sig := range preq.Signals {
		resp.Signals = append(resp.Signals, sig.Kind+":"+sig.Name)
	}
	if preq.PII != nil {
		resp.PIISpans = len(preq.PII.Spans) // before the stage keeps them in step with the plugin's edits
	}
	out, err := s.plugins.Preview(r.Context(), refs, preq)
	for _, rep := range out.Reports {
		resp.Reports = append(resp.Reports, PluginReport{Type: rep.Type, Status: rep.Status, Detail: rep.Detail})
		if m := rep.Module; m != nil {
			// The module host counts what each plugin did in its mode.
			resp.BackendCalls += m.BackendCalls
			resp.Persisted = resp.Persisted || m.Persisted
		}
	}
	if err != nil && len(resp.Reports) == 0 {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "%v", err))
		return
	}
	for _, name := range previewInputs {
		cr.Delete(name) // an input of the preview, not part of the request
	}
	if body, err := cr.Encode(); err == nil {
		resp.Request = body
	}
	secret := principalOf(r.Context()).Has(PermSecretView)
	for k, v := range preq.Header {
		if secret {
			resp.Headers[k] = strings.Join(v, ", ")
		} else {
			resp.Headers[k] = redacted
		}
	}
	if out.Immediate != nil {
		resp.Immediate = &ImmediateView{Status: out.Immediate.Status, Content: out.Immediate.Content}
	}
	writeJSON(w, http.StatusOK, resp)
}

// Capabilities describe a plugin service.
type Capabilities struct {
	Type      string   `json:"type"`
	Available bool     `json:"available"`
	Reason    string   `json:"reason,omitempty"`
	Features  []string `json:"features"`
}

func (s *Server) compressionCapabilities(w http.ResponseWriter, r *http.Request) {
	t, err := s.pluginType("context_compression")
	if err != nil {
		writeError(w, err)
		return
	}
	c := Capabilities{Type: t.Type, Available: t.Available, Reason: t.Reason, Features: []string{}}
	if t.Available {
		c.Features = []string{"preview", "health"}
		if _, ok := s.plugins.(PluginStatsReader); ok {
			c.Features = append(c.Features, "stats")
		}
	}
	writeJSON(w, http.StatusOK, c)
}
