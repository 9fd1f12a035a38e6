package mgmt

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/junction-router/junction/recipes"
)

// ValidateResponse answers POST /api/v1/config/validate and recipe validation.
type ValidateResponse struct {
	Valid                bool     `json:"valid"`
	Reasons              []Reason `json:"reasons"`
	SourceConfigHash     string   `json:"source_config_hash,omitempty"`
	GeneratedRuntimeHash string   `json:"generated_runtime_hash,omitempty"`
	// Normalized is the document with defaults applied, as the engine would run it.
	Normalized any `json:"normalized,omitempty"`
}

// PlanResponse answers POST /api/v1/config/plan.
type PlanResponse struct {
	CurrentETag   string   `json:"current_etag"`
	CandidateETag string   `json:"candidate_etag"`
	Changed       bool     `json:"changed"`
	Sections      []string `json:"changed_sections"`
	Valid         bool     `json:"valid"`
	Reasons       []Reason `json:"reasons"`
}

// VersionsResponse answers GET /api/v1/config/versions.
type VersionsResponse struct {
	Versions []HistoryEntry `json:"versions"`
}

// RollbackRequest names the version to restore: version (the history
// version number, or its RFC 3339 timestamp) or config_version.
type RollbackRequest struct {
	// Version is a number (the history version) or a string (that number, or
	// the entry's RFC 3339 timestamp).
	Version       any    `json:"version,omitempty" oas:"oneof=which"`
	ConfigVersion *int64 `json:"config_version,omitempty" oas:"oneof=which"`
}

// RecipeList answers GET /api/v1/config/recipes.
type RecipeList struct {
	Recipes []RecipeSummary `json:"recipes"`
	// Entrypoints maps each listener to the recipe it routes with.
	Entrypoints   map[string]string `json:"entrypoints"`
	DefaultRecipe string            `json:"default_recipe"`
}

// RecipeSummary is one recipe of the list.
type RecipeSummary struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Decisions   int      `json:"decisions"`
	Signals     int      `json:"signals"`
	Default     bool     `json:"default"`
	Listeners   []string `json:"listeners"`
}

// RecipeValidateRequest validates putting (or, with delete, removing) a recipe.
type RecipeValidateRequest struct {
	Name   string          `json:"name" oas:"required,minLength=1"`
	Recipe json.RawMessage `json:"recipe,omitempty" oas:"oneof=what,object"`
	Delete bool            `json:"delete,omitempty" oas:"oneof=what,true"`
}

// setConfigHeaders sets the ETag of the document the answer was built from
// (read with it, atomically: a later ETag on older content would let a
// read-modify-write lose a concurrent update) and the serving identity.
func (s *Server) setConfigHeaders(w http.ResponseWriter, etag string) {
	w.Header().Set("ETag", etag)
	w.Header().Set("X-Router-Config-Version", strconv.FormatInt(s.cfg.ConfigVersion(), 10))
	w.Header().Set("X-Router-Config-Hash", s.cfg.Runtime().Current().Hash())
}

func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) {
	src, _, etag := s.cfg.persisted()
	v, err := decodeGeneric(src)
	if err != nil {
		writeError(w, err)
		return
	}
	if !principalOf(r.Context()).Has(PermSecretView) {
		redactDocument(v)
	}
	s.setConfigHeaders(w, etag)
	writeJSON(w, http.StatusOK, v)
}

type checkOnlyKey struct{}

// WithCheckOnly marks a compile that only checks a candidate (validate,
// plan): the compile func should start nothing for it (no workers).
func WithCheckOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, checkOnlyKey{}, true)
}

// CheckOnly reports whether a compile only checks a candidate.
func CheckOnly(ctx context.Context) bool {
	v, _ := ctx.Value(checkOnlyKey{}).(bool)
	return v
}

// candidateOf parses a document body and compiles it, without activating.
func (s *Server) checkCandidate(r *http.Request, raw []byte) ValidateResponse {
	doc, canon, err := recipes.ParseSource(raw)
	if err != nil {
		stage := "validate"
		if ve, ok := recipes.AsValidationError(err); ok && len(ve.Problems) > 0 {
			stage = ve.Problems[0].Stage()
		}
		return ValidateResponse{Reasons: reasonsOf(stage, err)}
	}
	out := ValidateResponse{Reasons: []Reason{}, SourceConfigHash: recipes.HashBytes(canon), GeneratedRuntimeHash: recipes.Hash(doc)}
	if _, err := s.cfg.opts.Compile(WithCheckOnly(r.Context()), doc, out.SourceConfigHash); err != nil {
		out.Reasons = reasonsOf("compile", err)
		return out
	}
	out.Valid = true
	norm, _ := recipes.Canonical(doc)
	if v, err := decodeGeneric(norm); err == nil {
		if !principalOf(r.Context()).Has(PermSecretView) {
			redactDocument(v)
		}
		out.Normalized = v
	}
	return out
}

func (s *Server) validateConfig(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.checkCandidate(r, raw))
}

func (s *Server) planConfig(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	cur, curDoc, etag := s.cfg.persisted()
	_ = cur
	check := s.checkCandidate(r, raw)
	out := PlanResponse{CurrentETag: etag, Valid: check.Valid, Reasons: check.Reasons, Sections: []string{}}
	if check.SourceConfigHash != "" {
		out.CandidateETag = etagOf(check.SourceConfigHash)
		out.Changed = out.CandidateETag != etag
		if doc, _, err := recipes.ParseSource(raw); err == nil {
			out.Sections = changedSections(curDoc, doc)
			if rs := restartReasons(s.cfg.Runtime().Current().Document(), doc); len(rs) > 0 {
				writeError(w, newErr(http.StatusConflict, CodeRestartRequired, "the candidate changes settings that need a restart; nothing was written").withReasons(rs))
				return
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// changedSections names the top-level sections (and recipes by name) that differ.
func changedSections(a, b *recipes.Document) []string {
	out := []string{}
	if canonicalOf(a.Listeners) != canonicalOf(b.Listeners) {
		out = append(out, "listeners")
	}
	if canonicalOf(a.Providers) != canonicalOf(b.Providers) {
		out = append(out, "providers")
	}
	if canonicalOf(a.Global) != canonicalOf(b.Global) {
		out = append(out, "global")
	}
	names := map[string]bool{}
	for _, r := range a.Recipes {
		names[r.Name] = true
	}
	for _, r := range b.Recipes {
		names[r.Name] = true
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		ra, oka := a.Recipe(n)
		rb, okb := b.Recipe(n)
		if oka != okb || (oka && canonicalOf(ra) != canonicalOf(rb)) {
			out = append(out, "recipes/"+n)
		}
	}
	return out
}

func ifMatch(r *http.Request) (string, bool) {
	v, ok := r.Header["If-Match"]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// mutate runs a mutation and writes its answer.
func (s *Server) mutate(w http.ResponseWriter, r *http.Request, m *mutation) {
	m.ifMatch, m.hasIfMatch = ifMatch(r)
	if m.source == "" {
		m.source = "api"
	}
	m.who = s.whoOf(r)
	res, err := s.cfg.apply(r.Context(), m)
	if err != nil {
		if ae, ok := err.(*apiError); ok && ae.body.Error.CurrentETag != "" {
			w.Header().Set("ETag", ae.body.Error.CurrentETag)
		}
		writeError(w, err)
		return
	}
	s.setConfigHeaders(w, res.ETag)
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) putConfig(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	s.mutate(w, r, &mutation{build: func(cur []byte, _ *recipes.Document) ([]byte, error) {
		return restoreSecrets(raw, cur)
	}})
}

// restoreSecrets replaces redaction markers in a candidate with the current
// values. YAML candidates are converted to canonical JSON first.
func restoreSecrets(raw, cur []byte) ([]byte, error) {
	canon, err := recipes.CanonicalSource(raw)
	if err != nil {
		return nil, newErr(http.StatusBadRequest, CodeInvalidConfig, "the candidate configuration is not readable; see reasons").withReasons(reasonsOf("parse", err))
	}
	next, err := decodeGeneric(canon)
	if err != nil {
		return nil, err
	}
	curV, err := decodeGeneric(cur)
	if err != nil {
		return nil, err
	}
	restoreRedacted(next, curV)
	return json.Marshal(next)
}

func (s *Server) patchConfig(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	patch, err := decodeGeneric(raw)
	if err != nil {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "the body must be a JSON merge patch (RFC 7386): %v", err))
		return
	}
	if _, ok := patch.(map[string]any); !ok {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "a merge patch of the configuration must be a JSON object"))
		return
	}
	s.mutate(w, r, &mutation{build: func(cur []byte, _ *recipes.Document) ([]byte, error) {
		base, err := decodeGeneric(cur)
		if err != nil {
			return nil, err
		}
		// Decode the patch afresh: mergePatch edits its arguments.
		p, _ := decodeGeneric(raw)
		merged := mergePatch(base, p)
		curV, _ := decodeGeneric(cur)
		restoreRedacted(merged, curV)
		return json.Marshal(merged)
	}})
}

func (s *Server) versions(w http.ResponseWriter, r *http.Request) {
	n := s.cfg.opts.HistoryLimit
	if q := r.URL.Query().Get("limit"); q != "" {
		v, err := strconv.Atoi(q)
		if err != nil || v < 1 {
			writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "limit must be a positive integer (got %q)", q))
			return
		}
		n = v
	}
	writeJSON(w, http.StatusOK, VersionsResponse{Versions: s.cfg.Versions(n)})
}

func (s *Server) rollback(w http.ResponseWriter, r *http.Request) {
	var req RollbackRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if (req.Version == nil) == (req.ConfigVersion == nil) {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "name exactly one of version (number or timestamp) or config_version"))
		return
	}
	entry, doc, err := s.cfg.rollbackTarget(req.Version, req.ConfigVersion)
	if err != nil {
		writeError(w, err)
		return
	}
	v := entry.Version
	s.mutate(w, r, &mutation{source: "rollback", rollbackOf: &v, build: func([]byte, *recipes.Document) ([]byte, error) { return doc, nil }})
}

func (s *Server) hash(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.cfg.Hashes())
}

func (s *Server) listRecipes(w http.ResponseWriter, r *http.Request) {
	_, doc, _ := s.cfg.persisted()
	out := RecipeList{Recipes: []RecipeSummary{}, Entrypoints: map[string]string{}, DefaultRecipe: doc.DefaultRecipe()}
	for _, l := range doc.Listeners {
		out.Entrypoints[l.Name] = doc.Entrypoint(l)
	}
	for _, rc := range doc.Recipes {
		sum := RecipeSummary{Name: rc.Name, Description: rc.Description, Decisions: len(rc.Decisions), Default: rc.Name == out.DefaultRecipe, Listeners: []string{}}
		sg := rc.Signals
		sum.Signals = len(sg.Keywords) + len(sg.Domains) + len(sg.PII) + len(sg.Jailbreak) + len(sg.Context) + len(sg.Language) + len(sg.Embeddings) + len(sg.Complexity)
		for l, e := range out.Entrypoints {
			if e == rc.Name {
				sum.Listeners = append(sum.Listeners, l)
			}
		}
		sort.Strings(sum.Listeners)
		out.Recipes = append(out.Recipes, sum)
	}
	writeJSON(w, http.StatusOK, out)
}

// recipeIndex finds a recipe in a generic document.
func recipeIndex(doc map[string]any, name string) ([]any, int) {
	list, _ := doc["recipes"].([]any)
	for i, rc := range list {
		if m, ok := rc.(map[string]any); ok && m["name"] == name {
			return list, i
		}
	}
	return list, -1
}

func (s *Server) getRecipe(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	src, _, etag := s.cfg.persisted()
	v, _ := decodeGeneric(src)
	list, i := recipeIndex(v.(map[string]any), name)
	if i < 0 {
		writeError(w, newErr(http.StatusNotFound, CodeUnknownRecipe, "no recipe %q; GET /api/v1/config/recipes lists them", name))
		return
	}
	s.setConfigHeaders(w, etag)
	writeJSON(w, http.StatusOK, list[i])
}

// withRecipe returns a document build that puts (rec != nil) or deletes a recipe.
func withRecipe(name string, rec json.RawMessage, del bool) func(cur []byte, curDoc *recipes.Document) ([]byte, error) {
	return func(cur []byte, curDoc *recipes.Document) ([]byte, error) {
		v, err := decodeGeneric(cur)
		if err != nil {
			return nil, err
		}
		doc := v.(map[string]any)
		list, i := recipeIndex(doc, name)
		if del {
			if i < 0 {
				return nil, newErr(http.StatusNotFound, CodeUnknownRecipe, "no recipe %q to delete", name)
			}
			for li, l := range curDoc.Listeners {
				if curDoc.Entrypoint(l) == name {
					e := newErr(http.StatusConflict, CodeRecipeInUse, "recipe %q is the entrypoint of listener %q; point the listener at another recipe first", name, l.Name)
					return nil, e.withReasons([]Reason{{Stage: "validate", Code: "recipe_in_use", Path: "/listeners/" + strconv.Itoa(li) + "/entrypoint", Message: e.Error()}})
				}
			}
			doc["recipes"] = append(list[:i:i], list[i+1:]...)
			return json.Marshal(doc)
		}
		canon, err := recipes.CanonicalSource(rec)
		if err != nil {
			return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "the recipe is not readable JSON or YAML: %v", err)
		}
		rv, err := decodeGeneric(canon)
		if err != nil {
			return nil, err
		}
		rm, ok := rv.(map[string]any)
		if !ok {
			return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "a recipe must be an object")
		}
		if n, has := rm["name"]; has && n != name {
			return nil, newErr(http.StatusBadRequest, CodeInvalidInput, "the recipe's name %v differs from the path's %q", n, name)
		}
		rm["name"] = name
		if i < 0 {
			doc["recipes"] = append(list, rm)
		} else {
			list[i] = rm
		}
		return json.Marshal(doc)
	}
}

func (s *Server) putRecipe(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	s.mutate(w, r, &mutation{build: withRecipe(mux.Vars(r)["name"], raw, false)})
}

func (s *Server) deleteRecipe(w http.ResponseWriter, r *http.Request) {
	s.mutate(w, r, &mutation{build: withRecipe(mux.Vars(r)["name"], nil, true)})
}

func (s *Server) validateRecipe(w http.ResponseWriter, r *http.Request) {
	var req RecipeValidateRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Name == "" || (req.Recipe == nil) == !req.Delete {
		writeError(w, newErr(http.StatusBadRequest, CodeInvalidInput, "give name and either recipe (to put) or delete: true"))
		return
	}
	src, doc, _ := s.cfg.persisted()
	raw, err := withRecipe(req.Name, req.Recipe, req.Delete)(src, doc)
	if err != nil {
		if ae, ok := err.(*apiError); ok && ae.body.Error.Reasons != nil {
			writeJSON(w, http.StatusOK, ValidateResponse{Reasons: ae.body.Error.Reasons})
			return
		}
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.checkCandidate(r, raw))
}
